"""Live feeds in, decisions out: iosight beside a running machine (issue #28).

What a facility collects while jobs run lands in the warehouse beside the finished
Darshan logs, each row stamped with when it became known (``known_at``, epoch seconds):

- Darshan's LDMS stream (the runtime's ``darshanConnector``: one JSON message per I/O
  operation) -> table ``live_io``, per job and 5-minute bin, until the job's log lands
  and its rows replace the live ones;
- the file system's server-side read/write rate, read from Prometheus with PromQL
  range queries -> table ``live_rates``;
- the scheduler's view (Slurm's ``squeue --json`` / ``sacct --json``): running and
  pending jobs -> table ``sched_jobs``.

Exports load on first use (:mod:`iosight._lazy`).
"""

from iosight._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_config": ("ForecastSettings", "LiveConfig", "LogsSettings", "ServeSettings"),
        "_exporter": ("Recording", "ReplayExporter"),
        "_feed": ("FeedReport",),
        "_ldms": ("LIVE_IO_COLUMNS", "LdmsFeed", "LdmsOptions", "parse_messages"),
        "_ldms_format": ("LdmsJob", "ldms_message", "synthetic_ldms_stream"),
        "_prometheus": ("PrometheusFeed", "PrometheusOptions"),
        "_refresh": ("Refresh",),
        "_service": ("STATUS", "Feed", "LiveService", "make_feed"),
        "_slurm": (
            "SlurmFeed",
            "SlurmFeedOptions",
            "SchedulerView",
            "scheduler_view",
            "sched_snapshot",
            "slurm_running_jobs",
            "begin_option",
        ),
        "_timeline": ("live_rows", "live_timeline", "stream_timeline"),
    },
)
