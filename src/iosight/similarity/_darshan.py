"""Per-job series from the Darshan tables of the warehouse.

The paper's nine metrics come from node-level file-system monitoring (§3);
Darshan logs give only some of them, and only this way:

=============  ====================================================================
metric         Darshan source (iosight's reading)
=============  ====================================================================
read_bytes     HEATMAP read bytes per bin (POSIX + STDIO); DXT lengths when no HEATMAP
write_bytes    HEATMAP write bytes per bin (POSIX + STDIO); DXT lengths when no HEATMAP
read_calls     DXT_POSIX read segments, at their start time
write_calls    DXT_POSIX write segments, at their start time
md_read        POSIX_STATS, spread over the record's open-to-close interval
md_other       POSIX_OPENS, spread over the record's open interval
md_mod         POSIX_RENAME_SOURCES, spread over the record's open-to-close interval
md_file_create (none: Darshan does not record O_CREAT)
md_file_delete (none: Darshan does not record unlink)
=============  ====================================================================

A metric a log cannot give stays empty (no rows), never invented; a job whose run time
is unknown (a Darshan log whose job record is garbage keeps its records, not its times)
has no time axis to cut into segments: it gets no series (:func:`untimed_jobs`). Amounts are
spread over segments in proportion to the overlap of their time interval, then
divided by the segment's duration (a rate, as monitoring reports). A "node" is
the DXT host name of a rank when the log has DXT, else the rank; records shared
by all ranks (rank -1) form one node ``shared``. Darshan HEATMAPs are not per
file, so there is one file system, ``all``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iosight._errors import IosightError, MissingTableError

if TYPE_CHECKING:
    import pandas as pd

    from iosight.similarity._codings import Categories
    from iosight.warehouse import Warehouse


_TIMED = "select job_key from jobs where run_time is not null"  # jobs a series can have


def _events_sql(wh: Warehouse) -> tuple[str, list[str]]:
    """One ``select`` of (job_key, rank, metric, t0, t1, amount) over the tables present."""
    parts, used = [], []
    if wh.has_table("heatmap"):
        used.append("heatmap")
        for m in ("read", "write"):
            parts.append(
                f"select job_key, rank, '{m}_bytes' metric, bin_start t0, "
                f"bin_start + bin_width t1, cast({m}_bytes as double) amount from heatmap "
                f"where module in ('POSIX', 'STDIO') and {m}_bytes > 0"
            )
    if wh.has_table("dxt_posix"):
        used.append("dxt_posix")
        heat = "and job_key not in (select job_key from heatmap)" if "heatmap" in used else ""
        parts.append(
            "select job_key, rank, op || '_calls' metric, start t0, start t1, 1.0 amount "
            "from dxt_posix where op in ('read', 'write')"
        )
        parts.append(
            "select job_key, rank, op || '_bytes' metric, start t0, \"end\" t1, "
            f"cast(length as double) amount from dxt_posix where op in ('read', 'write') "
            f"and length > 0 {heat}"
        )
    if wh.has_table("posix"):
        cols = set(wh.column_names("posix"))
        spec = (
            ("md_read", "POSIX_STATS", "POSIX_F_CLOSE_END_TIMESTAMP"),
            ("md_other", "POSIX_OPENS", "POSIX_F_OPEN_END_TIMESTAMP"),
            ("md_mod", "POSIX_RENAME_SOURCES", "POSIX_F_CLOSE_END_TIMESTAMP"),
        )
        for metric, counter, end in spec:
            if {counter, end, "POSIX_F_OPEN_START_TIMESTAMP"} <= cols:
                used.append(f"posix.{counter}")
                parts.append(
                    f"select job_key, rank, '{metric}' metric, "
                    f"POSIX_F_OPEN_START_TIMESTAMP t0, {end} t1, "
                    f"cast({counter} as double) amount from posix where {counter} > 0"
                )
    if not parts:
        raise MissingTableError(
            "heatmap", "ingest Darshan logs with HEATMAP, DXT or POSIX data: 'iosight ingest'"
        )
    return " union all ".join(parts), used


def darshan_series(wh: Warehouse, segment_s: float = 600.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Segmented series (``job, node, fs, metric, segment, value``) and jobs
    (``job, jobid, n_segments, n_nodes, n_fs, metrics``) from the Darshan tables.

    Times are seconds since job start, clipped to the job's run time; a job has
    ``max(1, ceil(run_time / segment_s))`` segments and its last, partial segment
    is divided by its own duration (the mean of what it has, docs/methods.md §3).

    ``wh``: the warehouse holding the Darshan tables; ``segment_s``: the segment length in
    seconds.
    """
    wh.require("jobs")
    events, _ = _events_sql(wh)
    s = float(segment_s)
    hosts = (
        "select job_key, rank, any_value(hostname) host from dxt_posix group by all"
        if wh.has_table("dxt_posix")
        else "select null job_key, null rank, null host where false"
    )
    query = f"""
    with ev as ({events}),
    j as (select job_key, jobid, run_time,
                 greatest(1, cast(ceil(run_time / {s}) as bigint)) nseg
          from jobs where job_key in ({_TIMED})),
    h as ({hosts}),
    e as (select ev.job_key, ev.metric, ev.amount, j.nseg, j.run_time,
                 case when ev.rank < 0 then 'shared'
                      else coalesce(h.host, 'rank ' || cast(ev.rank as varchar)) end node,
                 least(greatest(coalesce(ev.t0, 0), 0), j.run_time) a,
                 least(greatest(coalesce(ev.t1, 0), coalesce(ev.t0, 0), 0), j.run_time) b
          from ev join j using (job_key)
          left join h on h.job_key = ev.job_key and h.rank = ev.rank),
    x as (select *, unnest(range(least(cast(floor(a / {s}) as bigint), nseg - 1),
                                 least(cast(floor(b / {s}) as bigint), nseg - 1) + 1)) segment
          from e)
    select job_key as job, node, 'all' as fs, metric, segment,
           sum(amount * case when b > a
                then greatest(least(b, (segment + 1) * {s}) - greatest(a, segment * {s}), 0)
                     / (b - a)
                else 1 end)
           / any_value(greatest(least({s}, run_time - segment * {s}), 1e-3)) as value
    from x group by job_key, node, metric, segment
    having value > 0
    order by job, node, metric, segment
    """
    series = wh.sql(query)
    jobs = wh.sql(
        f"""with j as (select job_key, jobid,
                   greatest(1, cast(ceil(run_time / {s}) as bigint)) n_segments
                   from jobs where job_key in ({_TIMED}))
        select j.job_key as job, j.jobid, j.n_segments from j
        where j.job_key in (select distinct job_key from ({events}))
        order by j.jobid, j.job_key"""
    )
    if jobs.empty:
        raise IosightError("no ingested job has HEATMAP, DXT or POSIX I/O to build series from")
    nodes = series.groupby("job")["node"].nunique()
    jobs["n_nodes"] = jobs["job"].map(nodes).fillna(1).astype("int64")
    jobs["n_fs"] = 1
    metrics = series.groupby("job")["metric"].unique().map(lambda v: ",".join(sorted(v)))
    jobs["metrics"] = jobs["job"].map(metrics).fillna("")
    return series, jobs


def series_from_darshan(
    wh: Warehouse,
    *,
    source: str = "darshan",
    segment_s: float = 600.0,
    categories: Categories | None = None,
) -> dict:
    """Build ``sim_series`` from the Darshan tables, then codings and profiles.

    Returns ``{"jobs": n, "time_resolved": m, "untimed": u, "metrics": DataFrame}``: how
    many jobs have series, how many of them have time-resolved I/O (DXT or HEATMAP; the
    others have only counters spread over open-close intervals), how many jobs with I/O
    have none for want of a run time (:func:`untimed_jobs`), and how many jobs give each
    metric.

    ``wh``: the warehouse holding the Darshan tables; the series are written there; ``source``:
    the ``sim_jobs.source`` of the jobs written; ``segment_s``: the segment length in seconds;
    ``categories``: the split points (default: as :func:`build_codings` chooses).
    """
    import pandas as pd

    from iosight.similarity._codings import METRICS
    from iosight.similarity._store import build_codings, store_series

    if source != "darshan":
        raise IosightError(f"the 'from' option must be darshan. Got {source!r} instead.")
    series, jobs = darshan_series(wh, segment_s)
    store_series(wh, series, jobs, source="darshan")
    build_codings(wh, categories=categories)
    have = jobs["metrics"].str.split(",")
    counts = pd.DataFrame(
        {
            "metric": list(METRICS),
            "jobs_with_data": [int(have.map(lambda v, m=m: m in v).sum()) for m in METRICS],
        }
    )
    return {
        "jobs": len(jobs),
        "time_resolved": time_resolved(wh),
        "untimed": untimed_jobs(wh),
        "metrics": counts,
    }


def time_resolved(wh: Warehouse) -> int:
    """Jobs with DXT segments or HEATMAP bins (with bytes: the warehouse stores no other):
    the ones whose series have a shape in time.

    ``wh``: the warehouse holding the Darshan tables.
    """
    parts = [f"select job_key from {t}" for t in ("heatmap", "dxt_posix") if wh.has_table(t)]
    if not parts:
        return 0
    keys = f"select job_key from ({' union '.join(parts)}) where job_key in ({_TIMED})"
    return int(wh.sql(f"select count(distinct job_key) n from ({keys})")["n"][0])


def untimed_jobs(wh: Warehouse) -> int:
    """Jobs with I/O events but no run time (a garbage Darshan job record): no series."""
    events, _ = _events_sql(wh)
    n = wh.sql(
        f"select count(distinct job_key) n from ({events}) "
        "where job_key in (select job_key from jobs where run_time is null)"
    )
    return int(n["n"][0])
