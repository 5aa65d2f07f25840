"""Replay: a recorded warehouse's sources re-emitted as they would have landed.

``iosight replay WAREHOUSE --to DIR`` writes each job's source into a Darshan-style
log directory (``YEAR/MONTH/DAY/`` of the time it became known, UTC, unpadded as
Darshan's own), in known-at order, sleeping (known-at gap) / ``speed`` between
landings, so follow mode can be driven end to end by a recorded year:

* a Darshan log (or parser dump) is copied from the job's ``source_path``, written as
  ``<name>.darshan_partial`` (a hidden temporary for other names) and renamed, as
  Darshan does when a job ends; a warehouse keeps no copy of its logs, so a log no
  longer at its path cannot be replayed, which is said before anything is written;
* job-total rows (published tables such as Summit's have no logs) known within the
  same ``group`` seconds become one small Parquet job-total table, landing when the
  last of them became known and carrying each job's ``known_at``, so the replayed
  warehouse knows each job when the recorded one did.
"""

from __future__ import annotations

import heapq
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from iosight._errors import IosightError, check_param
from iosight._progress import Progress, ensure_progress
from iosight.warehouse._known import KNOWN_AT
from iosight.warehouse._store import Warehouse, is_warehouse_dir

DEFAULT_GROUP = 60.0  # seconds of recorded time per replayed job-total table
_JOB_TOTALS = "job-totals"
_NOT_FILES = (_JOB_TOTALS, "synthetic")  # formats with no file of their own to copy
_BATCH_ROWS = 16_384


@dataclass
class ReplayReport:
    """What a replay wrote."""

    landings: int = 0  # times at which files were written
    logs: int = 0  # Darshan logs (or parser dumps) copied
    tables: int = 0  # job-total tables written
    jobs: int = 0  # jobs replayed
    untimed: int = 0  # jobs with neither known_at nor end_time: not replayed
    seconds: float = 0.0  # wall-clock seconds the replay took

    def summary(self) -> str:
        """One line: jobs replayed, landings, logs and tables, time."""
        untimed = f"; {self.untimed} jobs with no time skipped" if self.untimed else ""
        return (
            f"{self.jobs} jobs replayed in {self.landings} landings ({self.logs} logs, "
            f"{self.tables} job-total tables), {self.seconds:.1f} s{untimed}"
        )


@dataclass
class _Landing:
    """What lands at recorded time ``at``: a log to copy (``source``) or job-total rows."""

    at: float
    source: str | None = None
    rows: pa.Table | None = None

    @property
    def jobs(self) -> int:
        return 1 if self.rows is None else self.rows.num_rows


def replay(
    warehouse: Warehouse,
    to: str | os.PathLike,
    *,
    speed: float = 1.0,
    since: float | None = None,
    until: float | None = None,
    group: float = DEFAULT_GROUP,
    progress: Progress | None = None,
    on_landing: Callable[[float, list[Path]], None] | None = None,
) -> ReplayReport:
    """Write the sources of ``warehouse``'s jobs known in ``[since, until)`` into ``to``
    as they landed (module docstring).

    Parameters
    ----------
    speed : recorded seconds per wall-clock second (3600: an hour a second); ``inf`` or
        0 writes everything at once, in order
    since, until : epoch seconds (UTC) bounding the jobs' known-at times
    group : job-total rows known within this many recorded seconds land as one table
    progress : advanced by the jobs of each landing (default: none shown)
    on_landing : called after each landing with the wall-clock time it began (it
        waited for its time first) and the files it wrote
    """
    check_replay_args(warehouse, to, speed=speed, since=since, until=until, group=group)
    warehouse.require("jobs")
    window = _window(since, until)
    report = ReplayReport(untimed=_count(warehouse, f"{KNOWN_AT} is null"))
    _check_logs_exist(warehouse, window)
    progress = ensure_progress(progress)
    progress.start(_count(warehouse, window), "replay")
    start, t0, first = time.monotonic(), 0.0, None
    root = Path(to)
    for landing in heapq.merge(
        _log_landings(warehouse, window),
        _table_landings(warehouse, window, group),
        key=lambda landing: landing.at,
    ):
        if first is None:  # the first landing is time zero
            t0, first = time.monotonic(), landing.at
        _wait_until(t0 + _wall_offset(landing.at - first, speed))
        began = time.time()
        written = _land(landing, root, report)
        progress.advance(landing.jobs)
        if on_landing is not None:
            on_landing(began, written)
    progress.finish()
    report.seconds = time.monotonic() - start
    return report


def check_replay_args(
    warehouse: Warehouse,
    to: str | os.PathLike,
    *,
    speed: float = 1.0,
    since: float | None = None,
    until: float | None = None,
    group: float = DEFAULT_GROUP,
) -> None:
    """Raise the error :func:`replay` would for these arguments, before it writes."""
    check_param("speed", speed, speed >= 0, "a number >= 0 (0 or inf: as fast as it can)")
    check_param("group", group, group > 0 and math.isfinite(group), "a number of seconds > 0")
    for name, t in (("since", since), ("until", until)):
        ok = t is None or math.isfinite(t)
        check_param(name, t, ok, "a finite time in epoch seconds")
    target = Path(to)
    if target.exists() and not target.is_dir():
        raise IosightError(f"{target} is not a directory to replay into")
    if is_warehouse_dir(target):
        raise IosightError(f"{target} is an iosight warehouse, not a log directory")
    inside = target.resolve().is_relative_to(warehouse.path.resolve())
    if inside:
        raise IosightError(f"{target} is inside the warehouse {warehouse.path}")


def _window(since: float | None, until: float | None) -> str:
    """SQL condition on the jobs' known-at time."""
    cond = [f"{KNOWN_AT} is not null"]
    if since is not None:
        cond.append(f"{KNOWN_AT} >= {float(since)!r}")
    if until is not None:
        cond.append(f"{KNOWN_AT} < {float(until)!r}")
    return " and ".join(cond)


def _count(warehouse: Warehouse, where: str) -> int:
    return int(warehouse.sql(f"select count(*) n from jobs where {where}")["n"][0])


def _formats(kind: str) -> str:
    """SQL condition: jobs of a log to copy (``"logs"``) or job-total rows (``"rows"``)."""
    if kind == "rows":
        return f"source_format = '{_JOB_TOTALS}'"
    return f"source_format not in ({', '.join(repr(f) for f in _NOT_FILES)})"


def _check_logs_exist(warehouse: Warehouse, window: str) -> None:
    """Raise, before anything is written, when a job to replay has no file to copy: a
    log no longer at its ``source_path``, or a synthetic job (it never had one)."""
    made_up = _count(warehouse, f"{window} and source_format = 'synthetic'")
    if made_up:
        raise IosightError(
            f"{made_up} jobs to replay are synthetic: they have no log to write "
            "(replay a warehouse of real logs or job-total tables)"
        )
    query = f"select distinct source_path from jobs where {window} and {_formats('logs')}"
    missing, total = [], 0
    for batch in _stream(warehouse, query):
        for path in batch.column(0).to_pylist():
            total += 1
            if not os.path.isfile(path):
                missing.append(path)
    if missing:
        raise IosightError(
            f"{len(missing)} of {total} logs to replay are no longer at their source_path "
            f"(first: {missing[0]}); a warehouse keeps no copy of its logs"
        )


def _stream(warehouse: Warehouse, query: str) -> Iterator[pa.RecordBatch]:
    """``query``'s rows in record batches, on a cursor of its own (the log and table
    landings are read side by side)."""
    yield from warehouse.connect().cursor().sql(query).to_arrow_reader(_BATCH_ROWS)


def _log_landings(warehouse: Warehouse, window: str) -> Iterator[_Landing]:
    """One landing per log, in known-at order (streamed)."""
    query = (
        f"select {KNOWN_AT} k, source_path from jobs where {window} and {_formats('logs')} "
        "order by k, job_key"
    )
    for batch in _stream(warehouse, query):
        for at, path in zip(*(batch.column(i).to_pylist() for i in (0, 1)), strict=True):
            yield _Landing(at, source=path)


def _table_landings(warehouse: Warehouse, window: str, group: float) -> Iterator[_Landing]:
    """The job-total rows in known-at order, one landing per ``group`` seconds that has
    any, at the time of its last row (no row lands before it was known)."""
    if not warehouse.has_table("job_totals"):
        return
    query = (
        # nprocs not known is -1 in jobs, an empty cell in a table (-1 would be "not a count")
        "select j.jobid, j.uid, j.exe, nullif(j.nprocs, -1) as nprocs, j.start_time, "
        "j.end_time, j.run_time as runtime, j.log_version as darshan_log_version, "
        f"{KNOWN_AT} as known_at, t.* exclude (job_key) from jobs j "
        f"left join job_totals t using (job_key) where {window} and {_formats('rows')} "
        "order by known_at, j.job_key"
    )
    held: pa.Table | None = None
    for batch in _stream(warehouse, query):
        rows = pa.Table.from_batches([batch])
        rows = rows if held is None else pa.concat_tables([held, rows])
        bins = np.floor(rows["known_at"].to_numpy() / group)
        cuts = np.flatnonzero(np.diff(bins)) + 1
        starts = [0, *cuts.tolist()]
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            yield _rows_landing(rows.slice(a, b - a))
        held = rows.slice(starts[-1])
    if held is not None and held.num_rows:
        yield _rows_landing(held)


def _rows_landing(rows: pa.Table) -> _Landing:
    """``rows`` as one landing, without the counter columns none of them has (a group
    of one application's jobs holds few of the hundreds of Darshan counters)."""
    keep = [
        c for c in rows.column_names if not c.startswith("total_") or rows[c].null_count < len(rows)
    ]
    return _Landing(float(rows["known_at"][-1].as_py()), rows=rows.select(keep))


def _wall_offset(recorded: float, speed: float) -> float:
    """Wall-clock seconds after the first landing at which one ``recorded`` seconds
    later lands."""
    return 0.0 if speed == 0 or math.isinf(speed) else recorded / speed


def _wait_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _land(landing: _Landing, root: Path, report: ReplayReport) -> list[Path]:
    """Write one landing under its day's folder; return the files written."""
    day = time.gmtime(landing.at)
    folder = root / str(day.tm_year) / str(day.tm_mon) / str(day.tm_mday)
    folder.mkdir(parents=True, exist_ok=True)
    report.landings += 1
    report.jobs += landing.jobs
    if landing.rows is None:
        report.logs += 1
        return [_copy_log(Path(landing.source), folder)]
    report.tables += 1
    return [_write_rows(landing.rows, folder, report.tables)]


def _copy_log(source: Path, folder: Path) -> Path:
    """Copy ``source`` into ``folder`` under a temporary name, then rename it into place
    (a name already there, another job's log of the same name, gets a number)."""
    dest, n = folder / source.name, 1
    while dest.exists():
        n += 1
        dest = folder / f"{n}-{source.name}"
    return _renamed_into_place(dest, lambda tmp: shutil.copyfile(source, tmp))


def _write_rows(rows: pa.Table, folder: Path, n: int) -> Path:
    """Write job-total ``rows`` as a Parquet table named by its landing time and number."""
    import pyarrow.parquet as pq

    at = time.strftime("%Y%m%dT%H%M%S", time.gmtime(rows["known_at"][-1].as_py()))
    dest = folder / f"job-totals-{at}-{n:06d}.parquet"
    return _renamed_into_place(dest, lambda tmp: pq.write_table(rows, tmp, compression="zstd"))


def _renamed_into_place(dest: Path, write: Callable[[Path], object]) -> Path:
    """``write`` a temporary beside ``dest`` and rename it to ``dest``: Darshan's own
    ``<name>.darshan_partial`` for logs, a hidden name otherwise (neither is read)."""
    partial = (
        dest.with_name(dest.name + "_partial")
        if dest.name.endswith(".darshan")
        else dest.with_name(f".{dest.name}.partial")
    )
    try:
        write(partial)
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    return dest
