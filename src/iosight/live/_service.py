"""``iosight live``: follow mode, the live feeds and the server in one process.

One thread writes the warehouse (its lock is per process): each round it polls the log
directory, then each feed, then brings the derived tables and forecasts up to date, and
asks the server to compute its forecasts again (on a thread of the server's, from what
the round committed). The server answers from its own read-only connection on another
thread, so requests never wait for a round or a forecast; a refit trains on a third
thread from a read-only view and swaps the saved model atomically, so answers never
stop. One log line per event worth knowing (a batch, a feed's warnings, a refit); SIGINT
or SIGTERM stops after the round in hand.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from iosight._errors import IosightError
from iosight.live._config import ForecastSettings, LiveConfig
from iosight.live._feed import FeedReport
from iosight.live._ldms import ldms_feed
from iosight.live._prometheus import prometheus_feed
from iosight.live._refresh import Refresh
from iosight.live._slurm import slurm_feed

if TYPE_CHECKING:
    from iosight.serve import BackgroundServer, Decisions
    from iosight.warehouse import Follower, Warehouse

log = logging.getLogger("iosight.live")


class Feed(Protocol):
    """A live source: :meth:`poll` takes what has arrived, writes it to the warehouse in
    one commit with its resume point, and reports; it never raises for the source's
    faults (they are counted in the report)."""

    def poll(self, warehouse: Warehouse, now: float | None = None) -> FeedReport:
        """One bounded step at ``now`` (epoch s; default the clock) into ``warehouse``."""


#: feed kind (a key of the configuration's ``feeds``) -> maker from its settings mapping
FEEDS: dict[str, Callable[..., Feed]] = {
    "ldms": ldms_feed,
    "prometheus": prometheus_feed,
    "slurm": slurm_feed,
}


def make_feed(kind: str, settings: Mapping, base: Path = Path(".")) -> Feed:
    """The feed ``kind`` with ``settings`` (its configuration section; relative paths
    from ``base``, the configuration file's folder)."""
    maker = FEEDS.get(kind)
    if maker is None:
        known = ", ".join(sorted(FEEDS)) or "none"
        raise IosightError(f"live config: unknown feed {kind!r} (known: {known})")
    return maker(settings, base=base)


STATUS = "live"  # the warehouse state iosight live publishes each round


def _count(counts: dict[str, int], kind: str, n: int) -> None:
    counts[kind] = counts.get(kind, 0) + n


class _Status:
    """What the service publishes each round (:meth:`Warehouse.write_state`), for
    ``/metrics``: per source the rows taken, warnings by kind, the lag of the newest
    data and when it was last polled; for the log directory, the files waiting to
    settle (the backlog)."""

    def __init__(self, started_at: float) -> None:
        self.doc: dict = {"started_at": started_at, "updated_at": started_at, "sources": {}}

    def source(self, name: str) -> dict:
        return self.doc["sources"].setdefault(
            name, {"rows": 0, "warnings": {}, "lag_s": None, "polled_at": None}
        )

    def feed(self, kind: str, report: FeedReport, now: float) -> None:
        entry = self.source(kind)
        entry["rows"] += report.rows
        for what, n in report.warnings.items():
            _count(entry["warnings"], what, n)
        entry["lag_s"], entry["polled_at"] = report.lag, now

    def logs(self, batches: list, backlog: int, now: float) -> None:
        entry = self.source("logs")
        for batch in batches:
            entry["rows"] += batch.report.jobs
            if batch.report.failed:
                _count(entry["warnings"], "failed", batch.report.failed)
            if batch.lags:
                entry["lag_s"] = max(batch.lags)
        entry["polled_at"], entry["backlog"] = now, backlog


class _Refit:
    """Trains the forecasters again on a thread of its own, every ``every`` seconds."""

    def __init__(self, path, settings: ForecastSettings) -> None:
        self.path, self.models, self.every = path, settings.models, settings.refit_every
        self.where = {"workers": settings.workers, "scheduler": settings.scheduler}
        self.due = time.monotonic() + self.every if self.every else None
        self.thread: threading.Thread | None = None
        self.outcome: list[str] = []

    def start_if_due(self) -> list[str]:
        if self.due is None or self.thread is not None or time.monotonic() < self.due:
            return []
        self.thread = threading.Thread(target=self._run, name="iosight-refit", daemon=True)
        self.thread.start()
        return [f"refit of {', '.join(self.models)} started"]

    def _run(self) -> None:
        from iosight.bursts import refit_forecaster
        from iosight.warehouse import Warehouse

        wh = Warehouse(self.path)
        for name in self.models:
            began = time.monotonic()
            try:
                refit_forecaster(wh, name, **self.where)
                self.outcome.append(f"refit {name}: done in {time.monotonic() - began:.1f} s")
            except IosightError as e:
                self.outcome.append(f"refit {name}: failed: {e}")

    def finished(self) -> bool:
        """True once, when a refit's thread has ended (its lines in :attr:`outcome`)."""
        if self.thread is None or self.thread.is_alive():
            return False
        self.thread = None
        self.due = time.monotonic() + self.every
        return True


class LiveService:
    """The sources of ``config`` followed into its warehouse, the server answering."""

    def __init__(self, config: LiveConfig) -> None:
        from iosight.warehouse import Warehouse

        self.config = config
        self.feeds = {kind: make_feed(kind, s, config.base) for kind, s in config.feeds.items()}
        self.warehouse = Warehouse(config.warehouse, create=True)
        self.follower = self._follower(self.warehouse)
        self.refresh = Refresh(self.warehouse, config.forecast.models)
        self.refit = _Refit(config.warehouse, config.forecast)
        self.server: BackgroundServer | None = None
        self.decisions: Decisions | None = None  # the server's forecasts, once it runs
        self.status = _Status(time.time())

    def _follower(self, wh: Warehouse) -> Follower | None:
        logs = self.config.logs
        if logs is None:
            return None
        from iosight.warehouse import Follower, check_follow_args

        check_follow_args(logs.directory, settle=logs.settle, workers=logs.workers,
                          reader=logs.reader)  # fmt: skip
        return Follower(logs.directory, wh, settle=logs.settle, workers=logs.workers,
                        reader=logs.reader, compact=logs.compact)  # fmt: skip

    def start_server(self) -> str | None:
        """Start the server of the ``serve`` section (if any); its address."""
        settings = self.config.serve
        if settings is None:
            return None
        from iosight.serve import BackgroundServer, create_app, served_hosts

        app = create_app(
            self.warehouse.path, hosts=served_hosts(settings.host, settings.allowed_hosts),
            memory_limit=settings.memory_limit, query_timeout=settings.query_timeout,
        )  # fmt: skip
        self.server = BackgroundServer(app, host=settings.host, port=settings.port)
        self.decisions = app.state.decisions
        self.decisions.refresh()  # the first forecast, computed while the rounds start
        return self.server.url

    def step(self, stop: threading.Event | None = None) -> list[str]:
        """One round: the logs that landed, each feed, the derived tables; its lines. Once
        ``stop`` is set, the logs stop between batches (the rest wait for the next round)."""
        lines, new_jobs = [], False
        if self.follower is not None:
            batches = self.follower.poll(stop)
            lines += [batch.line() for batch in batches]
            new_jobs = any(batch.report.ingested for batch in batches)
            self.status.logs(batches, len(self.follower.scanner.pending), time.time())
        for kind, feed in self.feeds.items():  # their warnings are logged as they happen
            self.status.feed(kind, feed.poll(self.warehouse), time.time())
        if self.feeds:  # each poll adds small files; follow mode compacts after its batches
            from iosight.warehouse import auto_compact

            done = auto_compact(self.warehouse)
            lines += [done.line()] if done is not None else []
        lines += self.refresh.after_batch() if new_jobs else []
        self.status.doc["updated_at"] = time.time()
        self.warehouse.write_state(STATUS, self.status.doc)
        if self.decisions is not None:  # the served forecasts follow the round's commits
            self.decisions.refresh()
        if self.refit.finished():
            lines += self.refit.outcome
            self.refit.outcome = []
            self.refresh = Refresh(self.warehouse, self.config.forecast.models)  # new models
        return lines + self.refit.start_if_due()

    def run(self, stop: threading.Event | None = None) -> None:
        """Rounds every ``interval`` seconds until ``stop`` is set (or, in the main thread,
        SIGINT or SIGTERM arrives), the server answering throughout."""
        from iosight._memory import fixed_malloc_thresholds, system_arrow_pool
        from iosight.warehouse import stopped_by_signals

        stop = stop or threading.Event()
        fixed_malloc_thresholds()  # flat over months, as follow
        url = self.start_server()
        if url:
            log.info("serving %s at %s", self.warehouse.path, url)
        for line in self.refresh.forecast():
            log.info(line)
        try:
            with stopped_by_signals(stop), system_arrow_pool():  # flat over months
                due = time.monotonic()
                while not stop.is_set():
                    for line in self.step(stop):
                        log.info(line)
                    due = max(due + self.config.interval, time.monotonic())
                    stop.wait(due - time.monotonic())
        finally:
            self.close()
        log.info("stopped")

    def close(self) -> None:
        """Stop the server (the warehouse needs nothing: every write was committed)."""
        if self.server is not None:
            self.server.stop()
            self.server, self.decisions = None, None
