"""The data the rules read, for many jobs at once: three frames built by SQL.

``jobs``: one row per job, the ``jobs`` columns plus the job totals every source
has (``job_totals``) and the per-job sums of the per-file frame. ``files``: one row
per (job, file) from the POSIX records, where the job has records (not for job-total
tables), with the per-file quantities Drishti's record-level checks use. ``dxt``:
per (job, op, rank) counts of small traced segments, where DXT is present.

A counter the job's source does not hold is null in ``jobs``, never 0: a published
job-total table may carry only some of Darshan's counters (the Summit 2021 CSV has no
SEQ/CONSEC ones), and reading the missing ones as 0 would call every read random.
:func:`lacking` tells which jobs cannot be judged on a rule's counters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from iosight._units import human_number
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse

KEYS_VIEW = "_insight_keys"
# Darshan's access-size bins below 1 MiB, the ones Drishti counts as small requests
SMALL_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")

# job_totals column (without ``total_``) -> frame column, all summed by Darshan's reduction
_TOTALS = {
    "POSIX_OPENS": "posix_opens",
    "POSIX_READS": "reads",
    "POSIX_WRITES": "writes",
    "POSIX_BYTES_READ": "bytes_read",
    "POSIX_BYTES_WRITTEN": "bytes_written",
    "POSIX_F_READ_TIME": "read_time",
    "POSIX_F_WRITE_TIME": "write_time",
    "POSIX_F_META_TIME": "meta_time",
    "POSIX_MEM_NOT_ALIGNED": "mem_not_aligned",
    "POSIX_FILE_NOT_ALIGNED": "file_not_aligned",
    "POSIX_CONSEC_READS": "consec_reads",
    "POSIX_SEQ_READS": "seq_reads",
    "POSIX_CONSEC_WRITES": "consec_writes",
    "POSIX_SEQ_WRITES": "seq_writes",
    "STDIO_BYTES_READ": "stdio_bytes_read",
    "STDIO_BYTES_WRITTEN": "stdio_bytes_written",
    "STDIO_F_READ_TIME": "stdio_read_time",
    "STDIO_F_WRITE_TIME": "stdio_write_time",
    "STDIO_F_META_TIME": "stdio_meta_time",
    "MPIIO_BYTES_READ": "mpiio_bytes_read",
    "MPIIO_BYTES_WRITTEN": "mpiio_bytes_written",
    "MPIIO_INDEP_READS": "indep_reads",
    "MPIIO_INDEP_WRITES": "indep_writes",
    "MPIIO_COLL_READS": "coll_reads",
    "MPIIO_COLL_WRITES": "coll_writes",
    "MPIIO_NB_READS": "nb_reads",
    "MPIIO_NB_WRITES": "nb_writes",
    "MPIIO_F_READ_TIME": "mpiio_read_time",
    "MPIIO_F_WRITE_TIME": "mpiio_write_time",
}
# frame column -> the Darshan counter(s) it comes from, or the jobs column
_SMALL = {f"small_{op.lower()}s": f"POSIX_SIZE_{op}_* below 1 MiB" for op in ("READ", "WRITE")}
COUNTERS = (
    {name: counter for counter, name in _TOTALS.items()}
    | _SMALL
    | {"nprocs": "nprocs (the job's process count)"}
)
# frame column -> the module that records it (no module: a jobs column)
_MODULE = {name: COUNTERS[name].split("_")[0] for name in [*_TOTALS.values(), *_SMALL]}


@dataclass
class JobData:
    """What the rules see: per-job, per-file and DXT frames for one batch of jobs."""

    jobs: pd.DataFrame
    files: pd.DataFrame
    dxt: pd.DataFrame


def load(wh: Warehouse, keys: list[str], t: Thresholds) -> JobData:
    """Build the frames for the jobs in ``keys`` (SQL over the warehouse, no per-job loop)."""
    con = wh.connect()
    con.register(KEYS_VIEW, pa.table({"job_key": pa.array(keys, pa.string())}))
    try:
        tables = set(wh.tables())
        jobs = _jobs(wh, tables)
        files = _files(wh, tables, t)
        dxt = _dxt(wh, tables, t)
    finally:
        con.unregister(KEYS_VIEW)
    jobs = _add_record_sums(jobs, files)
    return JobData(jobs=jobs, files=files, dxt=dxt)


def _cols(wh: Warehouse, table: str) -> set[str]:
    return set(wh.column_names(table))


def _jobs(wh: Warehouse, tables: set[str]) -> pd.DataFrame:
    have = _cols(wh, "job_totals") if "job_totals" in tables else set()

    def tot(counter: str) -> str:
        return f't."total_{counter}"' if f"total_{counter}" in have else "null"

    small = {
        op: " + ".join(tot(f"POSIX_SIZE_{op}_{b}") for b in SMALL_BINS) for op in ("READ", "WRITE")
    }
    select = [f"{tot(c)}::double as {name}" for c, name in _TOTALS.items()]
    select += [f"({small['READ']})::double as small_reads"]
    select += [f"({small['WRITE']})::double as small_writes"]
    join = "left join job_totals t using (job_key)" if have else ""
    # nprocs -1 is the jobs table's "not known": null here, like a missing counter
    return wh.sql(
        f"""select j.job_key, j.jobid, j.exe, j.uid,
                  case when j.nprocs >= 1 then j.nprocs end as nprocs, j.start_time, j.run_time,
                  j.source_format, coalesce(j.modules, '') as modules,
                  {", ".join(select)}
           from jobs j join {KEYS_VIEW} using (job_key) {join}"""
    )


def _files(wh: Warehouse, tables: set[str], t: Thresholds) -> pd.DataFrame:
    if "posix" not in tables:
        return pd.DataFrame(columns=["job_key", "record_id", "name"])
    have = _cols(wh, "posix")

    def c(name: str) -> str:
        return f'p."{name}"' if name in have else "null"

    small = {
        op: " + ".join(f"coalesce({c(f'POSIX_SIZE_{op}_{b}')}, 0)" for b in SMALL_BINS)
        for op in ("READ", "WRITE")
    }
    name = (
        "coalesce(n.name, cast(p.record_id as varchar))"
        if "names" in tables
        else ("cast(p.record_id as varchar)")
    )
    join = (
        "left join names n on n.job_key = p.job_key and n.record_id = p.record_id"
        if "names" in tables
        else ""
    )
    shared = "p.rank = -1"
    indep = "p.rank <> -1"
    meta = float(t.metadata_time_rank)
    return wh.sql(
        f"""select p.job_key, p.record_id, any_value({name}) as name,
               bool_or({shared}) as shared, count(*) filter (where {indep}) as ranks,
               sum({c("POSIX_READS")})::double as reads,
               sum({c("POSIX_WRITES")})::double as writes,
               sum({small["READ"]})::double as small_reads,
               sum({small["WRITE"]})::double as small_writes,
               sum({c("POSIX_READS")} - {c("POSIX_SEQ_READS")})::double as random_reads,
               sum({c("POSIX_WRITES")} - {c("POSIX_SEQ_WRITES")})::double as random_writes,
               sum({c("POSIX_BYTES_READ")})::double as bytes_read,
               sum({c("POSIX_BYTES_WRITTEN")})::double as bytes_written,
               max({c("POSIX_MAX_BYTE_READ")})::double + 1 as read_extent,
               max({c("POSIX_MAX_BYTE_WRITTEN")})::double + 1 as write_extent,
               sum({c("POSIX_F_READ_TIME")}) as read_time,
               sum({c("POSIX_F_WRITE_TIME")}) as write_time,
               sum({c("POSIX_F_META_TIME")}) as meta_time,
               count(*) filter (where {c("POSIX_F_META_TIME")} > {meta}) as slow_meta_records,
               coalesce(sum({c("POSIX_F_META_TIME")})
                   filter (where {c("POSIX_F_META_TIME")} > {meta}), 0) as slow_meta_time,
               max(abs({c("POSIX_SLOWEST_RANK_BYTES")} - {c("POSIX_FASTEST_RANK_BYTES")}))
                   filter (where {shared})::double as rank_bytes_gap,
               max(abs({c("POSIX_F_SLOWEST_RANK_TIME")} - {c("POSIX_F_FASTEST_RANK_TIME")}))
                   filter (where {shared}) as rank_time_gap,
               max({c("POSIX_BYTES_WRITTEN")}) filter (where {indep})::double as rank_written_max,
               min({c("POSIX_BYTES_WRITTEN")}) filter (where {indep})::double as rank_written_min,
               max({c("POSIX_BYTES_READ")}) filter (where {indep})::double as rank_read_max,
               min({c("POSIX_BYTES_READ")}) filter (where {indep})::double as rank_read_min,
               arg_max(p.rank, {c("POSIX_BYTES_WRITTEN")}) filter (where {indep})
                   as rank_written_most,
               arg_min(p.rank, {c("POSIX_BYTES_WRITTEN")}) filter (where {indep})
                   as rank_written_least,
               arg_max(p.rank, {c("POSIX_BYTES_READ")}) filter (where {indep}) as rank_read_most,
               arg_min(p.rank, {c("POSIX_BYTES_READ")}) filter (where {indep}) as rank_read_least
           from posix p join {KEYS_VIEW} k on k.job_key = p.job_key {join}
           group by p.job_key, p.record_id"""
    )


def _dxt(wh: Warehouse, tables: set[str], t: Thresholds) -> pd.DataFrame:
    if "dxt_posix" not in tables:
        return pd.DataFrame(columns=["job_key", "op", "rank", "small"])
    return wh.sql(
        f"""select d.job_key, d.op, d.rank, count(*) as small
            from dxt_posix d join {KEYS_VIEW} using (job_key)
            where d.length < {int(t.small_bytes)}
            group by all order by d.job_key, d.op, small desc, d.rank"""
    )


def _add_record_sums(jobs: pd.DataFrame, files: pd.DataFrame) -> pd.DataFrame:
    """Per-job sums of the per-file frame; ``has_records`` tells the rules they may look."""
    counts = files.groupby("job_key").size().rename("posix_files")
    jobs = jobs.merge(counts, left_on="job_key", right_index=True, how="left")
    jobs["posix_files"] = jobs["posix_files"].fillna(0).astype(np.int64)
    jobs["has_records"] = jobs["posix_files"] > 0
    # a job with POSIX activity in its totals but no records: record rules cannot look
    active = (
        jobs["posix_opens"].fillna(0) + jobs["reads"].fillna(0) + jobs["writes"].fillna(0)
    ) > 0
    jobs["records_missing"] = active & ~jobs["has_records"]
    return jobs


def lacking(jobs: pd.DataFrame, columns: tuple[str, ...]) -> np.ndarray:
    """Per job, whether its source lacks one of ``columns`` (frame columns of ``jobs``).

    A module's counter is lacking when it is null while another counter of that module
    is not: the source recorded the module but not this counter. A module the job did
    not use has every counter null; its rules have nothing to judge, so they are
    evaluated (and do not fire). A column of no module (``nprocs``) lacks when null.
    """
    out = np.zeros(len(jobs), bool)
    for col in columns:
        null = jobs[col].isna().to_numpy()
        module = _MODULE.get(col)
        if module is not None:
            peers = [c for c, m in _MODULE.items() if m == module]
            null = null & jobs[peers].notna().any(axis=1).to_numpy()
        out = out | null
    return out


def per_job(files: pd.DataFrame, mask: pd.Series, value: pd.Series | None = None) -> pd.Series:
    """Sum ``value`` (or count rows) over the files where ``mask`` holds, per job_key."""
    if value is None:
        value = pd.Series(1.0, index=files.index)
    return value.where(mask, 0.0).groupby(files["job_key"]).sum()


def top_files(files: pd.DataFrame, metric: pd.Series, mask: pd.Series, n: int = 3) -> pd.Series:
    """Per job_key, the ``n`` files with the largest ``metric`` where ``mask``, as one string."""
    sel = files.loc[mask.to_numpy(dtype=bool), ["job_key", "name"]].assign(m=metric[mask])
    if sel.empty:
        return pd.Series(dtype=object)
    sel = sel.sort_values(["job_key", "m"], ascending=[True, False], kind="mergesort")
    sel = sel.groupby("job_key", sort=False).head(n)
    label = sel["name"].astype(str) + " (" + sel["m"].map(human_number) + ")"
    return label.groupby(sel["job_key"], sort=False).agg(", ".join)


def top_ranks(dxt: pd.DataFrame, op: str, n: int = 3) -> pd.Series:
    """Per job_key, the ``n`` ranks with the most small traced ``op`` segments (DXT)."""
    d = dxt[dxt["op"] == op]
    if d.empty:
        return pd.Series(dtype=object)
    d = d.groupby("job_key", sort=False).head(n)
    label = "rank " + d["rank"].astype(str) + " (" + d["small"].astype(str) + ")"
    return label.groupby(d["job_key"], sort=False).agg(", ".join)
