"""Follow mode: keep ingesting a Darshan log directory as jobs end (``ingest --follow``).

Darshan writes each log as ``<name>.darshan_partial`` and renames it to ``.darshan``
when the job ends, under ``<logdir>/<year>/<month>/<day>/``. The directory is polled,
not watched: inotify sees nothing of what other clients of a network file system write,
and the log directory of a machine is on one. A file is read once it is *complete*: not
``*.darshan_partial`` (nor hidden, nor of a name ingest does not read) and of the same
size and modification time on ``settle`` consecutive polls (a copy still being written
grows). Complete files go to the ordinary ingest (:func:`ingest_files`) in small batches:
content-keyed, so a log that appears twice is stored once; committed atomically, so a
follow killed at any moment and started again neither loses nor duplicates anything.

Each job's ``known_at`` is the wall-clock time of the poll that found its log complete
(when iosight could first have known it; a job-total table's own ``known_at`` column
wins). The file's modification time is not used: a copy that keeps the original's time
(``cp -p``, ``rsync -t``) would claim knowledge long before it arrived.
"""

from __future__ import annotations

import _thread
import math
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iosight._errors import IosightError, check_param, is_integer
from iosight._memory import fixed_malloc_thresholds, release_free_memory, system_arrow_pool
from iosight.parallel import default_workers
from iosight.warehouse._ingest import (
    DEFAULT_BATCH_SIZE,
    IngestReport,
    _walk,
    check_ingest_args,
    ingest_files,
)
from iosight.warehouse._store import Warehouse

DEFAULT_INTERVAL = 10.0  # seconds between polls
DEFAULT_SETTLE = 2  # polls a file must look the same on before it is read
MAX_LAGS = 100_000  # lags a FollowReport keeps (for its p95)


@dataclass
class FollowBatch:
    """One ingest of the files a poll found complete.

    ``lags``: for each source ingested now, seconds from its last modification (it
    landed) to the commit that made its jobs visible.

    ``report``: the batch's ingest report; ``committed_at``: when its commit made the jobs
    visible (epoch s).
    """

    report: IngestReport
    committed_at: float
    lags: list[float]

    def line(self) -> str:
        """One log line: when, what came in, and how long after landing."""
        r = self.report
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.committed_at))
        lag = (
            f"; lag p50 {np.median(self.lags):.1f} s, max {max(self.lags):.1f} s"
            if self.lags
            else ""
        )
        compacted = f"; {r.compaction.line()}" if r.compaction else ""
        return (
            f"{when} UTC: {r.sources} sources: {r.ingested} ingested ({r.jobs} jobs), "
            f"{r.skipped} already in the warehouse, {r.failed} failed{lag}{compacted}"
        )


@dataclass
class FollowReport:
    """What a follow did until it stopped.

    ``polls``: polls made; ``batches``: batches committed; ``sources``: sources found complete;
    ``ingested``: sources read and stored; ``jobs``: jobs stored; ``skipped``: sources already
    in the warehouse; ``failed``: sources that failed (rows of ``ingest_errors``).
    """

    polls: int = 0
    batches: int = 0
    sources: int = 0
    ingested: int = 0
    jobs: int = 0
    skipped: int = 0
    failed: int = 0
    #: the last MAX_LAGS lags (a follow may run for years)
    lags: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_LAGS))

    def add(self, batch: FollowBatch) -> None:
        """Count one committed batch.

        ``batch``: the batch committed.
        """
        r = batch.report
        self.batches += 1
        self.sources += r.sources
        self.ingested += r.ingested
        self.jobs += r.jobs
        self.skipped += r.skipped
        self.failed += r.failed
        self.lags += batch.lags

    def summary(self) -> str:
        """One line: polls, sources and jobs ingested, batches, failures, lag p95."""
        lag = f"; lag p95 {np.percentile(self.lags, 95):.1f} s" if self.lags else ""
        return (
            f"stopped after {self.polls} polls: {self.ingested} sources ingested "
            f"({self.jobs} jobs) in {self.batches} batches, {self.skipped} already in the "
            f"warehouse, {self.failed} failed{lag}"
        )


def check_follow_args(
    directory: str | os.PathLike,
    *,
    interval: float = DEFAULT_INTERVAL,
    settle: int = DEFAULT_SETTLE,
    **ingest_args,
) -> None:
    """Raise the error :func:`follow` would for these arguments, before it touches the
    warehouse (the command line checks them before it makes one).

    ``directory``: the directory followed; ``interval``: seconds between polls; ``settle``:
    polls on which a file must stay unchanged before it is read; ``ingest_args``:
    :func:`ingest`'s options, checked as it checks them.
    """
    check_ingest_args([directory], **ingest_args)
    if not Path(directory).is_dir():
        raise IosightError(f"{directory} is not a directory: follow mode watches a log directory")
    ok = interval > 0 and math.isfinite(interval)
    check_param("interval", interval, ok, "a number of seconds > 0")
    ok = is_integer(settle) and settle >= 1
    check_param("settle", settle, ok, "an integer >= 1 (polls a file must look the same on)")


def follow(
    directory: str | os.PathLike,
    warehouse: Warehouse,
    *,
    interval: float = DEFAULT_INTERVAL,
    settle: int = DEFAULT_SETTLE,
    workers: int = 0,
    timeout: float | None = 300.0,
    scheduler: str | None = None,
    batch_size: int | None = None,
    reader: str = "native",
    compact: bool = True,
    on_batch: Callable[[FollowBatch], None] | None = None,
    stop: threading.Event | None = None,
) -> FollowReport:
    """Ingest the logs under ``directory`` as they land, until ``stop`` is set (or, in the
    main thread, SIGINT or SIGTERM arrives: the batch in hand is finished and committed
    first; a second signal interrupts at once, losing nothing committed).

    Parameters
    ----------
    directory : a Darshan log directory (``YEAR/MONTH/DAY/`` or flat; walked recursively)
    interval : seconds between polls; a log is in the warehouse within two intervals of
        landing, plus the time to read it
    settle : polls on which a file must have the same size and modification time before
        it is read (1: at first sight, for writers that rename complete files into place)
    workers, timeout, scheduler, batch_size, reader : as for :func:`ingest`; one poll's
        files go in ingests of at most ``batch_size`` files per worker
    compact : after each batch, compact the tables that have many small files (as
        :func:`ingest` does)
    on_batch : called after each committed ingest (where derived tables are brought up
        to date: the command line evaluates the new jobs' insights there)

    ``warehouse``: the warehouse written.

    While it runs, Arrow allocates from the system allocator, which gives freed memory
    back, and glibc's thresholds stay fixed, so the process stays the same size over
    months of batches (:func:`iosight._memory.system_arrow_pool`,
    :func:`iosight._memory.fixed_malloc_thresholds`).
    """
    check_follow_args(
        directory,
        interval=interval,
        settle=settle,
        workers=workers,
        timeout=timeout,
        batch_size=batch_size,
        reader=reader,
    )
    stop = stop or threading.Event()
    fixed_malloc_thresholds()
    follower = Follower(directory, warehouse, settle=settle, workers=workers, timeout=timeout,
                        scheduler=scheduler, batch_size=batch_size, reader=reader,
                        compact=compact, on_batch=on_batch)  # fmt: skip
    with stopped_by_signals(stop), system_arrow_pool():
        due = time.monotonic()
        while not stop.is_set():
            follower.poll(stop)
            due = max(due + interval, time.monotonic())
            stop.wait(due - time.monotonic())
    return follower.report


class Follower:
    """One directory followed into ``warehouse``: each :meth:`poll` ingests the logs found
    complete since the last one. :func:`follow` polls it on a clock; ``iosight live``
    polls it in turn with the live feeds, from one thread (the warehouse has one writer).
    The arguments are :func:`follow`'s, checked there: ``directory``, ``warehouse``,
    ``settle``, ``workers``, ``timeout``, ``scheduler``, ``batch_size``, ``reader``,
    ``compact`` and ``on_batch``."""

    def __init__(
        self,
        directory: str | os.PathLike,
        warehouse: Warehouse,
        *,
        settle: int = DEFAULT_SETTLE,
        workers: int = 0,
        timeout: float | None = 300.0,
        scheduler: str | None = None,
        batch_size: int | None = None,
        reader: str = "native",
        compact: bool = True,
        on_batch: Callable[[FollowBatch], None] | None = None,
    ) -> None:
        self.warehouse, self.on_batch = warehouse, on_batch
        self.scanner = _Scanner(Path(directory), settle)
        self.per_ingest = (batch_size or DEFAULT_BATCH_SIZE) * (workers or default_workers())
        self.options = {"workers": workers, "timeout": timeout, "scheduler": scheduler}
        self.options |= {"batch_size": batch_size, "reader": reader, "compact": compact}
        self.report = FollowReport()

    def poll(self, stop: threading.Event | None = None) -> list[FollowBatch]:
        """Ingest the files complete now, in batches; stop between batches once ``stop``
        is set (the rest are found again by the next poll)."""
        polled_at, ready = self.scanner.poll()
        self.report.polls += 1
        batches = []
        for at in range(0, len(ready), self.per_ingest):
            chunk = ready[at : at + self.per_ingest]
            batch = _ingest_ready(chunk, polled_at, self.warehouse, self.options)
            self.scanner.taken(chunk)
            self.report.add(batch)
            batches.append(batch)
            if self.on_batch is not None:
                self.on_batch(batch)
            release_free_memory()  # what the batch and its insights freed
            if stop is not None and stop.is_set():
                break
        return batches


def _ingest_ready(
    ready: list[tuple[str, float]], polled_at: float, warehouse: Warehouse, options: dict
) -> FollowBatch:
    """Ingest the complete files ``ready`` ((path, modification time)), found at
    ``polled_at``; the lag of each source ingested is taken at its batch's commit."""
    landed = dict(ready)
    lags: list[float] = []

    def committed(paths: list[str]) -> None:
        now = time.time()
        lags.extend(now - landed[p] for p in paths)

    report = ingest_files(
        lambda: [Path(p) for p, _ in ready if os.path.lexists(p)],  # not moved away since
        warehouse,
        arrivals=dict.fromkeys(landed, polled_at),
        on_commit=committed,
        **options,
    )
    return FollowBatch(report, time.time(), lags)


class _Scanner:
    """Which files under ``root`` are complete: the names ingest reads (never Darshan's
    ``*.darshan_partial``) whose size and modification time stayed the same on
    ``settle`` consecutive polls. A file is handed out once (:meth:`taken`)."""

    def __init__(self, root: Path, settle: int) -> None:
        self.root, self.settle = root, settle
        self.pending: dict[str, tuple[tuple[int, int], int]] = {}  # path -> (look, polls)
        self.done: set[str] = set()

    def poll(self) -> tuple[float, list[tuple[str, float]]]:
        """The poll's time and the (path, modification time) of the files found complete."""
        now = time.time()
        ready, pending, seen = [], {}, set()
        for path in _walk(self.root):
            name = str(path)
            seen.add(name)
            if name in self.done:
                continue
            try:
                st = path.stat()
            except OSError:  # gone since the listing
                continue
            look = (st.st_size, st.st_mtime_ns)
            before = self.pending.get(name)
            polls = before[1] + 1 if before is not None and before[0] == look else 1
            if polls >= self.settle:
                ready.append((name, st.st_mtime))
            else:
                pending[name] = (look, polls)
        self.pending = pending
        self.done &= seen  # a file gone from the folder is forgotten: done never outgrows it
        return now, sorted(ready)  # as a batch ingest walks: of two copies, it keeps the first

    def taken(self, files: list[tuple[str, float]]) -> None:
        self.done.update(p for p, _ in files)


@contextmanager
def stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """In the main thread, SIGINT and SIGTERM set ``stop`` (the loop ends after the batch
    in hand); a second one raises KeyboardInterrupt. Elsewhere signals are left alone.

    The handler runs on the main thread between two of its bytecodes, possibly inside
    ``stop.wait`` while that holds the event's lock: setting the event there would wait
    for that lock for ever, so a thread of its own sets it (started by ``_thread``, which
    takes none of :mod:`threading`'s locks either)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = []

    def handler(signum: int, frame) -> None:
        signals.append(signum)
        if len(signals) > 1:
            raise KeyboardInterrupt
        _thread.start_new_thread(stop.set, ())

    saved = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)
