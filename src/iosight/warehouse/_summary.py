"""One job's I/O summary, the way the Darshan paper's case studies read a log (§4).

Per module: bytes, operations, I/O time, access-size histograms; per file: size,
I/O volume, time, operations and seeks (the HMMER table); for Lustre files, ranks
and I/O time per OST (the HACC-IO OST occupancy view). Everything is SQL over the
warehouse, so it works the same for a log read yesterday or a million of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from iosight._errors import IosightError
from iosight.darshan import ACCESS_SIZE_BINS, warnings_in
from iosight.warehouse._store import Warehouse

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
    """Tables describing one job (DataFrames, ready to print or plot).

    ``job``: the job's ``jobs`` row; ``modules``: one row per module (bytes, operations, I/O
    time); ``access_sizes``: the access-size histogram per module; ``files``: one row per file;
    ``osts``: Lustre OSTs and the job's ranks and I/O time on each; ``notes``: what the summary
    should be read with (partial modules, SYNTHETIC data).
    """

    job: pd.Series
    modules: pd.DataFrame
    access_sizes: pd.DataFrame
    files: pd.DataFrame
    osts: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The summary as one document of raw values (the ``iosight job --format json``
        document less its insights): ``job`` (the jobs row), ``notes``, and each table
        as a list of records (the schema is in docs/job.md)."""
        return {
            "job": self.job.to_dict(),
            "notes": list(self.notes),
            **{name: getattr(self, name).to_dict("records") for name in _TABLES},
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
    hits = warehouse.sql(query.format("cast(jobid as varchar) = ?"), [ident])
    if hits.empty:
        hits = warehouse.sql(query.format("job_key = ?"), [ident])
    if hits.empty and len(ident) >= MIN_KEY_PREFIX:
        hits = warehouse.sql(query.format("starts_with(job_key, ?)"), [ident])
    if hits.empty:
        short = (
            f" (a job_key prefix needs at least {MIN_KEY_PREFIX} characters)"
            if len(ident) < MIN_KEY_PREFIX
            else ""
        )
        where = f"{warehouse.path}" if table == "jobs" else f"{table} of {warehouse.path}"
        raise IosightError(f"no job with id or key {ident!r} in {where}{short}")
    if len(hits) > 1:
        keys = ", ".join(hits["job_key"].str[:12].head(5))
        raise IosightError(
            f"{len(hits)} jobs match {ident!r} ({keys}...); pass a job_key prefix instead"
        )
    return str(hits["job_key"].iloc[0])


def job_summary(warehouse: Warehouse, ident: str) -> JobSummary:
    """Summarise one job (by job id or job_key prefix) from the warehouse tables.

    ``warehouse``: the warehouse read; ``ident``: the job: its job id, job_key or a job_key
    prefix (:func:`find_job`).
    """
    key = find_job(warehouse, ident)
    job = warehouse.sql("select * from jobs where job_key = ?", [key]).iloc[0]
    tables = set(warehouse.tables())
    nprocs = _nprocs(job)
    return JobSummary(
        job=job,
        modules=_module_rows(warehouse, key, tables, nprocs),
        access_sizes=_access_sizes(warehouse, key, tables),
        files=_files(warehouse, key, tables, nprocs),
        osts=_osts(warehouse, key, tables, nprocs),
        notes=_notes(job),
    )


def _nprocs(job: pd.Series) -> int | None:
    """The job's process count, or None when its source does not say (or says nonsense)."""
    n = job.get("nprocs")
    return int(n) if n is not None and pd.notna(n) and n > 0 else None


# ranks that touched a group of records: Darshan reduces a file every rank opened into one
# shared record of rank -1 (Snyder et al. 2016, §II), which stands for all nprocs ranks
_RANKS = "case when bool_or({r} = -1) then cast(? as bigint) else count(distinct {r}) end"


def _cols(warehouse: Warehouse, table: str) -> set[str]:
    return set(warehouse.column_names(table))


def _count(expr: str) -> str:
    """SQL summing counter ``expr`` as an integer (DuckDB's sum of BIGINTs is a HUGEINT,
    which pandas turns into floats): JSON and CSV keep counts whole."""
    return f"cast(sum({expr}) as bigint)"


def _module_rows(
    warehouse: Warehouse, key: str, tables: set[str], nprocs: int | None
) -> pd.DataFrame:
    rows = []
    for table, p in _LAYERS.items():
        if table not in tables:
            continue
        cols = _cols(warehouse, table)
        need = [
            f"{p}_BYTES_READ",
            f"{p}_BYTES_WRITTEN",
            f"{p}_F_READ_TIME",
            f"{p}_F_WRITE_TIME",
            f"{p}_F_META_TIME",
        ]
        if not set(need) <= cols:
            continue
        reads = _ops(cols, p, "READ")
        writes = _ops(cols, p, "WRITE")
        df = warehouse.sql(
            f"select count(*) records, count(distinct record_id) files, "
            f"{_count(f'{p}_BYTES_READ')} bytes_read, "
            f"{_count(f'{p}_BYTES_WRITTEN')} bytes_written, "
            f"{_count(reads)} reads, {_count(writes)} writes, "
            f"sum({p}_F_READ_TIME) read_time, sum({p}_F_WRITE_TIME) write_time, "
            f'sum({p}_F_META_TIME) meta_time from "{table}" where job_key = ?',
            [key],
        )
        if df["records"].iloc[0] > 0:
            rows.append(df.assign(module=p))
    if not rows:
        return pd.DataFrame()
    out = pd.concat(rows, ignore_index=True)
    out["io_time"] = out["read_time"] + out["write_time"] + out["meta_time"]
    out["io_time_per_rank"] = out["io_time"] / nprocs if nprocs else float("nan")
    return out[["module"] + [c for c in out.columns if c != "module"]]


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


def _access_sizes(warehouse: Warehouse, key: str, tables: set[str]) -> pd.DataFrame:
    rows = []
    for table, p in (("posix", "POSIX"), ("mpiio", "MPIIO")):
        if table not in tables:
            continue
        cols = _cols(warehouse, table)
        for what in ("READ", "WRITE"):
            prefix = f"{p}_SIZE_{what}_AGG_" if p == "MPIIO" else f"{p}_SIZE_{what}_"
            names = [prefix + b for b in ACCESS_SIZE_BINS if prefix + b in cols]
            if not names:
                continue
            sums = ", ".join(_count(f'"{n}"') + f' "{n[len(prefix) :]}"' for n in names)
            df = warehouse.sql(
                f'select count(*) as _n, {sums} from "{table}" where job_key = ?', [key]
            )
            if df["_n"].iloc[0]:
                rows.append(df.drop(columns="_n").assign(module=p, op=what.lower()))
    if not rows:
        return pd.DataFrame()
    out = pd.concat(rows, ignore_index=True)
    bins = [b for b in ACCESS_SIZE_BINS if b in out.columns]
    return out[["module", "op"]].join(out[bins].fillna(0).astype("int64"))


def _files(warehouse: Warehouse, key: str, tables: set[str], nprocs: int | None) -> pd.DataFrame:
    if "posix" not in tables:
        return pd.DataFrame()
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
    df = warehouse.sql(
        f"""select {name} as file, {_RANKS.format(r="p.rank")} as ranks,
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
            group by 1 order by io_time desc""",
        [nprocs, key],
    )
    return _with_mean_per_rank(df)


def _with_mean_per_rank(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``io_time_per_rank`` (its ``io_time``, summed over ranks, over its
    ``ranks``) beside ``io_time``: a sum over 2048 ranks is no wall-clock time."""
    mean = df["io_time"] / df["ranks"].where(df["ranks"] > 0)
    df.insert(df.columns.get_loc("io_time") + 1, "io_time_per_rank", mean.astype(float))
    return df


def _osts(warehouse: Warehouse, key: str, tables: set[str], nprocs: int | None) -> pd.DataFrame:
    if "lustre" not in tables or "posix" not in tables:
        return pd.DataFrame()
    if "ost_ids" not in _cols(warehouse, "lustre"):
        return pd.DataFrame()
    df = warehouse.sql(
        f"""with l as (
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
           group by l.ost order by l.ost""",
        [key, key, nprocs],
    )
    return _with_mean_per_rank(df)


def _notes(job: pd.Series) -> list[str]:
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
