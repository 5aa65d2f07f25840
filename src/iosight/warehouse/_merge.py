"""Compaction's merge of files already sorted by job key: whole jobs moved, no row sorted.

Ingest stages each batch's rows in job key order, each job's rows together, and a
compaction output is sorted as well, so a group of a per-job table's files (``posix``,
``dxt_posix``, ...) is a set of sorted runs. Sorting their rows again (DuckDB's
``ORDER BY``, a full external sort of every row and column) cost more than the ingests
did on the DXT-heavy replicated corpus (docs/warehouse.md, "Compaction"); merging
sorted runs needs one pass and no comparison of rows (the merge phase of an external
merge sort: Knuth, TAOCP vol. 3, section 5.4.1). Here the unit merged is a job's block
of rows: each file's job-key column is read alone, its runs of equal keys found, the
runs of all files ordered by key (NumPy and Arrow over arrays, no Python per job), and
the files streamed batch by batch into the output in that order. The keys are ordered
a slab at a time (:meth:`SortedGroup.slabs`), so what the merge holds of them is a
file's of each run, not every key of the group.

The output is taken in windows of rows (:func:`window_rows`): a window is a range of
keys, so each file gives it one contiguous slice of rows, and one ``take`` with indices
NumPy builds from the window's runs puts them in merged order. The cost per row is then
Arrow's, not a Python step and Arrow objects per column per job (files of different
commits interleave job by job: 16 files of 256 jobs were some 4,096 slices per table).
Each row group written holds a ``job_key`` dictionary of its own keys only. Memory is a
batch per open file (the files of one run, disjoint key ranges, are open one after
another), a window and its copy, one window in flight on the write thread
(:class:`_Behind`) and its copy, within :data:`_HELD_BYTES` of decoded rows, plus one
output row group. With a reader budget that lets
``heatmap``'s ingest files merge rather than go to DuckDB's sort, the automatic
compaction after an ingest of 10,000 logs without DXT fell from 2.5–2.8 to 1.1–1.3 ms
of CPU a log (docs/warehouse.md, "Compaction").

The merge checks what it relies on from the files themselves: :func:`sorted_group`
that every file has the same columns, in whatever order (a batch's ``job_totals``
columns come in the order its logs' modules do), and the slabs, as they read the keys,
that each file's keys are in order, the further sort columns in order within each job,
a run's files' keys increasing, and a job in one file unless the job key is the only
sort column. Where they are not (``None``, or :class:`Unmergeable` with the outputs
removed) the caller sorts with DuckDB, as for files of warehouses ingested before
ingest sorted its batches.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from iosight.warehouse._footer import arrow_schema, leaf_paths
from iosight.warehouse._store import parquet_writer, part_of, run_of

#: bytes (decoded, as Arrow holds them: :func:`decoded_row_bytes`) of the rows held at
#: once: a batch of each open input file together, and each window of the output (the one
#: read and the one in flight on the write thread count one each). Parquet's own
#: uncompressed count undercounts decoded rows up to 22 times (a tier-2 group of
#: ``posix``, 89 columns mostly RLE-encoded zeros: 32 bytes a row by Parquet's count, 720
#: decoded), which, taken for the decoded size, let a tier-2 merge of the 1,000,000-log
#: warehouse peak at 1.5 GB (``job_totals``, ``posix``)
_HELD_BYTES = 32 << 20
#: at most this many bytes in the largest row groups of the files of a group merged
#: here: each file's reader holds up to a page of every column (pyarrow allocated 433 MB
#: for 28 files of 89 columns, 313 MB by this count; 167 MB for 79 of ``heatmap``'s, 142
#: MB, whose sort by DuckDB took four times the CPU at a peak of 750 MB); more (wide
#: tables, many files) are sorted by DuckDB, under its memory limit
READER_BUDGET = 192 << 20
#: rows of the output taken at once, at most
_WINDOW_ROWS = 65_536
#: runs of equal keys put in order at once, at most (:meth:`SortedGroup.slabs`): ordering
#: a whole group's keys at once held some 155 bytes a job (``benchmarks/merge_tier.py``:
#: 562 MB at 2 million one-row jobs, 1,492 at 8 million; docs/warehouse.md)
_SLAB_RUNS = 1 << 18


@dataclass(frozen=True)
class Runs:
    """The runs of equal ``job_key`` of a group's files in merged order: run ``j`` is
    file ``file[j]``'s rows ``first[j]`` .. ``stop[j] - 1``, of job ``keys[j]``."""

    keys: pa.Array
    file: np.ndarray
    first: np.ndarray
    stop: np.ndarray

    def __len__(self) -> int:
        """The number of runs."""
        return len(self.file)


class Unmergeable(Exception):
    """Rows out of the order the merge relies on, found while it reads them (a file's
    keys out of order, files of one run whose keys overlap, a job in two files where
    further columns sort its rows): the caller sorts the group with DuckDB instead."""


@dataclass(frozen=True)
class SortedGroup:
    """A group of files the merge may take (:func:`sorted_group`): ``order`` its sort
    columns, ``rows`` each file's row count."""

    files: list[Path]
    order: list[str]
    rows: list[int]

    def slabs(self) -> Iterator[Runs]:
        """The runs of equal ``job_key`` in merged order (by key, a key's runs in file
        order), a slab of keys at a time: a slab ends at a key no further than the last
        of the file each run (:func:`~iosight.warehouse._store.run_of`; a run's files
        hold disjoint, increasing key ranges) is reading, so every key up to it has been
        read, and at most :data:`_SLAB_RUNS` runs on. A file's keys are read when its
        run reaches it and let go after its last. What the merge holds of keys is then
        a file's of each run and a slab, not the group's: read whole, a group's keys
        grew with its jobs (docs/warehouse.md, "Runs merged in tiers"). Raises
        :class:`Unmergeable`."""
        runs: dict[str, list[int]] = {}
        for i, f in enumerate(self.files):
            runs.setdefault(run_of(f), []).append(i)
        by_part = lambda i: part_of(self.files[i])  # noqa: E731
        streams = [
            _KeyStream(self.files, sorted(run, key=by_part), self.order) for run in runs.values()
        ]
        while live := [s for s in streams if s.ready()]:
            each = max(1, _SLAB_RUNS // len(live))
            last = min(s.key_ahead(each) for s in live)
            yield _in_order([s.take(last) for s in live], len(self.order) > 1)


def sorted_group(files: list[Path], order: list[str]) -> SortedGroup | None:
    """``files`` as a group the merge may take, or ``None`` when the sort does not begin
    with ``job_key``, the files' columns differ (names, types or nullability; their
    order may) or their readers would hold more than :data:`READER_BUDGET`. What only
    the rows show (their order) raises :class:`Unmergeable` while the merge reads them."""
    metas = [pq.read_metadata(f) for f in files]
    columns = _columns(files[0], metas[0])
    if (
        order[0] != "job_key"
        or held_by_readers(files, [_largest_row_group(m) for m in metas]) > READER_BUDGET
        or any(_columns(f, m) != columns for f, m in zip(files, metas, strict=True))
    ):
        return None
    return SortedGroup(list(files), list(order), [m.num_rows for m in metas])


class _KeyStream:
    """The runs of equal keys of one run's files (``indices`` into ``files``, in
    order), a file's at a time: its keys (and ``order``'s further columns, checked)
    read when the stream reaches it."""

    def __init__(self, files: list[Path], indices: list[int], order: list[str]) -> None:
        self.files, self.todo, self.order = files, list(reversed(indices)), order
        self.file = -1
        self.words: pa.Array = pa.array([], pa.string())
        self.edges = np.zeros(1, np.int64)
        self.at = 0  # the first run not taken
        self.last: str | None = None  # the last key of the run's files read so far

    def ready(self) -> bool:
        """Whether runs are left, reading the next files as needed."""
        while self.at == len(self.words):
            if not self.todo:
                return False
            self._read(self.todo.pop())
        return True

    def _read(self, i: int) -> None:
        path = self.files[i]  # (ParquetFile: no pyarrow.dataset import)
        keys = pq.ParquetFile(path, read_dictionary=["job_key"]).read(self.order)
        runs = _file_runs(keys)
        if runs is None:
            raise Unmergeable(f"{path.name}: rows not sorted by {self.order}")
        words, edges = runs
        if len(words) and self.last is not None and words[0].as_py() <= self.last:
            raise Unmergeable(f"{path.name}: keys overlap the file before it in its run")
        self.file, self.words, self.edges, self.at = i, words, edges, 0
        if len(words):
            self.last = words[-1].as_py()

    def key_ahead(self, n: int) -> str:
        """The key ``n`` runs on from the first not taken, or the last of the file being
        read: no later file of the run holds it or any key before it."""
        return self.words[min(self.at + n, len(self.words)) - 1].as_py()

    def take(self, last: str) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
        """The runs not taken yet up to key ``last``: keys, file, first rows, stops."""
        stop = bisect.bisect_right(_Keys(self.words), last, lo=self.at)
        at, self.at = self.at, stop
        file = np.full(stop - at, self.file)
        return self.words[at:stop], file, self.edges[at:stop], self.edges[at + 1 : stop + 1]


class _Keys:
    """A string array's values as a sequence :mod:`bisect` can search."""

    def __init__(self, words: pa.Array) -> None:
        self.words = words

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, i: int) -> str:
        return self.words[i].as_py()


def _in_order(parts, one_file_a_job: bool) -> Runs:
    """The runs ``parts`` (each stream's, as :meth:`_KeyStream.take` gives them) in
    merged order: by key, a key's runs in file order (a stable sort of them in file
    order). ``one_file_a_job``: a key in two files raises :class:`Unmergeable` (its
    rows would need sorting by the further columns)."""
    parts = sorted(parts, key=lambda p: int(p[1][0]) if len(p[1]) else -1)
    words = pa.chunked_array([p[0] for p in parts], pa.string())
    by = pc.sort_indices(words).to_numpy()  # stable
    keys = words.combine_chunks().take(by)
    if one_file_a_job and len(keys) > 1 and pc.any(pc.equal(keys[1:], keys[:-1])).as_py():
        raise Unmergeable("a job in two files")
    file, first, stop = (np.concatenate([p[j] for p in parts]) for j in (1, 2, 3))
    return Runs(keys, file[by], first[by], stop[by])


def _columns(path: Path, meta: pq.FileMetaData) -> list[tuple[str, str, bool]]:
    """File ``path``'s columns (its footer: ``meta``) as (name, type, nullable), by name."""
    return sorted((f.name, str(f.type), f.nullable) for f in arrow_schema(path, meta))


def held_by_readers(files: list[Path], each: list[int]) -> int:
    """What the readers of ``files`` hold at once, where file ``i``'s reader holds
    ``each[i]`` bytes: the files of one run (:func:`~iosight.warehouse._store.run_of`)
    hold disjoint, increasing key ranges, so the merge reads them one after another
    (:class:`_Cursor` opens a file when its first rows are taken and lets it go after
    its last), and a run holds its largest file's."""
    most: dict[str, int] = {}
    for f, held in zip(files, each, strict=True):
        most[run_of(f)] = max(most.get(run_of(f), 0), held)
    return sum(most.values())


def reader_bytes(path: Path) -> int:
    """What a reader of file ``path`` holds at most, as :data:`READER_BUDGET` counts it:
    its largest row group's uncompressed bytes."""
    return _largest_row_group(pq.read_metadata(path))


def _largest_row_group(meta: pq.FileMetaData) -> int:
    """The uncompressed bytes of the file's largest row group."""
    return max((meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)), default=0)


def _file_runs(keys: pa.Table) -> tuple[pa.Array, np.ndarray] | None:
    """One file's runs of equal job keys (their keys; their first rows and the file's
    row count), or ``None`` unless its rows are sorted by its columns (``job_key``
    strictly increasing from run to run, the others non-decreasing and not null within
    a run)."""
    starts, words = [], []
    at = 0
    for chunk in keys["job_key"].chunks:  # a row group's dictionary each
        codes = chunk.indices.to_numpy(zero_copy_only=False)
        first = np.flatnonzero(np.diff(codes, prepend=-1))
        starts.append(first + at)
        words.append(chunk.dictionary.take(pa.array(codes[first])))
        at += len(chunk)
    word = pa.chunked_array(words, pa.string()).combine_chunks()
    new = np.ones(len(word), bool)  # a run cut by row groups' dictionaries is one run
    if len(word) > 1:
        new[1:] = pc.not_equal(word[1:], word[:-1]).to_numpy(zero_copy_only=False)
    keep = np.flatnonzero(new)
    word = word.take(pa.array(keep, pa.int64()))
    if len(word) > 1 and not pc.all(pc.less(word[:-1], word[1:])).as_py():
        return None  # the keys are out of order
    edges = np.append(np.concatenate([*starts, np.zeros(0, np.int64)])[keep], at)
    if not _within_runs_sorted(keys, edges):
        return None
    return word, edges.astype(np.int64)


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
    group: SortedGroup,
    out: Path,
    row_group: int,
    *,
    sequence: bool = False,
    part_rows: int | None = None,
) -> list[Path]:
    """Write the rows of ``group``'s files to ``out`` in the order of its runs (from
    :func:`sorted_group`, slab by slab), in row groups of ``row_group`` rows, zstd,
    keeping the first file's key-value metadata; ``sequence``: a table of
    :data:`SEQUENCE_TABLES`, its numbers encoded as ingest stages them. ``part_rows``:
    cut the output into files of about that many rows, each ending where a job does
    (:func:`part_cuts`), named ``<out's stem>-<j>.parquet``: each then holds a narrow
    range of keys. Returns the files written; raises :class:`Unmergeable`, having
    removed them, where the rows are not in the order the merge relies on."""
    files = group.files
    first = pq.read_metadata(files[0])
    meta = first.metadata or {}
    rows = _dictionary_encoded(pq.read_schema(files[0]).remove_metadata(), first)
    keep = {k: v for k, v in meta.items() if k not in (b"ARROW:schema", b"pandas")}
    schema = rows.with_metadata(keep) if keep else rows
    slabs = group.slabs()
    head = next(slabs, None)
    key = rows.get_field_index("job_key")
    if head is not None and 2 * len(head) > int(np.sum(head.stop - head.first)):
        # about a row a job (as the first slab has them): the reader's dictionary of a
        # file's keys (its hash table of every key) cost more than strings
        rows = rows.set(key, pa.field("job_key", pa.string(), rows.field(key).nullable))
    coded = [f.name for f in rows if pa.types.is_dictionary(f.type)]
    row_bytes = decoded_row_bytes(rows, files[0], first)
    open_files = len({run_of(f) for f in files})  # at once: a file of each run
    batch = max(256, _HELD_BYTES // open_files // row_bytes)
    cursors = [
        _Cursor(f, batch, rows.names, coded, n) for f, n in zip(files, group.rows, strict=True)
    ]
    size = window_rows(row_bytes)
    if part_rows is None:
        name = lambda j: out  # noqa: E731
    else:
        name = lambda j: out.with_name(f"{out.stem}-{j}{out.suffix}")  # noqa: E731
    opened = lambda path: parquet_writer(path, schema, sequence=sequence, store_schema=False)  # noqa: E731
    behind = _Behind(opened, name, row_group, rows)
    try:
        with behind:
            at = after = 0  # output rows so far; the last cut among them
            for slab in chain([head] if head is not None else [], slabs):
                if part_rows is not None:
                    cuts = part_cuts(slab, part_rows, at, after)
                    after = int(cuts[-1]) if len(cuts) else after
                    behind.cut(cuts)
                at += int(np.sum(slab.stop - slab.first))
                for window in windows(file_ranges(slab), size):
                    behind.add(*_window_pieces(cursors, *window))
            behind.finish()
    except Unmergeable:
        for path in behind.written:
            path.unlink(missing_ok=True)
        raise
    pa.default_memory_pool().release_unused()  # before DuckDB's merge of the next table
    return behind.written


def part_cuts(runs: Runs, part_rows: int, at: int = 0, after: int = 0) -> np.ndarray:
    """The output rows (of a merge whose rows before ``runs`` number ``at``, the last of
    their cuts at ``after``) where a new file begins: the first job's start at or past
    ``part_rows`` rows of the file before. Never inside a job: a job's rows in two files
    would take the DXT tables' next merge, which needs each job in one file, to DuckDB's
    sort. (A slab's first run begins a job: slabs hold disjoint keys.)"""
    sizes = runs.stop - runs.first
    begins = at + np.cumsum(sizes) - sizes
    new_job = np.ones(len(runs), bool)
    if len(runs) > 1:
        new_job[1:] = pc.not_equal(runs.keys[1:], runs.keys[:-1]).to_numpy(zero_copy_only=False)
    starts = begins[new_job]  # output rows where a job's rows begin
    cuts = [after]
    while (i := int(np.searchsorted(starts, cuts[-1] + part_rows, "left"))) < len(starts):
        cuts.append(int(starts[i]))
    return np.asarray(cuts[1:], np.int64)


def window_rows(row_bytes: int) -> int:
    """Rows of an output window of rows of ``row_bytes`` decoded bytes: at most
    :data:`_WINDOW_ROWS`, and :data:`_HELD_BYTES` for the two windows alive at once (the
    one read and the one in flight) with the copy of each that ``take`` puts in order."""
    return min(_WINDOW_ROWS, max(1, _HELD_BYTES // (4 * max(1, row_bytes))))


def decoded_row_bytes(schema: pa.Schema, path: Path, meta: pq.FileMetaData) -> int:
    """Bytes a row of ``schema`` (as :func:`_dictionary_encoded` reads it) takes decoded,
    from the types (a fixed width, a dictionary's 4-byte index) and, for strings and
    anything else of varying width, the larger of Parquet's uncompressed size a row in
    ``meta`` and Arrow's in the first rows of file ``path`` (Parquet's count of a column
    it dictionary-encoded counts a repeated path once): a column of RLE-encoded zeros
    is a few bits a row in Parquet, 8 bytes in Arrow."""
    leaves = {path: i for i, path in enumerate(leaf_paths(meta))}
    rows = max(1, meta.num_rows)
    total = len(schema) / 8  # validity
    varying = []
    for f in schema:
        if pa.types.is_dictionary(f.type):
            total += f.type.index_type.bit_width / 8
        elif bits := _bit_width(f.type):
            total += bits / 8
        else:
            varying.append(f.name)
    if varying:
        first = pq.ParquetFile(path, metadata=meta).iter_batches(4096, columns=varying)
        sample = next(first, None)
        for name in varying:
            at = leaves.get(name)
            counted = _column_bytes(meta, at) if at is not None else 0
            arrow = sample.column(name).nbytes / max(1, sample.num_rows) if sample else 0
            total += max(arrow, counted / rows)
    return max(1, round(total))


def _bit_width(kind: pa.DataType) -> int:
    """The bits a value of ``kind`` takes, 0 for a type of varying width."""
    try:
        return kind.bit_width
    except ValueError:
        return 0


def _dictionary_encoded(schema: pa.Schema, meta: pq.FileMetaData) -> pa.Schema:
    """``schema`` with ``job_key`` and the strings of few distinct values (under a byte a
    row in ``meta``'s pages, as Parquet counts them uncompressed) dictionary-encoded, as
    :class:`_Cursor` reads them: a value is then decoded once a batch, not once a row
    (decoded, ``job_key`` is 32 bytes a row, which the writer hashed back into a
    dictionary: the most of a DXT table's merge; ``heatmap``'s ``module`` read as
    strings was half the CPU of reading its files). Strings of many values (paths) stay
    strings: their dictionaries would be unified window by window."""
    leaves = {path: i for i, path in enumerate(leaf_paths(meta))}
    rows = max(1, meta.num_rows)
    for at, f in enumerate(schema):
        if f.name == "job_key" or (
            pa.types.is_string(f.type)
            and f.name in leaves
            and _column_bytes(meta, leaves[f.name]) < rows
        ):  # (nullable as the files have it: their batches must match)
            coded = pa.field(f.name, pa.dictionary(pa.int32(), f.type), f.nullable)
            schema = schema.set(at, coded)
    return schema


def _column_bytes(meta: pq.FileMetaData, column: int) -> int:
    """Parquet column ``column``'s uncompressed bytes over the file's row groups."""
    groups = range(meta.num_row_groups)
    return sum(meta.row_group(i).column(column).total_uncompressed_size for i in groups)


Ranges = tuple[np.ndarray, np.ndarray, np.ndarray]


def file_ranges(runs: Runs) -> Ranges:
    """``runs`` in their order as (file index, first row, row after the last) arrays, a
    file's runs that follow each other in the file and in the merge joined into one."""
    new = np.ones(len(runs), bool)
    new[1:] = (runs.file[1:] != runs.file[:-1]) | (runs.first[1:] != runs.stop[:-1])
    at = np.flatnonzero(new)
    last = np.append(at[1:] - 1, len(runs) - 1)
    return runs.file[at], runs.first[at], runs.stop[last]


def windows(ranges: Ranges, size: int) -> Iterator[Ranges]:
    """``ranges`` cut into windows of ``size`` rows of the output (the last one
    shorter): each window's ranges, the first and last clipped to the window."""
    file, first, stop = ranges
    ends = np.cumsum(stop - first)
    begins = ends - (stop - first)
    total = int(ends[-1]) if len(ends) else 0
    for start in range(0, total, size):
        end = min(start + size, total)
        j0, j1 = np.searchsorted(ends, start, "right"), np.searchsorted(begins, end, "left")
        a, b = first[j0:j1].copy(), stop[j0:j1].copy()
        a[0] += start - begins[j0]
        b[-1] -= ends[j1 - 1] - end
        yield file[j0:j1], a, b


def _window_pieces(
    cursors: list[_Cursor], file: np.ndarray, first: np.ndarray, stop: np.ndarray
) -> tuple[list[pa.RecordBatch], np.ndarray | None]:
    """A window's rows: each file's one slice of rows for it (a window is a range of
    keys), in file order, and the indices of a ``take`` that puts them in merged order
    (``None``: in order already)."""
    files, head = np.unique(file, return_index=True)
    tail = len(file) - 1 - np.unique(file[::-1], return_index=True)[1]
    base = np.zeros(len(cursors), np.int64)  # file i's row r is the slices' row base[i] + r
    pieces, at = [], 0
    for i, lo, hi in zip(files.tolist(), first[head].tolist(), stop[tail].tolist(), strict=True):
        pieces += cursors[i].rows(lo, hi)
        base[i] = at - lo
        at += hi - lo
    if len(files) == len(file) and np.all(np.diff(file) > 0):
        return pieces, None
    counts = stop - first
    shift = base[file] + first - (np.cumsum(counts) - counts)
    return pieces, np.repeat(shift, counts) + np.arange(at)


class _Behind:
    """Puts windows in order and writes them on a second thread, a step behind the
    reads: the next window is read and decoded (Arrow releases the GIL) while the last
    one is taken into order, encoded and compressed, which were some 40 % of a merge's
    CPU (10,000 logs without DXT), so a merge takes both cores where compaction left
    one idle. One window is in flight at a time: the memory added is its rows (the
    batches they slice stay held) and their copy, which :func:`window_rows` counts, and
    the output row group it completes.

    The output goes to files ``name(0)``, ``name(1)``, ... in turn, the next one from
    each cut (output rows, :meth:`cut`) on, each opened by ``opened`` when its first row
    group is written (``written``); row groups of ``row_group`` rows from each file's
    start (the last of a file shorter)."""

    def __init__(
        self,
        opened: Callable[[Path], pq.ParquetWriter],
        name: Callable[[int], Path],
        row_group: int,
        schema: pa.Schema,
    ) -> None:
        self.opened, self.name, self.row_group, self.schema = opened, name, row_group, schema
        self.cuts: list[int] = []  # output rows where the next file begins (the thread's)
        self.written: list[Path] = []
        self.writer: pq.ParquetWriter | None = None
        self.part = -1  # the number of the file being written
        self.at = 0  # output row of the first row held
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="iosight-merge-write")
        self.pending: Future | None = None
        self.held: list[pa.Table] = []  # rows not written yet (the thread's own)

    def cut(self, cuts: np.ndarray) -> None:
        """Begin a new file at each of ``cuts`` (output rows past those added so far)."""
        if len(cuts):
            self._then(self.cuts.extend, cuts.tolist())

    def add(self, pieces: list[pa.RecordBatch], index: np.ndarray | None) -> None:
        """Queue a window's ``pieces`` (in the order ``index`` takes them, if any) after
        the one in flight, which is waited for (and its error raised)."""
        self._then(self._add, pieces, index)

    def finish(self) -> None:
        """Write the rows left, the last row group short, and wait for it (a merge of
        no rows writes its one file, empty)."""
        self._then(self._write, final=True)
        self._wait()
        if self.part < 0:
            self._open(0)

    def _then(self, work: Callable[..., None], *args: object, **kwargs: object) -> None:
        """Run ``work`` on the thread once the work in flight is done."""
        self._wait()
        self.pending = self.pool.submit(work, *args, **kwargs)

    def _wait(self) -> None:
        """Wait for the work in flight, raising its error."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            pending.result()

    def _add(self, pieces: list[pa.RecordBatch], index: np.ndarray | None) -> None:
        """Put a window in order, and write the row groups it completes."""
        table = pa.Table.from_batches(pieces, self.schema)
        if index is not None:
            table = table.take(pa.array(index))
        elif len(pieces) > 1:
            table = table.combine_chunks()
        self.held.append(_coded_keys(table))
        if sum(t.num_rows for t in self.held) >= self.row_group:
            self._write(final=False)

    def _write(self, final: bool) -> None:
        """Write whole row groups of the rows held (all of them when ``final``), each
        with its own keys only (:func:`_own_keys`), into the file their rows belong to,
        and keep the rest."""
        if not self.held:
            return
        table = pa.concat_tables(self.held)
        done = 0
        while done < table.num_rows:
            part = bisect.bisect_right(self.cuts, self.at)  # the file the next row is in
            cut = self.cuts[part] if part < len(self.cuts) else None
            end = self.row_group if cut is None else min(self.row_group, cut - self.at)
            if done + end > table.num_rows and not final:
                break
            rows = table.slice(done, min(end, table.num_rows - done))
            if part != self.part:
                self._close()
                self._open(part)
            self.writer.write_table(_own_keys(_one_dictionary(rows)), row_group_size=self.row_group)
            done += rows.num_rows
            self.at += rows.num_rows
        self.held = [table.slice(done)]

    def _open(self, part: int) -> None:
        path = self.name(part)
        self.writer, self.part = self.opened(path), part
        self.written.append(path)

    def _close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def __enter__(self) -> _Behind:
        return self

    def __exit__(self, *error: object) -> None:
        self.pool.shutdown(wait=True)  # the work in flight ends before the file closes
        self._close()


def _coded_keys(rows: pa.Table) -> pa.Table:
    """``rows`` with ``job_key`` a dictionary, as the output has it: keys read as strings
    (a job a row, :func:`merge_runs`) are encoded here, each once, in their order."""
    at = rows.schema.get_field_index("job_key")
    if at < 0 or pa.types.is_dictionary(rows.schema.field(at).type):
        return rows
    coded = pc.dictionary_encode(rows.column(at))
    return rows.set_column(at, pa.field("job_key", coded.type, rows.field(at).nullable), coded)


def _one_dictionary(rows: pa.Table) -> pa.Table:
    """``rows`` (a row group to write) with each dictionary column's chunks under one
    dictionary. Its pieces come from files whose dictionaries hold the same values in
    another order (a batch's ``module`` values in the order its logs list them), and
    Parquet's writer, given a new dictionary within a column chunk, writes the rest of
    it plain: 15 % of the ``heatmap`` row groups of a million logs held ``module`` as
    plain strings, which a scan that filters on it compares string by string
    (docs/warehouse.md, "Runs merged in tiers")."""
    if not any(pa.types.is_dictionary(f.type) for f in rows.schema):
        return rows
    return rows.unify_dictionaries()


def _own_keys(rows: pa.Table) -> pa.Table:
    """``rows`` (sorted by job key) with ``job_key`` one dictionary of the keys they
    hold, in order. The inputs' dictionaries hold every key of a file's batch, and the
    writer stores a row group's whole dictionary: all of them together made ``heatmap``'s
    output twice as large as DuckDB's."""
    at = rows.schema.get_field_index("job_key")
    if at < 0 or not rows.num_rows:
        return rows
    keys = rows.column(at).combine_chunks()  # one dictionary (Arrow unifies them)
    codes = keys.indices.to_numpy(zero_copy_only=False)
    first = np.flatnonzero(np.diff(codes, prepend=-1))  # a key's rows follow each other
    index = np.repeat(np.arange(len(first), dtype=np.int32), np.diff(first, append=len(codes)))
    own = pa.DictionaryArray.from_arrays(index, keys.dictionary.take(pa.array(codes[first])))
    return rows.set_column(at, rows.schema.field(at), own)


class _Cursor:
    """One input file read forward in batches of ``rows`` rows, its ``columns`` in their
    order (those ``coded`` as dictionaries), handing out row ranges in order: opened
    when the first are taken and let go (its reader, footer and batch) once row
    ``end - 1``, the last the merge takes, is, so the files of a run are open one at a
    time (:func:`held_by_readers`)."""

    def __init__(self, path: Path, rows: int, columns: list[str], coded: list[str], end: int):
        self.path, self.size, self.coded, self.end = path, rows, coded, end
        self.batches: Iterator[pa.RecordBatch] | None = None
        self.columns = columns
        self.batch: pa.RecordBatch | None = None
        self.at = 0  # file row of self.batch's first row

    def rows(self, first: int, stop: int):
        """Yield the file's rows ``first`` .. ``stop - 1`` (never before earlier calls')."""
        if self.batches is None and first < stop:
            file = pq.ParquetFile(self.path, read_dictionary=self.coded)
            self.batches = file.iter_batches(
                batch_size=self.size, columns=self.columns, use_threads=False
            )
        while first < stop:
            while self.batch is None or first >= self.at + self.batch.num_rows:
                if self.batch is not None:
                    self.at += self.batch.num_rows
                batch = next(self.batches).select(self.columns)
                self.batch = batch.replace_schema_metadata(None)
            end = min(stop, self.at + self.batch.num_rows)
            piece = self.batch.slice(first - self.at, end - first)
            if end >= self.end:  # the file's last rows: its reader goes
                self.batches = self.batch = None
            yield piece
            first = end
