"""How the ``timeline`` table is stored, so that an update rewrites only what it touches.

The table is written in runs of :data:`RUN_BINS` bins on the lattice ``k * width``, one
Parquet file a run (the file's part number is the run's index), and the newest file (the
last by name of the last commit) carries the timeline's metadata, once: as the file's
key-value metadata, without Arrow's schema (which would hold it again, base64-encoded).
That metadata includes the build's *sources*: the ingest batches of ``jobs`` it read
and a digest of every file of the tables it read, so an update finds the new jobs by
listing files (never by scanning the jobs) and notices anything else that changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

    from iosight.timeline._span import Quartiles
    from iosight.warehouse import Warehouse

TABLE = "timeline"
RUN_BINS = 4096  # bins a file: 14 days of 5-minute bins
STATE_KEY = b"iosight.timeline_sources"
#: the dense span's quartile windows (``_span.Quartiles.to_bytes``), kept in the newest
#: file only (``iosight.timeline_quartiles``, their JSON of older code, is not read: an
#: update of such a timeline finds them from every job's start, once)
QUARTILES_KEY = b"iosight.timeline_quartile_windows"
#: tables a timeline reads; a change to any of their files changes the timeline
SOURCE_TABLES = ("jobs", "posix", "stdio", "dxt_posix", "heatmap", "job_totals")


def batch_of(file_name: str) -> str:
    """The ingest batch of a table file ``part-<batch>-<part>.parquet``."""
    return "-".join(file_name.split("-")[1:3])


def run_of(file_name: str) -> int:
    """The run index (the part number) of a timeline file."""
    return int(file_name.removesuffix(".parquet").split("-", 3)[3])


def source_files(warehouse: Warehouse) -> dict[str, list[os.DirEntry]]:
    """The files of each table a timeline reads (absent tables: none): those the table
    holds now (:meth:`Warehouse.table_files`), never the ones a compaction replaced."""
    try:  # one listing of the tables: no failed scan for each table the warehouse lacks
        present = set(os.listdir(os.path.join(warehouse.path, "tables")))
    except FileNotFoundError:
        return {}
    entries = {name: warehouse.table_entries(name) for name in SOURCE_TABLES if name in present}
    return {name: files for name, files in entries.items() if files}


def digest(files: dict[str, list[os.DirEntry]], skip: frozenset[str] = frozenset()) -> str:
    """A digest of the names, sizes and modification times of ``files``, less those of
    the batches ``skip``: a file replaced or rewritten in place changes it."""
    h = hashlib.sha1()
    for name, entries in files.items():
        for e in entries:
            if batch_of(e.name) not in skip:
                st = e.stat()
                h.update(f"{name}/{e.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def sources_state(files: dict[str, list[os.DirEntry]], schema: dict[str, set[str]]) -> dict:
    """What a timeline records of its sources: ``jobs`` batches, digest and columns."""
    return {
        "jobs_batches": sorted({batch_of(e.name) for e in files.get("jobs", [])}),
        "digest": digest(files),
        "schema": {name: sorted(cols) for name, cols in schema.items()},
    }


def stored_metadata(warehouse: Warehouse) -> dict[bytes, bytes]:
    """The stored timeline's schema metadata: its newest file's."""
    import pyarrow.parquet as pq

    newest = newest_run(warehouse)
    return {} if newest is None else dict(pq.read_schema(newest).metadata or {})


def newest_run(warehouse: Warehouse) -> str | None:
    """The path of the timeline's newest file (which holds its metadata); None: none."""
    names = _run_names(warehouse)
    return run_path(warehouse, names[-1]) if names else None


def run_path(warehouse: Warehouse, name: str) -> str:
    """The path of the timeline's file ``name``."""
    return os.path.join(warehouse.path, "tables", TABLE, name)


def stored_state(metadata: dict[bytes, bytes]) -> dict | None:
    """The sources a stored timeline records; None for one written by older code."""
    raw = metadata.get(STATE_KEY)
    return None if raw is None else json.loads(raw)


def stored_quartiles(metadata: dict[bytes, bytes]) -> Quartiles | None:
    """The stored timeline's quartile windows; None: none kept."""
    from iosight.timeline._span import Quartiles

    raw = metadata.get(QUARTILES_KEY)
    return None if raw is None else Quartiles.from_bytes(raw)


def run_files(warehouse: Warehouse) -> dict[int, str]:
    """The file name of each stored run, by run index (:func:`run_of`, inline: a call a
    file is most of this for a year's runs)."""
    return {int(n.split("-", 3)[3][:-8]): n for n in _run_names(warehouse)}


def _run_names(warehouse: Warehouse) -> list[str]:
    """The names of the timeline's files, sorted (as ``table_files``, without building a
    ``Path`` of each: a millisecond an update for a year of runs)."""
    try:
        with os.scandir(os.path.join(warehouse.path, "tables", TABLE)) as entries:
            return sorted(e.name for e in entries if e.name.endswith(".parquet"))
    except FileNotFoundError:
        return []


def runs_of(first: int, n_bins: int) -> range:
    """The run indices that lattice bins ``first .. first + n_bins - 1`` fall in."""
    return range(first // RUN_BINS, (first + n_bins - 1) // RUN_BINS + 1)


#: how a run file is written: its metadata once (``stage_tables``), and uncompressed,
#: as an update rewrites a run each time: zstd took 2.0 ms to write 1,878 bins and 0.6 ms
#: to read them back, against 1.5 and 0.25 ms, for 84 kB of file instead of 180 kB;
#: min/max statistics of ``bin_start`` only, the column a reader selects bins by (those
#: of the sums cost some 0.08 ms a write and skip nothing)
_RUN_FILE = {"arrow_schema": False, "key_values": True, "compression": "none",
             "statistics": ["bin_start"]}  # fmt: skip


def write_runs(
    warehouse: Warehouse, table: pa.Table, first: int, runs: range, drop: list[str] | None
) -> None:
    """Commit the rows of ``table`` (lattice bin ``first`` onwards) that lie in ``runs``,
    a file each, atomically: replacing the whole timeline (``drop`` None) or the files
    ``drop`` only. Only the file that will be the newest carries ``table``'s metadata
    (:func:`stored_metadata`; tens of kB, which every file of a year's timeline carried
    before)."""
    from iosight.warehouse import new_batch_id, stage_tables

    batch = new_batch_id()
    staging = warehouse.staging_dir(batch)
    newest = max(runs, key=lambda r: f"{r}.parquet")  # as the files' names sort
    with warehouse.writer_lock():
        for run in runs:
            lo = max(run * RUN_BINS - first, 0)
            hi = min((run + 1) * RUN_BINS - first, table.num_rows)
            rows = table.slice(lo, hi - lo)
            rows = rows if run == newest else rows.replace_schema_metadata(None)
            stage_tables(staging, {TABLE: [rows]}, part=run, **_RUN_FILE)
        warehouse.commit_staged(
            batch,
            [TABLE],
            replace_tables=[TABLE] if drop is None else [],
            drop_files={TABLE: drop or []},
        )


def replace_newest(warehouse: Warehouse, table: pa.Table, name: str) -> None:
    """Commit ``table`` (one run, with the timeline's metadata) in place of the newest
    file ``name``, which holds that run: one rename (``Warehouse.replace_file``), as
    atomic as :func:`write_runs`' commit, and the file keeps its name, so it stays the
    newest."""
    warehouse.replace_file(TABLE, name, table, **_RUN_FILE)


def lattice_first(table: pa.Table) -> int:
    """The lattice index of a timeline table's first bin."""
    width = float(table.column("bin_width")[0].as_py())
    return int(np.rint(table.column("bin_start")[0].as_py() / width))
