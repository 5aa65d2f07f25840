"""Ingest: sources on disk -> readers in worker processes -> atomic warehouse batches.

A source is identified by a hash of its content (``source_key``); a Darshan log's
``job_key`` is that hash, a job-total table's rows get ``<source_key>-<row>``. Each job's
``known_at`` is what its source says, else when the source arrived (follow mode names
it), else the job's end time.
Sources already in ``sources`` or ``ingest_errors`` are skipped unless ``force``,
so re-running an interrupted ingest finishes the rest and adds nothing twice; a
source whose error is a timeout (a busy machine, a timeout set too short) is read
again, and its error row is replaced by its rows, or by its new error.
Each batch of logs is committed atomically (:meth:`Warehouse.commit`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from iosight._errors import IosightError, check_param
from iosight._progress import Progress, ensure_progress
from iosight.darshan import RowBlock, path_text
from iosight.parallel import default_workers
from iosight.warehouse._compact import (
    ROW_GROUP_ROWS,
    TABLE_SORT_COLUMNS,
    CompactReport,
    auto_compact,
)
from iosight.warehouse._dxt_bins import TABLE as DXT_BINS_TABLE
from iosight.warehouse._dxt_bins import DxtBins
from iosight.warehouse._io_totals import IO_TOTALS, IO_TOTALS_COMPRESSION, io_totals
from iosight.warehouse._store import (
    SEQUENCE_TABLES,
    Warehouse,
    concat_tables,
    is_warehouse_dir,
    new_batch_id,
    stage_tables,
)

_PART_BYTES = 32 << 20  # a worker holds at most this many bytes of Arrow rows (see _Parts)
# sources per atomic commit: fewer, larger batches mean fewer Parquet files per table and
# less for compaction to merge (a 10,000-log ingest with its compaction: 1024 against 256,
# 756 -> 196 staged files, 22.1 -> 19.4 s wall, 35.6 -> 33.4 s of CPU, peak the same;
# a worker holds at most _PART_BYTES of rows whatever the batch)
DEFAULT_BATCH_SIZE = 1024
# imported once in the fork server, so each (re)started worker starts warm
_PRELOAD = (
    "iosight.darshan._sources",
    "iosight.darshan._darshan3",
    "iosight.darshan._pydarshan",
    "pandas",
    "pyarrow.parquet",
)


@dataclass
class IngestReport:
    """What an ingest did; ``failed`` sources are also rows of ``ingest_errors``.

    ``sources``: sources found; ``ingested``: sources read and stored; ``jobs``: jobs stored;
    ``skipped``: sources already in the warehouse (same content), not read again;
    ``bytes_read``: bytes of the sources read; ``seconds``: wall time of the ingest; ``errors``:
    ``(source, message)`` of each source that failed.
    """

    sources: int = 0
    ingested: int = 0
    jobs: int = 0
    skipped: int = 0
    failed: int = 0
    retried: int = 0  # sources that had timed out in an earlier ingest, read again
    bytes_read: int = 0
    seconds: float = 0.0
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: the automatic compaction that followed, if a table had many small files
    compaction: CompactReport | None = None

    @property
    def ok(self) -> bool:
        """True when no source failed."""
        return self.failed == 0

    def summary(self) -> str:
        """One line: sources ingested, skipped and failed; time and rates."""
        rate = self.ingested / self.seconds if self.seconds else 0.0
        retried = f", {self.retried} retried (timed out before)" if self.retried else ""
        return (
            f"{self.sources} sources: {self.ingested} ingested ({self.jobs} jobs), "
            f"{self.skipped} already in the warehouse, {self.failed} failed{retried}; "
            f"{self.seconds:.1f} s, {rate:.1f} sources/s, "
            f"{self.bytes_read / 2**20 / max(self.seconds, 1e-9):.1f} MB/s"
        )


def discover(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Files named, plus Darshan-looking files under directories named (recursive, sorted).

    The walk skips hidden files and directories and iosight warehouses (ingesting ``.``
    must not read the warehouse's own Parquet parts as job-total tables).
    """
    found: list[Path] = []
    for p in _check_sources(paths):
        found += sorted(_walk(p)) if p.is_dir() else [p]
    return list(dict.fromkeys(found))


def _check_sources(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """``paths`` as paths, after the checks :func:`discover` makes of each one named
    (it exists, it is no warehouse), without walking folders."""
    named = [Path(p) for p in paths]
    for p in named:
        if p.is_dir() and is_warehouse_dir(p):
            raise IosightError(f"{p} is an iosight warehouse, not a directory of sources")
        if not p.exists():
            raise IosightError(f"no such file or directory: {p}")
    return named


def _walk(root: Path) -> Iterator[Path]:
    from iosight.darshan import SOURCE_SUFFIXES

    for d, dirs, files in os.walk(root):
        here = Path(d)
        dirs[:] = [n for n in dirs if not n.startswith(".") and not is_warehouse_dir(here / n)]
        for name in files:
            if not name.startswith(".") and name.lower().endswith(SOURCE_SUFFIXES):
                yield here / name


def content_key(path: Path) -> str:
    """The content hash that identifies a source (BLAKE2b, 128 bits, hex)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, lambda: hashlib.blake2b(digest_size=16)).hexdigest()


def ingest(
    paths: Iterable[str | os.PathLike],
    warehouse: Warehouse,
    *,
    workers: int = 0,
    force: bool = False,
    timeout: float | None = 300.0,
    scheduler: str | None = None,
    batch_size: int | None = None,
    progress: Progress | None = None,
    reader: str = "native",
    compact: bool = True,
) -> IngestReport:
    """Read Darshan logs, parser dumps and job-total tables into ``warehouse``.

    Parameters
    ----------
    paths : files or directories (walked recursively for Darshan-looking names)
    workers : worker processes (0: one per core)
    force : replace sources already ingested instead of skipping them
    timeout : seconds one source may take before its worker is killed and it fails
        (``None``: no limit)
    scheduler : address of a Dask scheduler to run the readers on instead
    batch_size : at most this many sources per atomic commit (each worker stages its own
        batches; default :data:`DEFAULT_BATCH_SIZE`); local batches are at most a worker's
        share of what is left, so a small ingest keeps every worker busy and the workers
        finish together
    progress : told of each source read (default: silent)
    reader : how Darshan 3.x logs are read: ``"native"`` (the file format itself) or
        ``"libdarshan"`` (libdarshan-util through PyDarshan, today's oracle)
    compact : afterwards, compact the tables that have many small files
        (:func:`iosight.warehouse._compact.auto_compact`; its report is ``compaction``)

    Workers read, convert and write Parquet themselves; this process only hashes
    sources, hands out batches and commits them, so it never holds a log's rows.
    A batch whose worker crashed or hung at source *i* is committed without it:
    source *i* becomes an ``ingest_errors`` row and the others are read again.
    """
    paths = list(paths)  # used twice: checked here, walked under the lock
    check_ingest_args(paths, workers=workers, timeout=timeout, batch_size=batch_size, reader=reader)
    return ingest_files(
        lambda: discover(paths),
        warehouse,
        workers=workers,
        force=force,
        timeout=timeout,
        scheduler=scheduler,
        batch_size=batch_size,
        progress=progress,
        reader=reader,
        compact=compact,
    )


def ingest_files(
    files: Callable[[], list[Path]],
    warehouse: Warehouse,
    *,
    workers: int = 0,
    force: bool = False,
    timeout: float | None = 300.0,
    scheduler: str | None = None,
    batch_size: int | None = None,
    progress: Progress | None = None,
    reader: str = "native",
    arrivals: Mapping[str, float] | None = None,
    on_commit: Callable[[list[str]], None] | None = None,
    compact: bool = True,
) -> IngestReport:
    """:func:`ingest` of the files that ``files()`` lists under the write lock, arguments
    checked already (follow mode). ``arrivals`` maps a file (as listed) to when it
    arrived: its jobs' ``known_at`` where the source does not say. ``on_commit`` is
    called with the paths of the sources each committed batch ingested."""
    progress = ensure_progress(progress)
    report = IngestReport()
    t0 = time.monotonic()
    with warehouse.writer_lock():
        files = files()
        report.sources = len(files)
        logs = _PerLog(progress, report)
        # the local pool starts its fork server now: its imports overlap the hashing
        with (
            _local_pool(workers, timeout, logs)
            if files and not scheduler
            else nullcontext() as pool
        ):
            known, timed_out = _known_sources(warehouse)
            items = _new_items(files, known - timed_out, force, report, warehouse, arrivals or {})
            report.retried = sum(key in timed_out for key, *_ in items)
            progress.start(len(items), "ingest")
            committer = _Committer(
                warehouse, force=force, known=known, timed_out=timed_out, report=report
            )
            committer.on_commit = on_commit
            size = batch_size or DEFAULT_BATCH_SIZE
            if scheduler:
                batches = [items[i : i + size] for i in range(0, len(items), size)]
                _run_dask(batches, warehouse, scheduler, timeout, committer, logs, reader)
            elif items:  # (no files: no pool)
                batches = _shrinking_batches(items, size, workers or default_workers())
                _run_local(pool, batches, warehouse, committer, logs, reader)
    progress.finish()
    report.seconds = time.monotonic() - t0
    if compact and report.ingested:
        # in this process, after the commits: one writer at a time anyway, and a
        # compaction killed with the ingest resumes like its commits (no daemon to lose)
        report.compaction = auto_compact(warehouse)
    return report


def check_ingest_args(
    paths: Iterable[str | os.PathLike],
    *,
    workers: int = 0,
    timeout: float | None = 300.0,
    batch_size: int | None = None,
    reader: str = "native",
) -> None:
    """Raise the error :func:`ingest` would for these arguments before it reads anything
    (a named source missing or a warehouse, a count or timeout out of range, an unknown
    reader): the command line checks them before it makes a warehouse, so bad arguments
    leave nothing behind.

    ``paths``: the sources (files or folders); ``workers``: processes reading (0: one per core);
    ``timeout``: seconds one source may take; ``batch_size``: sources per committed batch;
    ``reader``: how Darshan logs are read (``native`` or ``libdarshan``).
    """
    from iosight.darshan import check_reader_way
    from iosight.parallel import check_pool_params

    check_reader_way(reader)
    check_pool_params(workers, timeout)
    check_param("batch_size", batch_size, batch_size is None or batch_size >= 1, "an integer >= 1")
    _check_sources(paths)


def _shrinking_batches(items: list, size: int, workers: int) -> list[list]:
    """``items`` in batches of at most ``size`` for ``workers`` local workers, each at most
    a worker's share of what is left (and at least ``size // 8``, unless that is more than
    an even share of all): a small ingest still keeps every worker busy, and the last
    batches shrink so the workers finish together (a batch is one worker's; while the
    last one runs, the others wait)."""
    out, at = [], 0
    floor = max(1, min(size // 8, -(-len(items) // workers)))
    while at < len(items):
        n = min(size, max(-(-(len(items) - at) // workers), floor))
        out.append(items[at : at + n])
        at += n
    return out


def _new_items(
    files: list[Path],
    known: set[str],
    force: bool,
    report: IngestReport,
    warehouse: Warehouse,
    arrivals: Mapping[str, float],
) -> list[tuple[str, str, float | None]]:
    """(content key, path, arrival or ``None``) of the sources to read (see
    :func:`ingest_files`). A source that cannot even be hashed
    (a FIFO, a symlink loop, no permission) becomes an ``ingest_errors`` row keyed by
    its path, replaced on every try and dropped once the path reads."""
    items, seen, unreadable, healed = [], set(), [], []
    earlier = any(k.startswith(_PATH_KEY) for k in known)  # such rows exist
    for f in files:
        try:
            if not stat.S_ISREG(f.stat().st_mode):
                raise OSError(0, "not a regular file")
            key = content_key(f)
        except OSError as err:
            reason = f"cannot read ({err.strerror or err})"
            report.failed += 1
            report.errors.append((str(f), reason))
            unreadable.append(
                {
                    "source_key": _path_key(f),
                    "source_path": path_text(f),
                    "error": reason,
                    "ingested_at": time.time(),
                }
            )
            continue
        if earlier and _path_key(f) in known:
            healed.append(_path_key(f))
        if key in seen or (key in known and not force):
            report.skipped += 1
            continue
        seen.add(key)
        items.append((key, str(f), arrivals.get(str(f))))
    if unreadable or healed:
        keys = healed + [row["source_key"] for row in unreadable]
        warehouse.commit(
            {"ingest_errors": [pa.Table.from_pylist(unreadable)] if unreadable else []},
            delete_keys={"ingest_errors": {"source_key": keys}},
        )
    return items


_PATH_KEY = "path-"


def _path_key(path: Path) -> str:
    """The key of a source that could not be read: its path's hash (it has no content)."""
    digest = hashlib.blake2b(str(path).encode(errors="surrogateescape"), digest_size=16)
    return _PATH_KEY + digest.hexdigest()


def _local_pool(workers: int, timeout: float | None, logs: _PerLog):
    from iosight.parallel import LocalPool

    return LocalPool(
        ingest_batch, workers=workers, timeout=timeout, preload=_PRELOAD, on_beat=logs.to
    )


def _run_local(pool, batches, warehouse, committer, logs, reader) -> None:
    pending = {}

    def submit(bid: str, batch: list) -> None:
        pending[bid] = batch
        pool.submit(bid, (str(warehouse.staging_dir(bid)), batch, reader))

    for batch in batches:
        submit(new_batch_id(), batch)
    for res in pool.results():
        for bid, retry in _settle(res, pending.pop(res.key), committer, logs):
            submit(bid, retry)


def _settle(res, batch: list, committer: _Committer, logs: _PerLog) -> list[tuple[str, list]]:
    """Commit a batch that a worker finished, or record the source a failed batch died
    on; return the batches to read again (see :meth:`_Committer.split_failed`)."""
    if res.error is None:
        committer.commit(res.key, res.value)
        logs.to(res.key, len(batch))
        logs.forget(res.key)
        return []
    retries = committer.split_failed(res, batch, logs.progress)
    logs.carry(res.key, retries)
    return retries


class _PerLog:
    """Ingest progress per log from the workers' heartbeats, not per committed batch.

    A heartbeat for item ``i`` of a batch means its first ``i`` logs are read. Logs
    counted in a batch that then failed carry over to the retries that hold them
    (their first logs, in order), so no log is counted twice.
    """

    def __init__(self, progress, report) -> None:
        self.progress, self.report, self.counted = progress, report, {}

    def to(self, key: str, done: int) -> None:
        n = done - self.counted.get(key, 0)
        if n > 0:
            self.counted[key] = done
            self.progress.advance(n, failed=self.report.failed)

    def forget(self, key: str) -> None:
        self.counted.pop(key, None)

    def carry(self, key: str, retries: list[tuple[str, list]]) -> None:
        credit = self.counted.pop(key, 0)
        for bid, items in retries:
            self.counted[bid] = min(credit, len(items))
            credit -= self.counted[bid]


def _run_dask(batches, warehouse, scheduler, timeout, committer, logs, reader) -> None:
    from iosight.parallel import dask_results

    tasks = {new_batch_id(): b for b in batches}
    while tasks:
        args = [(bid, (str(warehouse.staging_dir(bid)), b, reader)) for bid, b in tasks.items()]
        retries: dict[str, list] = {}
        for res in dask_results(
            ingest_batch, args, scheduler=scheduler, timeout=timeout, on_beat=logs.to
        ):
            retries.update(_settle(res, tasks[res.key], committer, logs))
        tasks = retries


def _known_sources(warehouse: Warehouse) -> tuple[set[str], set[str]]:
    """Keys of the sources in ``sources`` or ``ingest_errors``, and of those whose only
    record is a timeout (read again: the next try may well finish). One read per table."""
    from iosight.parallel import TIMED_OUT

    def column(name: str, cols: list[str]) -> dict[str, list]:
        if not warehouse.has_table(name):
            return {c: [] for c in cols}
        return warehouse.table(name, columns=cols).to_pydict()

    ingested = set(column("sources", ["source_key"])["source_key"])
    errors = column("ingest_errors", ["source_key", "error"])
    timed_out = {
        key
        for key, error in zip(errors["source_key"], errors["error"], strict=True)
        if str(error).startswith(TIMED_OUT)
    }
    return ingested | set(errors["source_key"]), timed_out - ingested


class _Committer:
    """Commits staged batches and turns failed ones into error rows and retries."""

    def __init__(
        self,
        warehouse: Warehouse,
        *,
        force: bool,
        known: set[str],
        timed_out: set[str],
        report,
    ) -> None:
        self.warehouse, self.force, self.known, self.report = warehouse, force, known, report
        self.timed_out = timed_out  # keys whose timeout row the next try replaces
        self.on_commit: Callable[[list[str]], None] | None = None  # told each batch's paths

    def commit(self, batch_id: str, result: dict) -> None:
        delete = None
        if self.force:
            replaced = [k for k in result["keys"] if k in self.known]
            delete = self._deletions(replaced) if replaced else None
        else:
            retried = [k for k in result["keys"] if k in self.timed_out]
            delete = {"ingest_errors": {"source_key": retried}} if retried else None
        self.warehouse.commit_staged(batch_id, result["tables"], delete_keys=delete)
        if self.on_commit is not None:
            self.on_commit(result["paths"])
        self.report.ingested += result["ingested"]
        self.report.jobs += result["jobs"]
        self.report.bytes_read += result["bytes"]
        self.report.failed += len(result["errors"])
        self.report.errors += result["errors"]

    def split_failed(self, res, batch: list, progress) -> list[tuple[str, list]]:
        """Record the item a dead worker was on; return the rest as retries.

        When the failing item is unknown (``failed_item`` is ``None``: the task raised,
        or died before its first item), each item is retried alone so the culprit fails
        alone; a known item fails at once and the others are read again.
        """
        shutil.rmtree(self.warehouse.staging_dir(res.key), ignore_errors=True)
        i = res.failed_item
        if i is None:
            if len(batch) > 1:
                return [(new_batch_id(), [item]) for item in batch]
            i = 0
        key, path = batch[i][:2]
        self.error_row(key, path, res.error)
        progress.advance(1, failed=self.report.failed)
        rest = batch[:i] + batch[i + 1 :]
        return [(new_batch_id(), rest)] if rest else []

    def error_row(self, key: str, path: str, error: str) -> None:
        row = {
            "source_key": key,
            "source_path": path_text(path),
            "error": error,
            "ingested_at": time.time(),
        }
        replace = self.force or key in self.timed_out
        delete = {"ingest_errors": {"source_key": [key]}} if replace else None
        self.warehouse.commit({"ingest_errors": [pa.Table.from_pylist([row])]}, delete_keys=delete)
        self.report.failed += 1
        self.report.errors.append((path, error))

    def _deletions(self, source_keys: list[str]) -> dict:
        wh = self.warehouse
        job_keys: set[str] = set(source_keys)
        if wh.has_table("jobs"):
            found = wh.sql(
                "select job_key from jobs where split_part(job_key, '-', 1) in "
                "(select unnest(?::varchar[]))",
                [source_keys],
            )
            job_keys.update(found["job_key"])
        delete: dict = {name: job_keys for name in wh.tables() if name not in _SOURCE_TABLES}
        for name in _SOURCE_TABLES:
            delete[name] = {"source_key": source_keys}
        return delete


# ---------------------------------------------------------------- in the workers
def ingest_batch(arg: tuple[str, list[tuple[str, str, float | None]], str], beat) -> dict:
    """Worker task: read a batch of sources and stage their rows as Parquet.

    Returns what the committer needs: the table names staged, the keys read, job
    and byte counts, the paths of the sources read, and the (path, reason) of sources
    that failed to read (also staged as ``ingest_errors`` rows). Memory stays bounded:
    see :class:`_Parts`.
    """
    from iosight.darshan import read_source, table_pieces
    from iosight.parallel import one_line

    staging, items, reader = Path(arg[0]), arg[1], arg[2]
    out = {"tables": set(), "keys": [], "ingested": 0, "jobs": 0, "bytes": 0, "errors": []}
    out["paths"] = []  # as the file system names them (follow's taken files)
    parts = _Parts(staging)
    sources: list[dict] = []
    for i, (key, path, arrival) in enumerate(items):
        beat(i)
        now = time.time()
        out["keys"].append(key)
        out["bytes"] += os.path.getsize(path)
        try:
            fmt, log = read_source(path, reader=reader, chunked=True)
        except Exception as err:  # noqa: BLE001 - an unreadable source is an error row
            reason = one_line(err)
            out["errors"].append((path, reason))
            row = {
                "source_key": key,
                "source_path": path_text(path),
                "error": reason,
                "ingested_at": now,
            }
            parts.add("ingest_errors", pa.Table.from_pylist([row]))
            continue
        log.tables["jobs"] = _with_known_at(log.tables["jobs"], arrival)
        jobs = log.tables["jobs"].num_rows
        bins = DxtBins(_whole(log.tables["jobs"])) if "dxt_posix" in log.tables else None
        for name, t in log.tables.items():
            for piece in table_pieces(t):  # a big DXT table piece by piece: see _Parts
                parts.add(name, *_job_keys(key, piece))
                if name == "dxt_posix":
                    bins.add(piece)
        if bins and (binned := bins.table()) is not None:
            parts.add(DXT_BINS_TABLE, binned, key)
        if log.totals_row is not None:
            parts.add_row("job_totals", log.totals_row, key)
        elif fmt != "job-totals" and "job_totals" not in log.tables:
            # a log with no records still gets its row (no counter recorded: all null)
            parts.add("job_totals", _ONE_ROW, key)
        sources.append(
            {
                "source_key": key,
                "source_path": path_text(path),
                "format": fmt,
                "jobs": jobs,
                "ingested_at": now,
            }
        )
        out["paths"].append(path)
        out["ingested"] += 1
        out["jobs"] += jobs
    if sources:  # one table for the batch, not one per source
        parts.add("sources", pa.Table.from_pylist(sources))
    out["tables"] = sorted(parts.finish())
    return out


_ONE_ROW = pa.table({"_": [0]}).drop_columns(["_"])  # one row, no column


def _whole(table: pa.Table | RowBlock) -> pa.Table:
    """A reader's table, built if it came as rows (:class:`~iosight.darshan.RowBlock`)."""
    return table.table() if isinstance(table, RowBlock) else table


def _with_known_at(jobs: pa.Table | RowBlock, arrival: float | None) -> pa.Table | RowBlock:
    """``jobs`` with ``known_at`` set where the source left it null: to the source's
    ``arrival`` when known (follow mode), else to the job's end time (rows: in place)."""
    import pyarrow.compute as pc

    if isinstance(jobs, RowBlock):
        for row in jobs.rows:
            if row.get("known_at") is None:
                row["known_at"] = row["end_time"] if arrival is None else arrival
        return jobs

    fill = jobs["end_time"] if arrival is None else pa.scalar(arrival, pa.float64())
    at = jobs.schema.get_field_index("known_at")
    return jobs.set_column(at, "known_at", pc.coalesce(jobs["known_at"], fill))


class _Parts:
    """A worker's rows of one batch, per table, staged as few Parquet files as memory allows.

    Rows accumulate per table until the batch ends, so a table gets one file per batch
    (one concat, one write) unless the accumulated Arrow buffers of all tables pass
    :data:`_PART_BYTES`: then the largest tables are staged as parts of their own until
    at most half that is held. A worker therefore holds at most ``_PART_BYTES`` of rows
    plus one source's tables, and staging copies one table at a time (into one chunk
    per column when its sources' chunks are small, ``_SMALL_CHUNK_ROWS``: Parquet writes
    one chunk much faster than many small ones). A table's
    rows may also come one by one (a 3.x log's ``job_totals`` row, see
    :class:`~iosight.darshan.LogTables`): those become one table at staging.

    Each source's rows carry their ``job_key`` only here: the column is built once per
    staged table, dictionary-encoded (no string per row; Parquet stores a dictionary
    page and readers see a plain string column), and each staged file's rows are in
    job key order (:func:`_in_key_order`).
    """

    def __init__(self, staging: Path) -> None:
        self.staging = staging
        self.acc: dict[str, list[tuple[pa.Table | RowBlock, str | list[str] | None]]] = {}
        self.rows: dict[str, list[tuple[dict, str]]] = {}
        self.size: dict[str, int] = {}
        self.total = 0  # sum of self.size, kept as tables come and go (add runs per table)
        self.part: dict[str, int] = {}
        self.written: set[str] = set()

    def add(
        self, name: str, table: pa.Table | RowBlock, keys: str | list[str] | None = None
    ) -> None:
        """Hold ``table``'s rows (a table, or rows to build one of: a batch's blocks of
        one kind become one table at staging, :func:`_whole_tables`); ``keys``: the
        ``job_key`` of every row (one string), of each row (a list), or ``None`` for a
        table without one."""
        self.acc.setdefault(name, []).append((table, keys))
        # get_total_buffer_size: nbytes deduplicates and costs far more
        self._hold(
            name, table.nbytes if isinstance(table, RowBlock) else table.get_total_buffer_size()
        )

    def add_row(self, name: str, row: dict[str, int | float], key: str) -> None:
        """Hold one row (column -> value) of job ``key``."""
        self.rows.setdefault(name, []).append((row, key))
        self._hold(name, 88 * len(row))  # about 88 bytes a value: a float object, a dict slot

    def _hold(self, name: str, size: int) -> None:
        self.size[name] = self.size.get(name, 0) + size
        self.total += size
        if self.total > _PART_BYTES:
            while self.total > _PART_BYTES // 2:
                self._stage(max(self.size, key=self.size.__getitem__))

    def _stage(self, name: str) -> None:
        entries = self.acc.pop(name, [])
        if name in self.rows:
            rows = self.rows.pop(name)
            entries.insert(0, (_rows_table([r for r, _ in rows]), [k for _, k in rows]))
        if all(isinstance(k, str) for _, k in entries):
            entries.sort(key=lambda e: e[1])  # whole jobs in key order (stable: pieces too)
        table = concat_tables(_whole_tables(entries))
        if table.num_rows < _SMALL_CHUNK_ROWS * len(entries):
            table = table.combine_chunks()  # small chunks: worth a copy
        if entries[0][1] is not None:
            keys = _key_column(entries)
            if name in TABLE_SORT_COLUMNS:  # a job's segments in time order, as compacted
                table, keys = _sorted_by_key(table, keys, TABLE_SORT_COLUMNS[name][1])
            else:
                table, keys = _in_key_order(table, keys)
            # rows of no column (logs without records, in job_totals) vanish in Arrow's
            # concat when nothing else is there: their keys are the rows
            table = (
                table.add_column(0, "job_key", keys)
                if table.num_columns
                else pa.table({"job_key": keys})
            )
        part = self.part.get(name, 0)
        # row groups a compaction's merge reads one at a time from each file (_merge),
        # and a DXT time window skips
        self.written.update(stage_tables(self.staging, {name: [table]}, part=part,
                                         arrow_schema=False, statistics=_pruned_by(name),
                                         row_group_size=ROW_GROUP_ROWS))  # fmt: skip
        if name == "job_totals":  # and its narrow twin, under the same name (_io_totals)
            twin = {IO_TOTALS: [io_totals(table)]}
            self.written.update(stage_tables(self.staging, twin, part=part, arrow_schema=False,
                                             statistics=_pruned_by(IO_TOTALS),
                                             compression=IO_TOTALS_COMPRESSION))  # fmt: skip
        self.part[name] = part + 1
        self.total -= self.size.pop(name)

    def finish(self) -> set[str]:
        for name in list(self.size):
            self._stage(name)
        return self.written


def _pruned_by(name: str) -> bool | list[str]:
    """The columns whose min/max a staged file of table ``name`` records: ``job_key``
    of a wide counters table (``posix``: its ~100 counters' statistics cost a fifth of
    writing it, and no query prunes by them; these files are soon merged by compaction,
    whose outputs record them all); every column of ``jobs`` (a time range selects
    jobs), of a sequence table (:data:`SEQUENCE_TABLES`: a DXT zoom prunes by a
    segment's start, end and rank; few columns) and of the tables without a job key
    (``sources``, ``ingest_errors``: a few rows)."""
    if name == "jobs" or name in _SOURCE_TABLES or name in SEQUENCE_TABLES:
        return True
    return ["job_key"]


def _whole_tables(entries: list[tuple[pa.Table | RowBlock, object]]) -> list[pa.Table]:
    """The tables of ``entries`` (tables or row blocks, and their keys), in order, each
    run of blocks of one kind built as one table (:meth:`RowBlock.join`): one Arrow
    table per module (or ``jobs``) and batch, not per log, and one concatenation of
    fewer pieces."""
    out: list[pa.Table] = []
    run: list[RowBlock] = []
    for t, _ in entries:
        if run and not (isinstance(t, RowBlock) and t.kind == run[0].kind):
            out.append(RowBlock.join(run))
            run = []
        if isinstance(t, RowBlock):
            run.append(t)
        else:
            out.append(t)
    if run:
        out.append(RowBlock.join(run))
    return out


def _rows_table(rows: list[dict[str, int | float]]) -> pa.Table:
    """``rows`` as one table: its columns every key met, in order (float64 for floats,
    int64 otherwise); a row without one holds null."""
    seen: dict = {}  # every column, in the order met, with a value (of its one type)
    for row in rows:
        seen.update(row)
    schema = pa.schema(
        [(col, pa.float64() if isinstance(v, float) else pa.int64()) for col, v in seen.items()]
    )
    return pa.Table.from_pylist(rows, schema=schema)


# chunks of fewer rows than this on average are combined before Parquet writes them (a
# wide table of one-row chunks writes much slower than combined); larger ones are
# written as they are (combining DXT segments would only copy them)
_SMALL_CHUNK_ROWS = 1024


def _key_column(entries: list[tuple[pa.Table, str | list[str]]]) -> pa.DictionaryArray:
    """The ``job_key`` of every row of ``entries`` (tables and their keys), in order."""
    words: list[str] = []
    index = []
    for table, keys in entries:
        if isinstance(keys, str):
            index.append(np.full(table.num_rows, len(words), np.int32))
            words.append(keys)
        else:
            index.append(np.arange(len(words), len(words) + len(keys), dtype=np.int32))
            words += keys
    return pa.DictionaryArray.from_arrays(
        pa.array(np.concatenate(index)), pa.array(words, pa.string())
    )


def _in_key_order(table: pa.Table, keys: pa.DictionaryArray) -> tuple[pa.Table, pa.Array]:
    """``table`` and its rows' ``keys`` sorted by key (stable), so a compaction merges
    the staged files without sorting them (:mod:`iosight.warehouse._merge`); rows in
    order already (sources of one job each, sorted as they were added) are not copied."""
    row_rank = _row_rank(keys)
    if np.all(row_rank[1:] >= row_rank[:-1]):
        return table, keys
    order = pa.array(np.argsort(row_rank, kind="stable"))
    return table.take(order), keys.take(order)


def _sorted_by_key(
    table: pa.Table, keys: pa.DictionaryArray, column: str
) -> tuple[pa.Table, pa.DictionaryArray]:
    """``table`` and the ``job_key`` of its rows sorted by job key, then by the float
    ``column`` (how compaction sorts the table, :data:`TABLE_SORT_COLUMNS`; NaN after
    numbers, nulls last; stable). Rows whose keys are in order already (sources of one
    job each, staged in key order) are sorted job by job, and a job whose rows are in
    order is not sorted at all: NumPy's stable sort of a DXT job's runs of time-ordered
    segments costs a third of Arrow's sort of (key, column) over the whole table; a
    table in order is not copied."""
    row_rank = _row_rank(keys)
    by = table[column]
    values = by.to_numpy()  # (nulls as NaN: told apart below)
    if by.null_count or np.any(row_rank[1:] < row_rank[:-1]):
        nulls = by.is_null().to_numpy()
        order = np.lexsort((values, nulls, row_rank))  # last key first
    elif (order := _runs_sorted(row_rank, values)) is None:
        return table, keys
    take = pa.array(order)
    return table.take(take), keys.take(take)


def _row_rank(keys: pa.DictionaryArray) -> np.ndarray:
    """Each row's rank of its key among the keys (equal keys, equal ranks: the pieces
    of a job), the order both staging sorts put rows in."""
    _, word_rank = np.unique(keys.dictionary.to_numpy(zero_copy_only=False), return_inverse=True)
    return word_rank[keys.indices.to_numpy()]


def _runs_sorted(rank: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """The stable order that sorts ``values`` within each run of equal ``rank`` (which is
    in order), or ``None`` when they are sorted already."""
    cuts = [0, *(np.flatnonzero(rank[1:] != rank[:-1]) + 1).tolist(), len(rank)]
    parts, moved = [], False
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        run = values[lo:hi]
        if np.all(run[1:] >= run[:-1]):
            parts.append(np.arange(lo, hi))
        else:
            parts.append(lo + np.argsort(run, kind="stable"))
            moved = True
    return np.concatenate(parts) if moved else None


def _job_keys(key: str, table: pa.Table | RowBlock) -> tuple[pa.Table | RowBlock, str | list[str]]:
    """``table`` and its rows' ``job_key``: the source key, or ``<key>-<row>`` for the
    rows of a multi-job source (its ``_row`` column, dropped here; a log's row block
    is one job's)."""
    if isinstance(table, RowBlock) or table.schema.get_field_index("_row") < 0:
        return table, key
    rows = table["_row"].to_numpy().tolist()
    return table.drop_columns(["_row"]), [f"{key}-{r:08d}" for r in rows]


_SOURCE_TABLES = ("sources", "ingest_errors")
