"""The data the rules read, for many jobs at once: three frames built by SQL.

Each frame is a :class:`Table` of numpy columns (no pandas: ``iosight job`` evaluates a
job's rules in the time the rest of the command takes). ``jobs``: one row per job, the
``jobs`` columns plus the job totals every source has (``job_totals``) and the per-job
sums of the per-file frame. ``files``: one row per (job, file) from the POSIX records,
where the job has records (not for job-total tables), with the per-file quantities
Drishti's record-level checks use. ``dxt``: per (job, op, rank) counts of small traced
segments, where DXT is present.

A counter the job's source does not hold is null in ``jobs``, never 0: a published
job-total table may carry only some of Darshan's counters (the Summit 2021 CSV has no
SEQ/CONSEC ones), and reading the missing ones as 0 would call every read random.
:func:`lacking` tells which jobs cannot be judged on a rule's counters.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from iosight._units import human_number
from iosight.insights._table import Table, group_sum
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse

KEYS_VIEW = "_insight_keys"
# the tables of per-record rows the per-file and DXT frames read
RECORDS = ("posix", "names", "dxt_posix")
# the tables the frames read: only their views are made (a warehouse has a dozen more)
READS = ("jobs", "job_totals", *RECORDS)
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

    jobs: Table
    files: Table
    dxt: Table

    @cached_property
    def file_job(self) -> np.ndarray:
        """Per file row, the row of its job in ``jobs`` (the rules' per-job sums)."""
        return _rows_of(self.jobs["job_key"], self.files["job_key"])


def _rows_of(keys: np.ndarray, of: np.ndarray) -> np.ndarray:
    """Per value of ``of``, its position in ``keys`` (every value is one of ``keys``)."""
    order = np.argsort(keys, kind="stable")
    return order[np.searchsorted(keys[order], of)] if len(of) else np.zeros(0, np.int64)


def load(wh: Warehouse, keys: list[str], t: Thresholds, jobs: Table | None = None) -> JobData:
    """Build the frames for the jobs in ``keys`` (SQL over the warehouse, no per-job loop).

    ``jobs``: the per-job frame of these jobs and maybe of others (:func:`jobs_frame`
    of more keys), the rows of ``keys`` taken from it instead of read again.
    """
    with _keys_table(wh, keys, READS if jobs is None else RECORDS) as span:
        tables = set(wh.tables())
        jobs = _jobs(wh, tables, span) if jobs is None else _rows_in(jobs, keys)
        files = _files(wh, tables, t, span)
        dxt = _dxt(wh, tables, t, span)
    return JobData(jobs=_add_record_sums(jobs, files), files=files, dxt=dxt)


def jobs_frame(wh: Warehouse, keys: list[str]) -> Table:
    """The per-job frame of the jobs ``keys``: for :func:`load` of batches of them. The
    per-job tables' files are not sorted by job key, so each read of this frame scans
    all of ``jobs`` (and much of ``job_totals``): one read for several batches makes a
    pass over all jobs grow with the jobs, not with their square over the batch."""
    with _keys_table(wh, keys) as span:
        return _jobs(wh, set(wh.tables()), span)


def posix_rows(wh: Warehouse, keys: list[str]) -> list[int]:
    """Per key of ``keys``, its rows in ``posix``: a batch's per-file frame, the run's
    peak, costs memory by these rows, not by its jobs, so batches are cut by them
    (:func:`~iosight.insights.compute_insights`). Reads only the ``job_key`` column of
    the row groups in the keys' range, of the files ``wh`` lists (a ``for_jobs`` reader:
    those holding the keys)."""
    if "posix" not in wh.tables():
        return [0] * len(keys)
    with _keys_table(wh, keys, ("posix",)) as span:
        counts = wh.connect(["posix"]).execute(
            f"select p.job_key, count(*) from posix p join {KEYS_VIEW} k using (job_key) "
            f"where {_within('p', span)} group by p.job_key"
        )
        got = dict(counts.fetchall())
    return [got.get(key, 0) for key in keys]


@contextmanager
def _keys_table(
    wh: Warehouse, keys: list[str], reads: tuple[str, ...] = READS
) -> Iterator[tuple[str, str] | None]:
    """The temporary table of ``keys`` the frames' queries join, on the connection of
    the tables ``reads``, while the block runs; yields the keys' :func:`_span`."""
    con = wh.connect(reads)
    con.execute(
        f"create or replace temp table {KEYS_VIEW} as select unnest(?::varchar[]) as job_key",
        [list(keys)],
    )
    try:
        yield _span(keys)
    finally:
        con.execute(f"drop table if exists {KEYS_VIEW}")


def _rows_in(jobs: Table, keys: list[str]) -> Table:
    """The rows of ``jobs`` whose key is between the least and the greatest of ``keys``:
    those of ``keys`` where ``jobs`` holds no other key in between (the rows of a run of
    the sorted keys it was read for)."""
    if not keys:
        return jobs.take(np.zeros(len(jobs), bool))
    k = jobs["job_key"]
    return jobs.take(np.asarray((k >= min(keys)) & (k <= max(keys)), dtype=bool))


def _span(keys: list[str]) -> tuple[str, str] | None:
    """The smallest and largest of ``keys``, quoted for SQL (``None`` for no keys): the
    per-job tables are sorted by job key, so with keys taken in key order (as
    :func:`~iosight.insights.compute_insights` takes them) a batch bounded by its range
    reads only that range's row groups, and a pass over all jobs reads each row group
    about once instead of once per batch."""
    if not keys:
        return None
    lo, hi = min(keys), max(keys)
    return lo.replace("'", "''"), hi.replace("'", "''")


def _within(alias: str, span: tuple[str, str] | None) -> str:
    """SQL: ``alias``'s job key in ``span``."""
    return "false" if span is None else f"{alias}.job_key between '{span[0]}' and '{span[1]}'"


def _query(wh: Warehouse, query: str, reads: tuple[str, ...] = READS) -> Table:
    """The rows of ``query`` as numpy columns (the temporary keys table is the
    connection's own, so the query runs on :meth:`Warehouse.connect`'s connection, with
    the views of ``reads``: a reader of some files only, ``for_jobs``, scopes those
    tables' views and no other). Executed, not made a relation: a relation binds the
    query once more before it runs, some 3 ms of a one-job ``iosight job``."""
    return Table.fetch(wh.connect(reads).execute(query))


def _cols(wh: Warehouse, table: str) -> set[str]:
    return set(wh.column_names(table))


def _jobs(wh: Warehouse, tables: set[str], span: tuple[str, str] | None) -> Table:
    have = _cols(wh, "job_totals") if "job_totals" in tables else set()

    def tot(counter: str) -> str:
        return f't."total_{counter}"' if f"total_{counter}" in have else "null"

    small = {
        op: " + ".join(tot(f"POSIX_SIZE_{op}_{b}") for b in SMALL_BINS) for op in ("READ", "WRITE")
    }
    select = [f"{tot(c)}::double as {name}" for c, name in _TOTALS.items()]
    select += [f"({small['READ']})::double as small_reads"]
    select += [f"({small['WRITE']})::double as small_writes"]
    join = f"left join job_totals t on t.job_key = j.job_key and {_within('t', span)}"
    join = join if have else ""
    # nprocs -1 is the jobs table's "not known": null here, like a missing counter
    return _query(
        wh,
        f"""select j.job_key, j.jobid, j.exe, j.uid,
                  case when j.nprocs >= 1 then j.nprocs end as nprocs, j.start_time, j.run_time,
                  j.source_format, coalesce(j.modules, '') as modules,
                  {", ".join(select)}
           from jobs j join {KEYS_VIEW} k on k.job_key = j.job_key {join}
           where {_within("j", span)}""",
    )


def _files(wh: Warehouse, tables: set[str], t: Thresholds, span: tuple[str, str] | None) -> Table:
    if "posix" not in tables:
        return Table.empty(["job_key", "record_id", "name"])
    have = _cols(wh, "posix")

    def c(name: str) -> str:
        return f'p."{name}"' if name in have else "null"

    small = {
        op: " + ".join(f"coalesce({c(f'POSIX_SIZE_{op}_{b}')}, 0)" for b in SMALL_BINS)
        for op in ("READ", "WRITE")
    }
    # the names joined to the aggregated records, not to every rank's row: the
    # aggregate then holds no name (a 5,000-job batch at a million: 656 -> 628 MB)
    name = (
        "coalesce(n.name, cast(a.record_id as varchar))"
        if "names" in tables
        else "cast(a.record_id as varchar)"
    )
    join = (
        "left join names n on n.job_key = a.job_key and n.record_id = a.record_id"
        f" and {_within('n', span)}"
        if "names" in tables
        else ""
    )
    shared = "p.rank = -1"
    indep = "p.rank <> -1"

    def ranked(arg: str, counter: str) -> str:
        """The rank of the most (least) of ``counter``; of tied ranks the lowest, so the
        answer does not depend on the order DuckDB reads the records in. The order is
        one HUGEINT, the counter then the rank (ranks are below 2**32), not a list of
        the two: a list per record cost 0.8 of a batch's 1.9 s of CPU and 80 MB (5,000
        jobs at a million)."""
        tie = "- p.rank" if arg == "arg_max" else "+ p.rank"
        return (
            f"{arg}(p.rank, {c(counter)}::hugeint * 4294967296 {tie}) "
            f"filter (where {indep} and {c(counter)} is not null)"
        )

    meta = float(t.metadata_time_rank)
    return _query(
        wh,
        f"""select a.job_key, a.record_id, {name} as name, a.* exclude (job_key, record_id)
           from (select p.job_key, p.record_id, bool_or({shared}) as shared,
               count(*) filter (where {indep}) as ranks,
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
               {ranked("arg_max", "POSIX_BYTES_WRITTEN")} as rank_written_most,
               {ranked("arg_min", "POSIX_BYTES_WRITTEN")} as rank_written_least,
               {ranked("arg_max", "POSIX_BYTES_READ")} as rank_read_most,
               {ranked("arg_min", "POSIX_BYTES_READ")} as rank_read_least
           from posix p join {KEYS_VIEW} k on k.job_key = p.job_key
           where {_within("p", span)}
           group by p.job_key, p.record_id) a {join}
           order by a.job_key, a.record_id""",
        RECORDS,
    )


def _dxt(wh: Warehouse, tables: set[str], t: Thresholds, span: tuple[str, str] | None) -> Table:
    if "dxt_posix" not in tables:
        return Table.empty(["job_key", "op", "rank", "small"])
    return _query(
        wh,
        f"""select d.job_key, d.op, d.rank, count(*) as small
            from dxt_posix d join {KEYS_VIEW} using (job_key)
            where d.length < {int(t.small_bytes)} and {_within("d", span)}
            group by all order by d.job_key, d.op, small desc, d.rank""",
        RECORDS,
    )


def _add_record_sums(jobs: Table, files: Table) -> Table:
    """Per-job sums of the per-file frame; ``has_records`` tells the rules they may look."""
    rows = _rows_of(jobs["job_key"], files["job_key"])
    jobs["posix_files"] = np.bincount(rows, minlength=len(jobs)).astype(np.int64)
    jobs["has_records"] = jobs["posix_files"] > 0
    # a job with POSIX activity in its totals but no records: record rules cannot look
    active = (jobs.num("posix_opens") + jobs.num("reads") + jobs.num("writes")) > 0
    jobs["records_missing"] = active & ~jobs["has_records"]
    return jobs


def lacking(jobs: Table, columns: tuple[str, ...]) -> np.ndarray:
    """Per job, whether its source lacks one of ``columns`` (frame columns of ``jobs``).

    A module's counter is lacking when it is null while another counter of that module
    is not: the source recorded the module but not this counter. A module the job did
    not use has every counter null; its rules have nothing to judge, so they are
    evaluated (and do not fire). A column of no module (``nprocs``) lacks when null.
    """
    out = np.zeros(len(jobs), bool)
    for col in columns:
        null = jobs.isnull(col)
        module = _MODULE.get(col)
        if module is not None:
            peers = [c for c, m in _MODULE.items() if m == module]
            null = null & np.logical_or.reduce([~jobs.isnull(c) for c in peers])
        out = out | null
    return out


def per_job(d: JobData, mask: np.ndarray, value: np.ndarray | None = None) -> np.ndarray:
    """Per job of ``d.jobs``, the sum of ``value`` (or the count of rows) over the files
    where ``mask`` holds (0 for a job without files)."""
    mask = np.asarray(mask, bool)
    value = np.ones(len(mask)) if value is None else np.asarray(value, float)
    return group_sum(d.file_job, np.where(mask, value, 0.0), len(d.jobs))


def top_files(d: JobData, metric: np.ndarray, mask: np.ndarray, n: int = 3) -> np.ndarray:
    """Per job of ``d.jobs``, the ``n`` files with the largest ``metric`` where ``mask``,
    as one string ("" where none)."""
    sel = np.flatnonzero(np.asarray(mask, bool))
    m = np.asarray(metric, float)[sel]
    # largest first within a job, ties in record order (the order between jobs does not matter)
    order = np.lexsort((-m, d.file_job[sel]))
    sel, m = sel[order], m[order]
    first = leading(d.file_job[sel], n)  # label only what is shown
    names, m, sel = d.files["name"][sel[first]], m[first], sel[first]
    labels = [f"{name} ({human_number(v)})" for name, v in zip(names, m, strict=True)]
    return first_joined(d.jobs, d.file_job[sel], labels, n, ", ")


def leading(groups: np.ndarray, n: int) -> np.ndarray:
    """Of rows whose ``groups`` come in contiguous runs, the first ``n`` of each run."""
    if not len(groups):
        return np.zeros(0, bool)
    at = np.arange(len(groups))
    starts = np.r_[True, groups[1:] != groups[:-1]]
    return at - np.maximum.accumulate(np.where(starts, at, 0)) < n


def first_joined(jobs: Table, rows: np.ndarray, labels: list[str], n: int, sep: str) -> np.ndarray:
    """Per job of ``jobs``, the first ``n`` of its ``labels`` (``rows``: each label's job
    row, labels of a job in the order given) joined by ``sep``; "" where none."""
    out = np.full(len(jobs), "", dtype=object)
    picked: dict[int, list[str]] = {}
    for row, label in zip(rows.tolist(), labels, strict=True):
        got = picked.setdefault(row, [])
        if len(got) < n:
            got.append(label)
    for row, got in picked.items():
        out[row] = sep.join(got)
    return out


def top_ranks(d: JobData, op: str, n: int = 3) -> np.ndarray:
    """Per job of ``d.jobs``, the ``n`` ranks with the most small traced ``op`` segments
    (DXT), as one string ("" where none)."""
    sel = np.flatnonzero(d.dxt["op"] == op)  # ordered by job, then most segments first
    rows = _rows_of(d.jobs["job_key"], d.dxt["job_key"][sel])
    first = leading(rows, n)
    sel, rows = sel[first], rows[first]
    labels = [f"rank {r} ({s})" for r, s in zip(d.dxt["rank"][sel].tolist(),
              d.dxt["small"][sel].tolist(), strict=True)]  # fmt: skip
    return first_joined(d.jobs, rows, labels, n, ", ")
