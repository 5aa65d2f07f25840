"""Compaction's merge of files already sorted by job key: whole jobs moved, no row sorted.

Ingest stages each batch's rows in job key order, each job's rows together, and a
compaction output is sorted as well, so a group of a per-job table's files (``posix``,
``dxt_posix``, ...) is a set of sorted runs. Sorting their rows again (DuckDB's
``ORDER BY``, a full external sort of every row and column) cost more than the ingests
did on the DXT-heavy replicated corpus (docs/warehouse.md, "Compaction"); merging
sorted runs needs one pass and no comparison of rows (the merge phase of an external
merge sort: Knuth, TAOCP vol. 3, section 5.4.1). Here the unit merged is a job's block
of rows: each file's job-key column is read alone, its runs of equal keys found, the
runs of all files ordered by key, and the files streamed batch by batch into the
output in that order, so memory is a batch per file plus one output row group,
whatever the files hold. Adjacent runs of one file are taken as one range, and the
slices taken are copied together every :data:`_PIECES` of them: each slice costs Arrow
objects per column, which a row group of one-row jobs of a wide table (``job_totals``,
474 columns) made many times its data (the replayed Summit year's peak, docs/follow.md,
"Memory over the year").

:func:`sorted_runs` checks what the merge relies on from the files themselves (each
file's keys in order, the further sort columns in order within each job, a job in one
file unless the job key is the only sort column, every file of one schema) and returns
``None`` otherwise: the caller then sorts with DuckDB, as for files of warehouses
ingested before ingest sorted its batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from iosight.warehouse._store import parquet_writer

#: bytes (as Parquet counts them uncompressed) of the batches held across all input
#: files at once, a batch of each; decoded, strings take about three times that (a
#: group of 31 ingest files of dxt_posix: 164 MB allocated by pyarrow at 16 MB, 289 MB
#: at 64 MB, in the same CPU time)
_HELD_BYTES = 16 << 20
#: at most this many bytes in the largest row groups of the files of a group merged
#: here: each file's reader holds up to a page of every column (pyarrow allocated 256 MB
#: for 28 files of 89 columns); more (wide tables, many files) are sorted by DuckDB,
#: under its memory limit
_READER_BYTES = 128 << 20
#: slices of input batches held before they are copied into one batch (each slice holds
#: an Arrow array object per column, some hundreds of bytes, whatever its rows)
_PIECES = 256

# a job's block of rows: (job key, file index, first row, row after the last)
Run = tuple[str, int, int, int]


def sorted_runs(files: list[Path], order: list[str]) -> list[Run] | None:
    """The runs of equal ``job_key`` of ``files`` in merged order, or ``None`` when
    the files are not each sorted by ``order`` (``job_key`` first), a job with further
    sort columns spans files, the files' schemas differ or their readers would hold more
    than :data:`_READER_BYTES`."""
    metas = [pq.read_metadata(f) for f in files]
    schema = metas[0].schema.to_arrow_schema().remove_metadata()
    if (
        order[0] != "job_key"
        or sum(_largest_row_group(m) for m in metas) > _READER_BYTES
        or any(not m.schema.to_arrow_schema().remove_metadata().equals(schema) for m in metas)
    ):
        return None
    runs: list[Run] = []
    for i, f in enumerate(files):
        file_runs = _file_runs(pq.read_table(f, columns=order, read_dictionary=["job_key"]), i)
        if file_runs is None:
            return None
        runs += file_runs
    runs.sort()
    if len(order) > 1 and any(a[0] == b[0] for a, b in pairwise(runs)):
        return None  # a job in two files: its rows would need sorting by the others
    return runs


def _largest_row_group(meta: pq.FileMetaData) -> int:
    """The uncompressed bytes of the file's largest row group."""
    return max((meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)), default=0)


def _file_runs(keys: pa.Table, index: int) -> list[Run] | None:
    """One file's runs of equal job keys, or ``None`` unless its rows are sorted by its
    columns (``job_key`` strictly increasing from run to run, the others non-decreasing
    and not null within a run)."""
    starts, words = [], []
    at = 0
    for chunk in keys["job_key"].chunks:
        codes = chunk.indices.to_numpy(zero_copy_only=False)
        cut = np.flatnonzero(np.diff(codes)) + 1
        first = np.concatenate([[0], cut]).astype(np.int64)
        starts.append(first + at)
        words += chunk.dictionary.take(pa.array(codes[first])).to_pylist()
        at += len(chunk)
    if not words:
        return []
    bounds = np.concatenate([*starts, [at]])
    keep = [0] + [i for i in range(1, len(words)) if words[i] != words[i - 1]]
    if any(words[a] >= words[b] for a, b in pairwise(keep)):
        return None  # the row groups' dictionaries split no run, but the keys are out of order
    edges = [int(bounds[i]) for i in keep] + [at]
    if not _within_runs_sorted(keys, np.asarray(edges)):
        return None
    return [(words[k], index, edges[j], edges[j + 1]) for j, k in enumerate(keep)]


def _within_runs_sorted(keys: pa.Table, edges: np.ndarray) -> bool:
    """Whether the columns after ``job_key`` are in (lexicographic) order, without nulls,
    within each run (``edges``: the runs' first rows and the end)."""
    if keys.num_columns == 1:
        return True
    same_run = np.ones(keys.num_rows - 1, dtype=bool) if keys.num_rows else np.ones(0, bool)
    same_run[edges[1:-1] - 1] = False  # row i and i + 1 in different runs
    tied = same_run
    for name in keys.column_names[1:]:
        column = keys[name]
        if column.null_count:
            return False
        values = column.to_numpy()
        before, after = values[:-1], values[1:]
        if np.any(tied & (after < before)):
            return False
        tied = tied & (after == before)
    return True


def merge_runs(
    files: list[Path], runs: list[Run], out: Path, row_group: int, *, sequence: bool = False
) -> None:
    """Write the rows of ``files`` to ``out`` in the order of ``runs`` (from
    :func:`sorted_runs`), in row groups of ``row_group`` rows, zstd, keeping the first
    file's key-value metadata; ``sequence``: a table of :data:`SEQUENCE_TABLES`, its
    numbers encoded as ingest stages them."""
    meta = pq.read_metadata(files[0]).metadata or {}
    rows = _keys_encoded(pq.read_schema(files[0]).remove_metadata())
    keep = {k: v for k, v in meta.items() if k not in (b"ARROW:schema", b"pandas")}
    schema = rows.with_metadata(keep) if keep else rows
    cursors = [_Cursor(f, _HELD_BYTES // len(files)) for f in files]
    pending = _Pending(rows)
    with parquet_writer(out, schema, sequence=sequence, store_schema=False) as writer:
        for i, first, stop in file_ranges(runs):
            for piece in cursors[i].rows(first, stop):
                pending.add(piece)
                if pending.rows >= row_group:
                    pending.flush(writer, row_group, final=False)
        pending.flush(writer, row_group, final=True)
    pa.default_memory_pool().release_unused()  # before DuckDB's merge of the next table


def _keys_encoded(schema: pa.Schema) -> pa.Schema:
    """``schema`` with ``job_key`` dictionary-encoded, as :class:`_Cursor` reads it: a
    job's key is then one string a batch, not one a row (decoded, 32 bytes a row, which
    the writer hashed back into a dictionary: the most of a DXT table's merge)."""
    at = schema.get_field_index("job_key")
    key = pa.field("job_key", pa.dictionary(pa.int32(), pa.string()))
    return schema.set(at, key) if at >= 0 else schema


def file_ranges(runs: list[Run]) -> Iterator[tuple[int, int, int]]:
    """``runs`` in their order as (file index, first row, row after the last), a file's
    runs that follow each other in the file and in the merge joined into one range."""
    at: list[int] | None = None
    for _, i, first, stop in runs:
        if at is not None and at[0] == i and at[2] == first:
            at[2] = stop
            continue
        if at is not None:
            yield at[0], at[1], at[2]
        at = [i, first, stop]
    if at is not None:
        yield at[0], at[1], at[2]


class _Pending:
    """The rows taken for the output and not written yet: batches, and the slices taken
    since the last of them, copied into one batch every :data:`_PIECES` slices."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema, self.batches, self.pieces, self.rows = schema, [], [], 0

    def add(self, piece: pa.RecordBatch) -> None:
        """Hold ``piece`` (a slice of an input batch) for the output."""
        self.pieces.append(piece)
        self.rows += piece.num_rows
        if len(self.pieces) >= _PIECES:
            self.batches += self._table(self.pieces).combine_chunks().to_batches()
            self.pieces = []

    def _table(self, batches: list[pa.RecordBatch]) -> pa.Table:
        return pa.Table.from_batches(batches, schema=self.schema)

    def flush(self, writer: pq.ParquetWriter, row_group: int, final: bool) -> None:
        """Write whole row groups of the rows held (all of them when ``final``); hold
        the rest."""
        table = self._table(self.batches + self.pieces)
        whole = table.num_rows if final else table.num_rows - table.num_rows % row_group
        if whole:  # one dictionary a column: the writer writes its indices as they are
            writer.write_table(table.slice(0, whole).unify_dictionaries(), row_group_size=row_group)
        rest = table.slice(whole)
        self.batches, self.pieces, self.rows = rest.to_batches(), [], rest.num_rows


class _Cursor:
    """One input file read forward in batches of about ``batch_bytes`` (Parquet's
    uncompressed size of its rows), handing out row ranges in order."""

    def __init__(self, path: Path, batch_bytes: int) -> None:
        file = pq.ParquetFile(path, read_dictionary=["job_key"])
        meta = file.metadata
        row_bytes = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        rows = max(256, batch_bytes * max(meta.num_rows, 1) // max(row_bytes, 1))
        self.batches = file.iter_batches(batch_size=rows, use_threads=False)
        self.batch: pa.RecordBatch | None = None
        self.at = 0  # file row of self.batch's first row

    def rows(self, first: int, stop: int):
        """Yield the file's rows ``first`` .. ``stop - 1`` (never before earlier calls')."""
        while first < stop:
            while self.batch is None or first >= self.at + self.batch.num_rows:
                if self.batch is not None:
                    self.at += self.batch.num_rows
                self.batch = next(self.batches).replace_schema_metadata(None)
            end = min(stop, self.at + self.batch.num_rows)
            yield self.batch.slice(first - self.at, end - first)
            first = end
