"""One job's I/O summary, the way the Darshan paper's case studies read a log (§4).

Per module: bytes, operations, I/O time, access-size histograms; per file: size,
I/O volume, time, operations and seeks (the HMMER table); for Lustre files, ranks
and I/O time per OST (the HACC-IO OST occupancy view). Everything is SQL over the
warehouse, so it works the same for a log read yesterday or a million of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from iosight._errors import IosightError
from iosight._units import missing
from iosight.darshan import ACCESS_SIZE_BINS, warnings_in
from iosight.warehouse._jobfiles import for_job
from iosight.warehouse._rows import records_of
from iosight.warehouse._store import Warehouse

if TYPE_CHECKING:
    import pandas as pd

# a summary's table: DataFrames by default, plain Rows for a command that prints them
Table = Any  # pd.DataFrame | Rows

# module table -> (counter prefix, name of its read/write byte counters)
_LAYERS = {
    "posix": "POSIX",
    "mpiio": "MPIIO",
    "stdio": "STDIO",
    "h5d": "H5D",
    "pnetcdf_var": "PNETCDF_VAR",
    "dfs": "DFS",
    "daos": "DAOS",
}


@dataclass
class JobSummary:
    """Tables describing one job (DataFrames, ready to print or plot; or plain
    :class:`Rows` where :func:`job_summary` was asked for them).

    ``job``: the job's ``jobs`` row (a Series, or a dict beside Rows); ``modules``: one row
    per module (bytes, operations, I/O time); ``access_sizes``: the access-size histogram per
    module; ``files``: one row per file; ``osts``: Lustre OSTs and the job's ranks and I/O
    time on each; ``notes``: what the summary should be read with (partial modules,
    SYNTHETIC data).
    """

    job: pd.Series | dict
    modules: Table
    access_sizes: Table
    files: Table
    osts: Table
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The summary as one document of raw values (the ``iosight job --format json``
        document less its insights): ``job`` (the jobs row), ``notes``, and each table
        as a list of records (the schema is in docs/job.md)."""
        return {
            "job": self.job if isinstance(self.job, dict) else self.job.to_dict(),
            "notes": list(self.notes),
            **{name: records_of(getattr(self, name)) for name in _TABLES},
        }


# the tables of a summary, in the order they are shown
_TABLES = ("modules", "access_sizes", "files", "osts")


# shortest job_key prefix looked up: shorter ones would match keys by chance (a key is
# hex, so a mistyped job id of a few digits is one too)
MIN_KEY_PREFIX = 6


def find_job(warehouse: Warehouse, ident: str, *, table: str = "jobs", hint: str = "") -> str:
    """The job_key for a job id, a job_key, or a job_key prefix (at least
    :data:`MIN_KEY_PREFIX` characters, taken literally); a unique match is required.

    A job id is tried first: an id that exists never resolves to another job whose key
    happens to start with the same digits; then a whole key (of any length), then a prefix.

    ``warehouse`` is searched for ``ident`` in ``table``: ``jobs``, or ``sim_jobs`` for
    similarity (which also holds jobs from codings files and monitoring); ``hint`` says
    what to run when that table has not been written yet.
    """
    warehouse.require(table, hint)
    if not ident.strip():
        raise IosightError("name a job: its job id or a job_key prefix (got an empty one)")
    query = f'select job_key from "{table}" where {{}} order by job_key'

    def keys(where: str, reader: Warehouse = warehouse) -> list[str]:
        return [k for (k,) in reader.rows(query.format(where), [ident]).values]

    by_id = _may_be_jobid(warehouse, table, ident) and keys("cast(jobid as varchar) = ?")
    # a whole key is read from the files that may hold it (where the reader has the index)
    hits = by_id or keys("job_key = ?", for_job(warehouse, ident))
    if not hits and len(ident) >= MIN_KEY_PREFIX:
        hits = keys("starts_with(job_key, ?)")
    if not hits:
        short = (
            f" (a job_key prefix needs at least {MIN_KEY_PREFIX} characters)"
            if len(ident) < MIN_KEY_PREFIX
            else ""
        )
        where = f"{warehouse.path}" if table == "jobs" else f"{table} of {warehouse.path}"
        raise IosightError(f"no job with id or key {ident!r} in {where}{short}")
    if len(hits) > 1:
        keys = ", ".join(k[:12] for k in hits[:5])
        raise IosightError(
            f"{len(hits)} jobs match {ident!r} ({keys}...); pass a job_key prefix instead"
        )
    return str(hits[0])


_INTEGERS = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
     "UINTEGER", "UBIGINT", "UHUGEINT"}
)  # fmt: skip


def _may_be_jobid(warehouse: Warehouse, table: str, ident: str) -> bool:
    """Whether ``ident`` can equal a job id of ``table`` read as text: an integer job id
    reads as digits alone, so a job_key (hex: letters, but for one in millions) skips the
    scan of every job id (the cast of a million of them on every served job page). The
    column's type is read from the table's view (a served warehouse's once per set of
    files), not from a row: a view scoped to one job may hold none."""
    if re.fullmatch(r"-?[0-9]+", ident):
        return True

    def jobid_type() -> str | None:
        query = f"select column_type from (describe \"{table}\") where column_name = 'jobid'"
        got = warehouse.rows(query).values
        return got[0][0] if got else None

    memo = getattr(warehouse, "memo", None)  # a served warehouse's: once per set of files
    kind = memo(f"typeof {table}.jobid", jobid_type) if memo else jobid_type()
    return kind not in _INTEGERS


def job_summary(warehouse: Warehouse, ident: str, *, rows: bool = False) -> JobSummary:
    """Summarise one job (by job id or job_key prefix) from the warehouse tables.

    ``warehouse``: the warehouse read; ``ident``: the job: its job id, job_key or a job_key
    prefix (:func:`find_job`); ``rows``: the tables as plain :class:`Rows` and the job as a
    dict (no pandas import: what a command that prints them needs), else DataFrames.
    Every table is one SQL query, the same either way.
    """
    key, got = _job_row(warehouse, ident, rows)
    warehouse = for_job(warehouse, key)  # every query below is of this one job
    fetch: Callable[[str, list], Table] = warehouse.rows if rows else warehouse.sql
    job = got.records()[0] if rows else got.iloc[0]
    tables = set(warehouse.tables())
    nprocs = _nprocs(job)
    return JobSummary(
        job=job,
        modules=fetch(*_module_rows(warehouse, key, tables, nprocs)),
        access_sizes=fetch(*_access_sizes(warehouse, key, tables)),
        files=fetch(*_files(key, tables, nprocs)),
        osts=fetch(*_osts(warehouse, key, tables, nprocs)),
        notes=_notes(job),
    )


def _job_row(warehouse: Warehouse, ident: str, rows: bool) -> tuple[str, Table]:
    """The job's key and its ``jobs`` row. A whole key that can be no job id is read with
    its row at once (from the files that may hold it, where the reader has the key
    index): ``jobs`` is sorted by start time, so a key's lookup scans every key (44 ms of
    CPU at a million jobs), and the served Job page has found the key once already."""
    warehouse.require("jobs")
    query = "select * from jobs where job_key = ?"
    if ident and not _may_be_jobid(warehouse, "jobs", ident):
        scope = for_job(warehouse, ident)
        got = (scope.rows if rows else scope.sql)(query, [ident])
        if len(got):
            return ident, got
    key = find_job(warehouse, ident)
    scope = for_job(warehouse, key)
    return key, (scope.rows if rows else scope.sql)(query, [key])


def _nprocs(job) -> int | None:
    """The job's process count, or None when its source does not say (or says nonsense)."""
    n = job.get("nprocs")
    return int(n) if not missing(n) and n > 0 else None


# ranks that touched a group of records: Darshan reduces a file every rank opened into one
# shared record of rank -1 (Snyder et al. 2016, §II), which stands for all nprocs ranks
_RANKS = "case when bool_or({r} = -1) then cast(? as bigint) else count(distinct {r}) end"
# a table the job has no data for: no row (and, as a DataFrame, no column)
_NOTHING = ("select 1 as _ where false", [])


def _cols(warehouse: Warehouse, table: str) -> set[str]:
    return set(warehouse.column_names(table))


def _count(expr: str) -> str:
    """SQL summing counter ``expr`` as an integer (DuckDB's sum of BIGINTs is a HUGEINT,
    which pandas turns into floats): JSON and CSV keep counts whole."""
    return f"cast(sum({expr}) as bigint)"


def _in_order(parts: list[str], columns: str) -> str:
    """The union of ``parts`` (each with an ``_o`` column) in ``_o`` order, as ``columns``."""
    return f"select {columns} from ({' union all '.join(parts)}) order by _o"


def _module_rows(
    warehouse: Warehouse, key: str, tables: set[str], nprocs: int | None
) -> tuple[str, list]:
    """The per-module query (bytes, operations, times) and its parameters."""
    parts, params = [], []
    layers = []
    for table, p in _LAYERS.items():
        if table not in tables:
            continue
        cols = _cols(warehouse, table)
        times = [f"{p}_F_READ_TIME", f"{p}_F_WRITE_TIME", f"{p}_F_META_TIME"]
        if {f"{p}_BYTES_READ", f"{p}_BYTES_WRITTEN", *times} <= cols:
            layers.append((table, p, cols, times))
    for table, p, cols, times in _parts_held(warehouse, layers):
        parts.append(
            f"select {len(parts)} _o, '{p}' module, count(*) records, "
            f"count(distinct record_id) files, {_count(f'{p}_BYTES_READ')} bytes_read, "
            f"{_count(f'{p}_BYTES_WRITTEN')} bytes_written, "
            f"{_count(_ops(cols, p, 'READ'))} reads, {_count(_ops(cols, p, 'WRITE'))} writes, "
            f"sum({times[0]}) read_time, sum({times[1]}) write_time, "
            f'sum({times[2]}) meta_time from "{table}" where job_key = ? having count(*) > 0'
        )
        params.append(key)
    if not parts:
        return _NOTHING
    io_time = "read_time + write_time + meta_time"
    columns = (
        "module, records, files, bytes_read, bytes_written, reads, writes, read_time, "
        f"write_time, meta_time, {io_time} as io_time, ({io_time}) / ?::double as io_time_per_rank"
    )
    return _in_order(parts, columns), [nprocs, *params]  # the select list comes first


def _parts_held(warehouse: Warehouse, parts: list[tuple]) -> list[tuple]:
    """The ``parts`` of a union (each a tuple whose first item is its table) whose table
    may hold rows of the job (:meth:`~Warehouse.may_hold`); the first part where none
    may, so that the query still has its columns. The others would add no row (each
    keeps only a non-empty group), and a job's reader binds each table it names."""
    held = [part for part in parts if warehouse.may_hold(part[0])]
    return held or parts[:1]


def _ops(cols: set[str], p: str, what: str) -> str:
    names = [
        c
        for c in (
            f"{p}_{what}S",
            f"{p}_INDEP_{what}S",
            f"{p}_COLL_{what}S",
            f"{p}_SPLIT_{what}S",
            f"{p}_NB_{what}S",
        )
        if c in cols
    ]
    return " + ".join(names) if names else "0"


def _access_sizes(warehouse: Warehouse, key: str, tables: set[str]) -> tuple[str, list]:
    """The access-size histograms' query (a row per module and operation, a column per
    bin any of them has, 0 where one has not) and its parameters."""
    found = []  # (module, op, {bin: column})
    for table, p in (("posix", "POSIX"), ("mpiio", "MPIIO")):
        cols = _cols(warehouse, table) if table in tables else set()
        for what in ("READ", "WRITE"):
            prefix = f"{p}_SIZE_{what}_AGG_" if p == "MPIIO" else f"{p}_SIZE_{what}_"
            names = {b: prefix + b for b in ACCESS_SIZE_BINS if prefix + b in cols}
            if names:
                found.append((table, p, what.lower(), names))
    if not found:
        return _NOTHING
    bins = [b for b in ACCESS_SIZE_BINS if any(b in names for *_, names in found)]
    found = _parts_held(warehouse, found)
    parts = [
        f"select {i} _o, '{p}' module, '{op}' op, "
        + ", ".join(_bin_count(names.get(b), b) for b in bins)
        + f' from "{table}" where job_key = ? having count(*) > 0'
        for i, (table, p, op, names) in enumerate(found)
    ]
    return _in_order(parts, "module, op, " + ", ".join(f'"{b}"' for b in bins)), [key] * len(found)


def _bin_count(column: str | None, name: str) -> str:
    """SQL of one access-size bin: the sum of its ``column``, 0 without one."""
    quoted = f'"{column}"'
    total = f"coalesce({_count(quoted)}, 0)" if column else "0::bigint"
    return f'{total} as "{name}"'


def _files(key: str, tables: set[str], nprocs: int | None) -> tuple[str, list]:
    """The per-file query (POSIX records, by I/O time) and its parameters."""
    if "posix" not in tables:
        return _NOTHING
    name = (
        "coalesce(n.name, cast(p.record_id as varchar))"
        if "names" in tables
        else "cast(p.record_id as varchar)"
    )
    join = (
        "left join names n on n.job_key = p.job_key and n.record_id = p.record_id"
        if "names" in tables
        else ""
    )
    query = f"""select {name} as file, {_RANKS.format(r="p.rank")} as ranks,
               max(POSIX_MAX_BYTE_READ + 1) filter (where POSIX_BYTES_READ > 0) as read_extent,
               max(POSIX_MAX_BYTE_WRITTEN + 1) as size_estimate,
               {_count("POSIX_BYTES_READ")} as bytes_read,
               {_count("POSIX_BYTES_WRITTEN")} as bytes_written,
               sum(POSIX_F_READ_TIME + POSIX_F_WRITE_TIME + POSIX_F_META_TIME) as io_time,
               {_count("POSIX_READS + POSIX_WRITES + POSIX_OPENS + POSIX_SEEKS + POSIX_STATS")}
                   as operations,
               {_count("POSIX_SEEKS")} as seeks
            from posix p {join}
            where p.job_key = ?
            group by 1"""
    columns = "file, ranks, read_extent, size_estimate, bytes_read, bytes_written"
    order = "io_time desc"
    return _with_mean_per_rank(query, columns, "operations, seeks", order), [nprocs, key]


def _with_mean_per_rank(query: str, before: str, after: str, order: str) -> str:
    """``query``'s columns ``before``, ``io_time``, then ``io_time_per_rank`` (its
    ``io_time``, summed over ranks, over its ``ranks``: a sum over 2048 ranks is no
    wall-clock time), then ``after``; in ``order``."""
    mean = "io_time / (case when ranks > 0 then ranks end)::double as io_time_per_rank"
    return f"select {before}, io_time, {mean}, {after} from ({query}) order by {order}"


def _osts(warehouse: Warehouse, key: str, tables: set[str], nprocs: int | None) -> tuple[str, list]:
    """The per-OST query (files, ranks, I/O time and bytes on each) and its parameters."""
    if "lustre" not in tables or "posix" not in tables:
        return _NOTHING
    if "ost_ids" not in _cols(warehouse, "lustre"):
        return _NOTHING
    query = f"""with l as (
               select record_id, unnest(ost_ids) as ost from lustre where job_key = ?
           ), p as (
               select record_id, rank,
                      POSIX_F_READ_TIME + POSIX_F_WRITE_TIME + POSIX_F_META_TIME as t,
                      POSIX_BYTES_READ + POSIX_BYTES_WRITTEN as b
               from posix where job_key = ?
           )
           select l.ost, count(distinct l.record_id) as files,
                  {_RANKS.format(r="p.rank")} as ranks, sum(p.t) as io_time,
                  {_count("p.b")} as bytes
           from l join p using (record_id)
           group by l.ost"""
    return _with_mean_per_rank(query, "ost, files, ranks", "bytes", "ost"), [key, key, nprocs]


def _notes(job) -> list[str]:
    notes = []
    if bool(job.get("partial")):
        notes.append(
            f"modules {job['partial_modules']} ran out of record memory: their data is partial"
        )
    if bool(job.get("synthetic")):
        notes.append("SYNTHETIC job: generated by iosight, not measured")
    # what a reader skipped or could not read (a module too new, a cell not a number)
    notes += warnings_in(str(job.get("metadata") or ""))
    return notes
