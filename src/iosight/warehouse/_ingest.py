"""Ingest: sources on disk -> readers in worker processes -> atomic warehouse batches.

A source is identified by a hash of its content (``source_key``); a Darshan log's
``job_key`` is that hash, a job-total table's rows get ``<source_key>-<row>``.
Sources already in ``sources`` or ``ingest_errors`` are skipped unless ``force``,
so re-running an interrupted ingest finishes the rest and adds nothing twice.
Each batch of logs is committed atomically (:meth:`Warehouse.commit`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from iosight._errors import IosightError
from iosight._progress import Progress, ensure_progress
from iosight.warehouse._store import Warehouse

_BATCH_BYTES = 256 << 20
# imported once in the fork server, so each (re)started worker starts warm
_WORKER_PRELOAD = ("iosight.darshan._sources", "iosight.darshan._pydarshan", "pandas")


@dataclass
class IngestReport:
    """What an ingest did; ``failed`` sources are also rows of ``ingest_errors``."""

    sources: int = 0
    ingested: int = 0
    jobs: int = 0
    skipped: int = 0
    failed: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    errors: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def summary(self) -> str:
        rate = self.ingested / self.seconds if self.seconds else 0.0
        return (
            f"{self.sources} sources: {self.ingested} ingested ({self.jobs} jobs), "
            f"{self.skipped} already in the warehouse, {self.failed} failed; "
            f"{self.seconds:.1f} s, {rate:.1f} sources/s, "
            f"{self.bytes_read / 2**20 / max(self.seconds, 1e-9):.1f} MB/s"
        )


def discover(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Files named, plus Darshan-looking files under directories named (recursive, sorted)."""
    from iosight.darshan._sources import SOURCE_SUFFIXES

    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(
                f
                for f in p.rglob("*")
                if f.is_file()
                and f.name.lower().endswith(SOURCE_SUFFIXES)
                and not f.name.startswith(".")
            )
        elif p.exists():
            found.append(p)
        else:
            raise IosightError(f"no such file or directory: {p}")
    return list(dict.fromkeys(found))


def content_key(path: Path) -> str:
    """The content hash that identifies a source (BLAKE2b, 128 bits, hex)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, lambda: hashlib.blake2b(digest_size=16)).hexdigest()


def _read_task(path: str):
    """Worker entry point: read one source (module level so workers can import it)."""
    from iosight.darshan._sources import read_source

    return read_source(path)


def ingest(
    paths: Iterable[str | os.PathLike],
    warehouse: Warehouse,
    *,
    workers: int = 0,
    force: bool = False,
    timeout: float | None = 300.0,
    scheduler: str | None = None,
    batch_size: int = 256,
    progress: Progress | None = None,
) -> IngestReport:
    """Read Darshan logs, parser dumps and job-total tables into ``warehouse``.

    Parameters
    ----------
    paths : files or directories (walked recursively for Darshan-looking names)
    workers : worker processes (0: one per core)
    force : replace sources already ingested instead of skipping them
    timeout : seconds one source may take before its worker is killed and it fails
    scheduler : address of a Dask scheduler to run the readers on instead
    batch_size : sources per atomic commit
    """
    from iosight.parallel import run_dask, run_local

    progress = ensure_progress(progress)
    report = IngestReport()
    t0 = time.monotonic()
    files = discover(paths)
    report.sources = len(files)
    known = _known_sources(warehouse)
    tasks, by_key = [], {}
    for f in files:
        try:
            if not f.is_file():
                raise OSError(0, "not a regular file")
            key = content_key(f)
        except OSError as err:
            report.failed += 1
            report.errors.append((str(f), f"cannot read ({err.strerror})"))
            continue
        if key in by_key or (key in known and not force):
            report.skipped += 1
            continue
        by_key[key] = f
        tasks.append((key, str(f)))
    progress.start(len(tasks), "ingest")
    if scheduler:
        results = run_dask(_read_task, tasks, scheduler=scheduler, timeout=timeout)
    else:
        results = run_local(
            _read_task, tasks, workers=workers, timeout=timeout, preload=_WORKER_PRELOAD
        )
    batch = _Batch(warehouse, force=force, known=known)
    for res in _with_errors_logged(results, report, by_key):
        path = by_key[res.key]
        report.bytes_read += path.stat().st_size
        if res.error is None:
            fmt, tables = res.value
            report.jobs += batch.add(res.key, path, fmt, tables)
            report.ingested += 1
        else:
            batch.add_error(res.key, path, res.error)
        if batch.full(batch_size):
            batch.flush()
        progress.advance(1, failed=report.failed)
    batch.flush()
    progress.finish()
    report.seconds = time.monotonic() - t0
    return report


def _with_errors_logged(results, report: IngestReport, by_key) -> Iterator:
    for res in results:
        if res.error is not None:
            report.failed += 1
            report.errors.append((str(by_key[res.key]), res.error))
        yield res


def _known_sources(warehouse: Warehouse) -> set[str]:
    keys: set[str] = set()
    for name in ("sources", "ingest_errors"):
        if warehouse.has_table(name):
            keys.update(warehouse.table(name, columns=["source_key"])["source_key"].to_pylist())
    return keys


class _Batch:
    """Tables of several sources, committed together."""

    def __init__(self, warehouse: Warehouse, *, force: bool, known: set[str]) -> None:
        self.warehouse, self.force, self.known = warehouse, force, known
        self._reset()

    def _reset(self) -> None:
        self.tables: dict[str, list[pa.Table]] = {}
        self.keys: list[str] = []
        self.nbytes = 0

    def add(self, key: str, path: Path, fmt: str, tables: dict[str, pa.Table]) -> int:
        jobs = tables["jobs"]
        if "_row" in jobs.column_names:  # many jobs in one source

            def job_keys(t: pa.Table) -> pa.Array:
                rows = t["_row"].to_pylist()
                return pa.array([f"{key}-{r:08d}" for r in rows], pa.string())
        else:

            def job_keys(t: pa.Table) -> pa.Array:
                return pa.array([key] * t.num_rows, pa.string())

        for name, t in tables.items():
            t = t.add_column(0, "job_key", job_keys(t))
            if "_row" in t.column_names:
                t = t.drop_columns(["_row"])
            self.tables.setdefault(name, []).append(t)
            self.nbytes += t.nbytes
        self._source_row("sources", key, path, format=fmt, jobs=jobs.num_rows)
        return jobs.num_rows

    def add_error(self, key: str, path: Path, error: str) -> None:
        self._source_row("ingest_errors", key, path, error=error)

    def _source_row(self, table: str, key: str, path: Path, **extra) -> None:
        row = {"source_key": key, "source_path": str(path), **extra, "ingested_at": time.time()}
        self.tables.setdefault(table, []).append(pa.Table.from_pylist([row]))
        self.keys.append(key)

    def full(self, batch_size: int) -> bool:
        return len(self.keys) >= batch_size or self.nbytes >= _BATCH_BYTES

    def flush(self) -> None:
        if not self.keys:
            return
        delete = None
        if self.force:
            replaced = [k for k in self.keys if k in self.known]
            if replaced:
                delete = self._deletions(replaced)
        self.warehouse.commit(self.tables, delete_keys=delete)
        self._reset()

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


_SOURCE_TABLES = ("sources", "ingest_errors")
