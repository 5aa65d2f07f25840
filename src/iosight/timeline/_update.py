"""Bringing a stored timeline up to date with new jobs, touching only their bins.

A job's contribution to the bins depends on that job's rows alone, so the jobs of the
ingest batches the timeline has not read (``_stored``: found by listing the ``jobs``
files, never by scanning the jobs) are binned by themselves, with the stored build's
options and the columns it read, and added to the stored runs of the bins they touch;
every other file is left as it is, in one atomic commit. When that would not give what
a full rebuild gives, the update is a full rebuild and says why in one line: the
timeline was written by older code, files it read were replaced or removed (``ingest
--force``, ``compact``), the new batches bring columns that change how records are
read or records of jobs it already holds, or the dense span (``_span``) would now
leave out another set of jobs. Ingest commits a job's records with its ``jobs`` row,
so a new job's records are in the new batches.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight.timeline._build import (
    _OPTIONS_KEY,
    CHUNK_JOBS,
    TOTAL_COLUMNS,
    VALUE_COLUMNS,
    Bins,
    _job_condition,
    accumulate,
    assemble,
    build_options,
    build_timeline,
    dense_fences,
    dense_quartiles,
    outside_fences,
    query_names,
    read_columns,
    record_queries,
    stored_options,
    totals_intervals,
    undated_condition,
    undated_jobs,
    undated_metadata,
)
from iosight.timeline._span import (
    LeftOut,
    fences_of,
    left_out,
    outside,
    quartiles_of,
)
from iosight.timeline._stored import (
    QUARTILES_KEY,
    RUN_BINS,
    STATE_KEY,
    TABLE,
    batch_of,
    digest,
    replace_newest,
    run_files,
    run_path,
    runs_of,
    source_files,
    sources_state,
    stored_quartiles,
    stored_state,
    write_runs,
)
from iosight.warehouse import IO_TOTALS, parquet_rows

if TYPE_CHECKING:
    from collections.abc import Iterable

    import duckdb
    import pyarrow as pa

    from iosight._progress import Progress
    from iosight.warehouse import Warehouse


@dataclass(frozen=True)
class TimelineUpdate:
    """What :func:`update_timeline` did.

    Attributes
    ----------
    jobs : int
        New jobs added (0 after a full rebuild: see ``rebuilt``).
    bins : int
        Bins written.
    rebuilt : str or None
        Why it rebuilt the whole timeline instead; None when it added the new jobs only.
    """

    jobs: int
    bins: int
    rebuilt: str | None = None

    def line(self) -> str:
        """One line saying what was done."""
        bins = f"{self.bins:,} bin{'s' if self.bins != 1 else ''}"
        if self.rebuilt:
            return f"timeline rebuilt in full ({bins}): {self.rebuilt}"
        if not self.bins:
            return "timeline: up to date (no new jobs)"
        jobs = f"{self.jobs:,} new job{'s' if self.jobs != 1 else ''}"
        return f"timeline: {jobs} added, {bins} rewritten"


class _Rebuild(Exception):
    """An update cannot equal a full rebuild; the message says why."""


def update_timeline(warehouse: Warehouse, *, progress: Progress | None = None) -> TimelineUpdate:
    """Add the jobs of the batches the stored timeline has not read, with the options it
    was built with, rewriting only the runs of bins they touch (one atomic commit); the
    result equals a full rebuild. A full rebuild when an update cannot give that (module
    docstring), saying why in :attr:`TimelineUpdate.rebuilt`.

    ``warehouse``: the warehouse holding the timeline; ``progress``: told of the jobs read
    (default: silent).
    """
    with warehouse.writer_lock():  # no batch lands between what is read and what is recorded
        stored = _Stored.find(warehouse)
        try:
            return _add_new(warehouse, stored, progress)
        except _Rebuild as why:
            table = build_timeline(warehouse, **stored_options(warehouse), progress=progress)
            return TimelineUpdate(0, table.num_rows, str(why))


@dataclass(frozen=True)
class _Stored:
    """The stored timeline as an update finds it: its files by run index (one listing),
    its metadata (the newest file's) and the Parquet files opened, by path (each footer
    read once: the newest file's rows are read again when its run is rewritten)."""

    runs: dict[int, str]
    newest: str
    metadata: dict
    cache: dict

    @classmethod
    def find(cls, warehouse: Warehouse) -> _Stored:
        runs, cache = run_files(warehouse), {}
        if not runs:
            warehouse.require(TABLE)  # says how to build one
        newest = max(runs.values())
        return cls(runs, newest, _open_paths([run_path(warehouse, newest)], cache)[0].metadata,
                   cache)  # fmt: skip


def _add_new(warehouse: Warehouse, stored: _Stored, progress) -> TimelineUpdate:
    """Add the new batches' jobs to the ``stored`` timeline or raise :class:`_Rebuild`."""
    metadata, cache = stored.metadata, stored.cache
    options, state = build_options(metadata), stored_state(metadata)
    if options is None or state is None:
        raise _Rebuild("it does not record what it read (an older iosight, or compacted)")
    files = source_files(warehouse)
    new = {batch_of(e.name) for e in files.get("jobs", [])} - set(state["jobs_batches"])
    if digest(files, frozenset(new)) != state["digest"]:
        raise _Rebuild("files it read were replaced or removed (ingest --force, compact)")
    if not new:
        return TimelineUpdate(0, 0)
    opened = _open_new(warehouse, files, new, cache)
    full_schema = _checked_schema(state["schema"], opened)
    if set(opened) <= _PLAIN:
        new_jobs = _plain_new(opened, state["schema"])
        every = functools.partial(_open, files["jobs"], cache)
        span = _plain_span(options, state, stored_quartiles(metadata), new_jobs, every)
        if span is not None:
            sources = sources_state(files, _read_columns(full_schema, state["schema"]))
            return _bin_plain(warehouse, stored, options, state, sources, new_jobs, span)
    dense = options.get("span", "dense") == "dense"
    with _NewRows(files, opened, state["schema"], all_jobs=dense) as rows:
        return _bin_new(warehouse, stored, options, state, files, rows, progress)


def _bin_new(warehouse, stored, options, state, files, rows, progress) -> TimelineUpdate:
    """Bin the new jobs of ``rows`` (DuckDB, the full build's queries) and add them to the
    stored runs they touch."""
    dense = options.get("span", "dense") == "dense"
    since, until, as_of = (options.get(k) for k in ("since", "until", "as_of"))
    where = _job_condition(since, until, as_of=as_of)
    bounds = _fences(rows, state, where) if dense else None
    quartiles = None if bounds is None else dense_quartiles(rows, where, bounds, _ALL_JOBS)
    stats = rows.new_jobs(where, bounds, as_of)
    acc_args = (float(options["bin_width"]), options["spread"])
    acc = accumulate(rows, since, until, (0, 1), acc_args, CHUNK_JOBS, progress, as_of=as_of,
                     schema=rows.schema, memory=None)  # fmt: skip
    sources = sources_state(files, _read_columns(rows.full_schema, state["schema"]))
    return _commit(warehouse, stored, options, state, sources, stats, (bounds, quartiles), acc)


def _bin_plain(warehouse, stored, options, state, sources, new, span) -> TimelineUpdate:
    """Bin the new jobs ``new`` (:func:`_plain_new`: no records, their job totals at
    most) in numpy, as the full build bins job totals, and add them to the stored runs
    they touch: no SQL, whose fixed costs are most of an update this small. ``sources``:
    what the timeline now reads; ``span``: the dense span's fences and quartiles."""
    since, until, as_of = (options.get(k) for k in ("since", "until", "as_of"))
    counted = new.counted(since, until, as_of)
    start = new.start[counted]
    stats = {
        "counted": int(counted.sum()),
        "lo": float(start.min()) if start.size else None,
        "hi": float(start.max()) if start.size else None,
        "outside": int(np.count_nonzero(outside(start, span[0]))),
        "undated": int(np.count_nonzero(new.undated(as_of))),
    }
    acc = Bins(float(options["bin_width"]), options["spread"])
    new.bin(acc, counted)
    return _commit(warehouse, stored, options, state, sources, stats, span, acc)


def _commit(warehouse, stored, options, state, sources, stats, dense, acc) -> TimelineUpdate:
    """Write the new jobs' bins ``acc`` (their ``stats``, :meth:`_NewRows.new_jobs`) into
    the ``stored`` runs, with the timeline's metadata as it now is (``dense``: the dense
    span's fences and :class:`~iosight.timeline._span.Quartiles`, or None)."""
    metadata = stored.metadata
    if stats["outside"]:
        raise _Rebuild(f"the dense span leaves out {stats['outside']:,} of the new jobs")
    meta = {
        **_left_out_meta(metadata, stats["lo"], stats["hi"]),
        **undated_metadata(undated_jobs(metadata) + stats["undated"]),
        _OPTIONS_KEY: json.dumps(options).encode(),
    }
    span = (int(state["first"]), int(state["bins"]))
    bounds, quartiles = dense
    if quartiles is not None:
        meta[QUARTILES_KEY] = quartiles.to_bytes()
    state = {**sources, "fences": bounds}
    return TimelineUpdate(stats["counted"], _write(warehouse, state, acc, meta, span, stored))


def _left_out_meta(metadata: dict, lo: float | None, hi: float | None) -> dict:
    """The stored left-out metadata with the kept starts widened to ``[lo, hi]`` (the new
    jobs counted; the jobs left out are the same, :func:`_fences`)."""
    left = left_out(metadata)
    if left is None:
        return {}
    if lo is not None:
        kept = (min(left.kept[0], lo), max(left.kept[1], hi))
        left = LeftOut(left.jobs, left.bytes, left.first, left.last, kept)
    return left.metadata()


def _fences(rows: _NewRows, state: dict, where: str) -> tuple[float, float] | None:
    """The dense span's fences of all jobs now; raises :class:`_Rebuild` when a job the
    stored timeline read changes side (counted then, left out now, or the other way)."""
    bounds = dense_fences(rows, where, _ALL_JOBS)
    old = None if state["fences"] is None else tuple(state["fences"])
    if bounds != old:
        moved = (
            rows.connect()
            .execute(
                f"select count(*) from {_ALL_JOBS} j where {where} and "
                f"({outside_fences(old)}) <> ({outside_fences(bounds)})"
            )
            .fetchall()[0][0]
        )
        if moved:
            raise _Rebuild(f"the dense span moved: {moved:,} jobs change side")
    return bounds


@functools.cache
def _engine() -> duckdb.DuckDBPyConnection:
    """The process's DuckDB database for updates; each update works in a cursor of it
    (its own connection, its temporary views and registered tables its own)."""
    import duckdb

    # one thread: an update's queries are small, and waking a pool for each one costs
    # more than the query on a busy machine
    return duckdb.connect(config={"threads": 1})


_ALL_JOBS = "all_jobs"  # the view of every job, old and new, beside the new batches'
_JOB_COLUMNS = {"job_key", "start_time", "end_time", "known_at"}  # what the timeline reads
MAX_NEW_BYTES = 256 * 2**20  # new batches read into memory by an update, at most
MAX_ALL_JOBS = 4_000_000  # jobs whose times an update reads into memory (96 MB), at most


class _NewRows:
    """The rows of the ingest batches ``batches`` only, as DuckDB tables named like the
    warehouse's, each with every column the stored timeline's queries read (absent ones
    null), so :func:`~iosight.timeline._build.accumulate` reads them as a full build
    reads the warehouse; with ``all_jobs``, a view of every job too.

    The new rows are read into memory (a new batch is small, and a query over an Arrow
    table costs about a millisecond where one over wide Parquet files, such as job-total
    tables of 481 columns, re-reads their footers every time); batches of more than
    :data:`MAX_NEW_BYTES` on disk are left to a full rebuild, which streams.
    """

    def __init__(
        self,
        files: dict[str, list[os.DirEntry]],
        opened: dict[str, list[_Parquet]],
        schema: dict,
        all_jobs: bool = False,
    ) -> None:
        self.schema = {name: set(cols) for name, cols in schema.items()}
        self.full_schema = _checked_schema(schema, opened)
        names = {n: set().union(*(f.names for f in fs)) for n, fs in opened.items()}
        used = query_names(self.schema) | _JOB_COLUMNS
        self._con = _engine().cursor()  # a connection of its own costs 35-140 ms
        self._keep = []  # the registered Arrow tables live as long as this
        for name in {*opened, *self.schema}:  # a table the new batches lack: empty
            wanted = (self.schema.get(name, set()) | names.get(name, set())) & used
            wanted |= _JOB_COLUMNS if name == "jobs" else set()
            self._register(name, opened.get(name, []), sorted(wanted))
        if all_jobs:
            self._all_jobs([e.path for e in files["jobs"]])
        self.tables = list(opened)
        self._check_own_records()

    def _register(self, name: str, files: list, columns: list[str]) -> None:
        """Table ``name``: ``columns`` of the Parquet ``files``, those absent as null."""
        table = _read(files, columns)
        self._keep.append(table)
        self._con.register(name, table)

    def _all_jobs(self, paths: list[str]) -> None:
        """Table :data:`_ALL_JOBS`: the start, end and known-at times of every job (a
        ``known_at`` a file lacks: null, as in the warehouse's own ``jobs`` view). Read
        into memory (24 bytes a job) up to :data:`MAX_ALL_JOBS` jobs, where a query over
        them takes a few milliseconds; a view over the files beyond."""
        files = [_Parquet(p) for p in paths]
        if sum(f.rows for f in files) <= MAX_ALL_JOBS:
            return self._register(_ALL_JOBS, files, ["start_time", "end_time", "known_at"])
        known = any("known_at" in f.names for f in files)
        self._con.execute(
            f"create temp view {_ALL_JOBS} as select start_time, end_time, "
            f"{'known_at' if known else 'null::double as known_at'} "
            f"from {parquet_rows(paths)}"
        )

    def _check_own_records(self) -> None:
        """Raise :class:`_Rebuild` when a new batch holds records of other jobs."""
        others = [n for n in self.tables if n != "jobs"]
        if not others:
            return
        keys = " union all ".join(f'select job_key from "{n}"' for n in others)
        n = self._con.execute(
            f"select count(*) from ({keys}) where job_key not in (select job_key from jobs)"
        ).fetchall()[0][0]
        if n:
            raise _Rebuild(f"the new batches hold {n:,} records of jobs it already holds")

    def connect(self, names: Iterable[str] | None = None) -> duckdb.DuckDBPyConnection:
        """The connection of the new rows' views (``names``: as :meth:`Warehouse.connect`,
        every view is there already)."""
        return self._con

    def batches(self, query: str, rows: int):
        """:meth:`Warehouse.batches` of the new rows' tables."""
        return self._con.sql(query).to_arrow_reader(rows)

    def __enter__(self) -> _NewRows:
        return self

    def __exit__(self, *exc) -> None:
        self._con.close()  # its registered tables and views go with it
        self._keep.clear()

    def new_jobs(self, where: str, bounds, as_of: float | None) -> dict:
        """Of the new jobs: how many the timeline counts (``where``), their earliest and
        latest start, how many the fences ``bounds`` leave out, how many are undated."""
        row = self._con.execute(
            f"select count(*) filter ({where}), min(j.start_time) filter ({where}), "
            f"max(j.start_time) filter ({where}), "
            f"count(*) filter ({where} and {outside_fences(bounds)}), "
            f"count(*) filter ({undated_condition(as_of)}) from jobs j"
        ).fetchall()[0]
        return dict(zip(("counted", "lo", "hi", "outside", "undated"), row, strict=True))


class _Parquet:
    """A Parquet file opened once (its footer read), read column by column in this
    thread. pyarrow's low-level reader: ``ParquetFile`` also builds every column's
    nested paths in Python (2 ms for a 481-column job-total file), and a read on
    pyarrow's thread pool waits for threads on a busy machine."""

    def __init__(self, path: str) -> None:
        import pyarrow.parquet as pq

        self._reader = pq.ParquetReader()
        self._reader.open(path, pre_buffer=False)  # coalesced reads: for remote stores
        self._schema = self._reader.schema_arrow
        self.names = self._schema.names

    @property
    def rows(self) -> int:
        """The file's rows (its metadata's: read only when asked)."""
        return self._reader.metadata.num_rows

    @property
    def metadata(self) -> dict:
        """The file's key-value metadata (the newest run's: the timeline's)."""
        return dict(self._schema.metadata or {})

    def read(self, columns: list[str]) -> pa.Table:
        """The ``columns`` (all in the file)."""
        at = [self._reader.column_name_idx(c) for c in columns]
        return self._reader.read_all(column_indices=at, use_threads=False)


def _open(entries: list[os.DirEntry], cache: dict | None = None) -> list[_Parquet]:
    """The Parquet files ``entries``, opened: those in ``cache`` (by path) once."""
    return _open_paths([e.path for e in entries], cache)


def _open_paths(paths: list[str], cache: dict | None = None) -> list[_Parquet]:
    """The Parquet files at ``paths``, opened: those in ``cache`` (by path) once."""
    cache = {} if cache is None else cache
    return [cache.get(p) or cache.setdefault(p, _Parquet(p)) for p in paths]


def _open_new(
    warehouse: Warehouse, files: dict[str, list[os.DirEntry]], batches: set[str], cache: dict
) -> dict:
    """The files of the ingest batches ``batches``, opened (into ``cache``), by table, a
    ``job_totals`` file's narrow twin in its place (:func:`_narrow`); batches of more
    than :data:`MAX_NEW_BYTES` on disk are left to a full rebuild, which streams."""
    new = {n: [e for e in es if batch_of(e.name) in batches] for n, es in files.items()}
    new = {n: es for n, es in new.items() if es}
    if "job_totals" in new:
        new["job_totals"] = _narrow(warehouse, new["job_totals"])
    size = sum(e.stat().st_size for es in new.values() for e in es)
    if size > MAX_NEW_BYTES:
        raise _Rebuild(f"the new batches are large ({size / 2**20:,.0f} MiB on disk)")
    return {n: _open(es, cache) for n, es in new.items()}


def _narrow(warehouse: Warehouse, entries: list[os.DirEntry]) -> list[os.DirEntry]:
    """The ``io_totals`` file of the same name as each ``job_totals`` file of ``entries``
    (``iosight.warehouse._io_totals``: the same rows, and every column the timeline reads
    of them, ``TOTAL_COLUMNS``, without a footer of some 480 columns); the file itself
    where it has none (written by older code, or by another writer than ingest)."""
    twins = {e.name: e for e in warehouse.table_entries(IO_TOTALS)}
    return [twins.get(e.name, e) for e in entries]


def _checked_schema(schema: dict, opened: dict[str, list]) -> dict[str, set[str]]:
    """The columns the timeline reads, ``schema``, with those of the new files ``opened``;
    raises :class:`_Rebuild` when the new columns change how records are read."""
    stored = {name: set(cols) for name, cols in schema.items()}
    full = dict(stored)
    for name, fs in opened.items():
        if name != "jobs":
            full[name] = full.get(name, set()).union(*(f.names for f in fs))
    if full != stored and record_queries(full) != record_queries(stored):
        raise _Rebuild("the new batches bring columns that change how records are read")
    return full


def _read_columns(full: dict[str, set[str]], schema: dict) -> dict[str, set[str]]:
    """:func:`~iosight.timeline._build.read_columns` of ``full``; the stored ``schema``
    (what it recorded: the columns read) where the new batches brought no column."""
    stored = {name: set(cols) for name, cols in schema.items()}
    return stored if full == stored else read_columns(full)


def _read(files: list[_Parquet], columns: list[str]) -> pa.Table:
    """``columns`` of the opened Parquet ``files``, one table, those absent as null."""
    import pyarrow as pa

    parts = [f.read(sorted(set(columns) & set(f.names))) for f in files]
    if len(parts) == 1:  # one new file: a batch's (no concatenation to pay for)
        table = parts[0]
    else:
        table = pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})
    have = set(table.column_names)  # the names once: ``column_names`` builds a list a call
    for c in columns:
        if c not in have:  # null typed: compares with numbers and text
            table = table.append_column(c, pa.nulls(table.num_rows))
    return table


_PLAIN = {"jobs", "job_totals"}  # new batches of these tables only: binned in numpy


class _PlainJobs:
    """Jobs (``jobs`` rows) and their job totals as numpy arrays, binned as the full
    build bins job totals (``_job_totals_query``, ``_stream``) without SQL."""

    def __init__(self, jobs: pa.Table, totals: pa.Table | None = None) -> None:
        self.start, end, known = (_floats(jobs[c]) for c in ("start_time", "end_time", "known_at"))
        self.end = np.where(np.isnan(end), self.start, end)  # coalesce(end_time, start_time)
        self.known_at = np.where(np.isnan(known), end, known)  # KNOWN_AT
        self.totals = totals
        self.of = None if totals is None else _rows_of(totals["job_key"], jobs["job_key"])

    def counted(self, since: float | None, until: float | None, as_of: float | None) -> np.ndarray:
        """Which jobs the timeline counts: :func:`_job_condition` in numpy."""
        ok = ~np.isnan(self.start)
        if as_of is not None:
            ok &= self.known_at <= as_of
        if since is not None:
            ok &= self.start >= since
        if until is not None:
            ok &= self.start < until
        return ok

    def undated(self, as_of: float | None) -> np.ndarray:
        """Which jobs have no start (and are known by ``as_of``): ``undated_condition``."""
        known = True if as_of is None else self.known_at <= as_of
        return np.isnan(self.start) & known

    def bin(self, acc: Bins, counted: np.ndarray) -> None:
        """Add the ``counted`` jobs' totals and runs to ``acc``."""
        if self.totals is not None:
            rows = np.flatnonzero(counted[self.of])
            at = self.of[rows]
            cols = {c: _floats(self.totals[c])[rows] for c in self.totals.column_names[1:]}
            cols |= {"start_time": self.start[at], "end_time": self.end[at]}
            start, end, values = totals_intervals(cols)
            acc.add(start, end, values, list(range(len(VALUE_COLUMNS))))
        acc.add_jobs(self.start[counted], self.end[counted])


def _rows_of(keys, jobs) -> np.ndarray:
    """The row of ``jobs`` (job keys) of each of ``keys``; raises :class:`_Rebuild` when
    one is not there (a record of a job the timeline holds)."""
    if keys.equals(jobs):  # ingest writes both in the same order: nothing to look up
        return np.arange(len(keys))
    import pyarrow.compute as pc

    at = pc.index_in(keys, value_set=jobs)
    if at.null_count:
        n = at.null_count
        raise _Rebuild(f"the new batches hold {n:,} records of jobs it already holds")
    return at.to_numpy()


def _floats(column) -> np.ndarray:
    """A numeric Arrow column as float64, nulls as NaN."""
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def _plain_jobs(files: list[_Parquet]) -> _PlainJobs:
    """The times of the jobs in ``files`` (24 bytes a job)."""
    return _PlainJobs(_read(files, ["start_time", "end_time", "known_at"]))


def _plain_new(opened: dict[str, list], schema: dict) -> _PlainJobs:
    """The new jobs and the job-total columns the timeline reads of them."""
    jobs = _read(opened["jobs"], sorted(_JOB_COLUMNS))
    if "job_totals" not in opened:
        return _PlainJobs(jobs)
    wanted = [c for c in TOTAL_COLUMNS if c in schema.get("job_totals", ())]
    return _PlainJobs(jobs, _read(opened["job_totals"], ["job_key", *wanted]))


def _plain_span(options: dict, state: dict, kept, new: _PlainJobs, every) -> tuple | None:
    """The dense span's fences and quartiles with the new jobs ``new`` (``(None, None)``
    for ``span="all"``): from the stored :class:`~iosight.timeline._span.Quartiles`
    (``kept``; None: none) and the new jobs, else from every job's start
    (``every()``: the ``jobs`` files, opened; None when there are more than
    :data:`MAX_ALL_JOBS`). Raises :class:`_Rebuild` when a job the stored timeline read
    changes side (as :func:`_fences`)."""
    if options.get("span", "dense") != "dense":
        return None, None
    window = tuple(options.get(k) for k in ("since", "until", "as_of"))
    starts = new.start[new.counted(*window)]
    old = None if state["fences"] is None else tuple(state["fences"])
    if old is not None and kept is not None:
        quartiles = kept.add(starts)
        bounds = quartiles.fences()
        if bounds is not None and (bounds == old or not kept.moved(old, bounds)):
            return bounds, quartiles.near_to(bounds, starts)
    files = every()
    if sum(f.rows for f in files) > MAX_ALL_JOBS:
        return None
    jobs = _plain_jobs(files)
    starts = jobs.start[jobs.counted(*window)]
    bounds = fences_of(starts)
    if bounds != old:
        moved = np.count_nonzero(outside(starts, old) != outside(starts, bounds))
        if moved:
            raise _Rebuild(f"the dense span moved: {moved:,} jobs change side")
    return bounds, None if bounds is None else quartiles_of(starts, bounds)


def _write(
    warehouse: Warehouse, state: dict, acc: Bins, meta: dict, span: tuple[int, int], stored: _Stored
) -> int:
    """Add ``acc``'s bins to the ``stored`` runs they touch (``span``: the stored
    timeline's first lattice bin and how many) and commit those runs with the new
    metadata; returns the bins written (at least the last run is rewritten, as the
    newest file holds the timeline's metadata)."""
    first, n = span
    last = first + n - 1
    lo, hi = _touched(first, last, acc)
    new_first = min(first, acc.first) if len(acc.sums) else first
    new_last = max(last, acc.first + len(acc.sums) - 1) if len(acc.sums) else last
    runs = runs_of(lo, hi - lo + 1)
    a = max(runs.start * RUN_BINS, new_first)
    b = min(runs.stop * RUN_BINS - 1, new_last)
    sums = np.zeros((b - a + 1, len(VALUE_COLUMNS)))
    active = np.zeros(b - a + 1, dtype=np.int64)
    drop = [stored.runs[r] for r in runs if r in stored.runs]
    for name in drop:
        _add_stored(warehouse, name, first, a, (sums, active), stored.cache)
    if len(acc.sums):
        i = acc.first - a
        sums[i : i + len(acc.sums)] += acc.sums
        active[i : i + len(acc.active)] += acc.active
    state = {**state, "first": new_first, "bins": new_last - new_first + 1}
    meta = {**meta, STATE_KEY: json.dumps(state).encode()}
    width = acc.width
    table = assemble(new_first * width, width, sums, active, offset=a - new_first, metadata=meta)
    if drop == [stored.newest] and len(runs) == 1:  # the newest run alone: in its place
        replace_newest(warehouse, table, stored.newest)
    else:
        write_runs(warehouse, table, a, runs, drop)
    return table.num_rows


def _touched(first: int, last: int, acc: Bins) -> tuple[int, int]:
    """The lattice bins an update rewrites: those of the new jobs and the empty ones
    between them and the stored bins ``first .. last`` (none new: the last bin)."""
    if not len(acc.sums):
        return last, last
    lo, hi = acc.first, acc.first + len(acc.sums) - 1
    return (lo if lo <= last else last + 1), (hi if hi >= first else first - 1)


def _add_stored(
    warehouse: Warehouse, name: str, first: int, a: int, into: tuple, cache: dict
) -> None:
    """Add the rows of stored run file ``name`` (opened once: ``cache``) into ``into``,
    the arrays of sums and active jobs (row 0: bin ``a``)."""
    from iosight.timeline._stored import run_of

    sums, active = into
    file = _open_paths([run_path(warehouse, name)], cache)[0]
    table = file.read([*VALUE_COLUMNS, "active_jobs"])  # not the bins' starts and width
    start = max(run_of(name) * RUN_BINS, first) - a
    stop = start + table.num_rows
    if start < 0 or stop > len(sums):
        raise _Rebuild(f"its file {name} does not fit its run of bins")
    for i, col in enumerate(VALUE_COLUMNS):
        sums[start:stop, i] += table.column(col).to_numpy()
    active[start:stop] += table.column("active_jobs").to_numpy()
