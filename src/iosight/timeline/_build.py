"""The system-level I/O timeline of a warehouse (Saeedizade et al. (2023), §IV, docs/methods.md §1).

Which layer counts (iosight's reading): POSIX + STDIO. MPI-IO calls end in POSIX
calls that Darshan records too, so MPI-IO bytes are already in POSIX and adding them
would double count; STDIO (``fwrite``/``fread``) is a separate path that Darshan's
POSIX module does not see, so it is added. HDF5/PnetCDF sit above MPI-IO/POSIX and are
likewise not counted.

Placement of a record's bytes, operations and I/O time, most exact first:

1. HEATMAP bins of the job and module, when the job has them (the module's totals of
   that job are spread in proportion to the heatmap bytes of each heatmap bin);
2. DXT segments of the record (POSIX only; bytes in proportion to segment length,
   operations one per segment, I/O time in proportion to segment duration; summed per
   bin in DuckDB first, so that a job's rows grow with its bins: :func:`_dxt_query`);
3. the record's counters over ``[job start + F_*_START_TIMESTAMP, job start +
   F_*_END_TIMESTAMP]``.

Shapes from 1 and 2 only *place* the counters' totals, so the timeline's total bytes
always equal the records' total bytes, even when DXT was truncated. Shared records
(rank -1) match the DXT segments of every rank. Jobs with no module records but a
``job_totals`` row (published job-total tables such as Summit's) are spread over
``[start_time, end_time]`` (process-level precision). ``active_jobs`` counts a job in
every bin its run or its I/O touches (:class:`_Outside`).

Memory: the jobs are processed in chunks of about ``chunk_jobs`` jobs, ranges of
``job_key`` cut at the quantiles of a bounded sample of the keys, so each of DuckDB's joins
with ``jobs`` holds one chunk's jobs (its hash table grows with the jobs otherwise); every
query streams in record batches that are binned and dropped, and only the bins are held
(they grow to the range the batches touch). Memory therefore does not grow with the
number of jobs or records. Each chunk scans the record tables again, but compaction sorts
them by ``job_key`` into runs of files of narrow key ranges (docs/warehouse.md, "Files of
narrow key ranges"), so a chunk reads, through :func:`_chunk_reader`, only the files whose
keys overlap its range (and their row groups that hold its keys), on a DuckDB connection
closed after the chunk: the footers it parsed go with it, and what the chunk freed goes
back to the system (:func:`~iosight._memory.release_free_memory`). Ingest's own files,
not yet compacted, hold keys all over the range and are read by every chunk: a larger
``chunk_jobs`` trades memory back for time.
"""

from __future__ import annotations

import json
import numbers
import re
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._memory import release_free_memory, system_arrow_pool
from iosight._progress import Progress, ensure_progress
from iosight.timeline._binning import bin_intervals, check_spread, count_active
from iosight.timeline._span import (
    MIN_JOBS,
    QUARTILES,
    SPANS,
    LeftOut,
    Quartiles,
    fences,
    window_ranks,
)
from iosight.timeline._stored import (
    QUARTILES_KEY,
    STATE_KEY,
    runs_of,
    source_files,
    sources_state,
    stored_metadata,
    write_runs,
)
from iosight.warehouse import JOIN_MEMORY, known_at_sql

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from iosight.warehouse import Warehouse

LAYERS = ("POSIX", "STDIO")
VALUE_COLUMNS = ("read_bytes", "write_bytes", "read_ops", "write_ops", "read_time", "write_time")
TIMELINE_COLUMNS = ("bin_start", "bin_width", *VALUE_COLUMNS, "active_jobs")
# per direction: (bytes, ops, time, start timestamp, end timestamp) counter suffixes
_COUNTERS = {
    "read": (
        "BYTES_READ",
        "READS",
        "F_READ_TIME",
        "F_READ_START_TIMESTAMP",
        "F_READ_END_TIMESTAMP",
    ),
    "write": (
        "BYTES_WRITTEN",
        "WRITES",
        "F_WRITE_TIME",
        "F_WRITE_START_TIMESTAMP",
        "F_WRITE_END_TIMESTAMP",
    ),
}
_BATCH_ROWS = 262_144  # rows per streamed batch: memory is a few times this x 100 B
CHUNK_JOBS = 131_072  # jobs per chunk (about): DuckDB's joins hold a chunk's jobs
_SAMPLE_PER_CHUNK = 4096  # sampled keys per chunk when cutting the key ranges
_SAMPLE_MOST = 1 << 18  # and at most this many in all
# a job's known-at time (``iosight.warehouse.KNOWN_AT``), its start without known_at or end
_KNOWN = "coalesce(j.known_at, j.end_time, j.start_time)"


def _dir_cols(direction: str) -> list[int]:
    """Positions of (bytes, ops, time) of a direction in VALUE_COLUMNS."""
    return [VALUE_COLUMNS.index(f"{direction}_{q}") for q in ("bytes", "ops", "time")]


def job_totals_intervals(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals and values of job-total rows: each job's POSIX+STDIO totals over its run.

    Parameters
    ----------
    df : DataFrame
        ``start_time``, ``end_time`` (epoch s) and ``total_<LAYER>_<COUNTER>`` columns
        (``darshan-parser --total`` names); missing columns and NaN count as zero.

    Returns
    -------
    start, end : ndarray
        Epoch seconds (``end`` never before ``start``).
    values : ndarray, shape (n, 6)
        Columns in ``VALUE_COLUMNS`` order.
    """
    for col in ("start_time", "end_time"):
        if col not in df.columns:
            raise IosightError(f"job totals need a {col!r} column; columns: {list(df.columns)}")
    wanted = ("start_time", "end_time", *TOTAL_COLUMNS)
    return totals_intervals(
        {c: df[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in wanted if c in df.columns}
    )


#: the job-total columns a timeline reads (POSIX and STDIO bytes, operations, time)
TOTAL_COLUMNS = tuple(
    f"total_{layer}_{suffix}" for layer in LAYERS for d in _COUNTERS.values() for suffix in d[:3]
)


def totals_intervals(columns: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`job_totals_intervals` of float64 arrays (null: NaN) by column name."""
    start, end = columns["start_time"], columns["end_time"]
    keep = np.isfinite(start)
    end = np.where(np.isfinite(end), np.maximum(end, start), start)
    values = np.zeros((len(start), len(VALUE_COLUMNS)))
    have = [(layer, pos, columns[c]) for layer, pos, c in _TOTAL_PLACES if c in columns]
    if not have:
        return start[keep], end[keep], values[keep]
    # every column at once (numpy's fixed costs once: an update bins a few jobs), then
    # added a layer at a time, in LAYERS order, as the sums always were; NaN and negative
    # totals count as 0, an infinite one as the largest float (``nan_to_num`` then
    # ``clip``, without their Python layers)
    stacked = np.fmax(np.column_stack([h[2] for h in have]), 0.0)
    np.minimum(stacked, _LARGEST, out=stacked)
    for layer in LAYERS:
        at = [i for i, h in enumerate(have) if h[0] == layer]
        if at:
            values[:, [have[i][1] for i in at]] += stacked[:, at]
    return start[keep], end[keep], values[keep]


def _layer_totals(layer: str) -> list[tuple[int, str]]:
    """The position in VALUE_COLUMNS and the job-total column of each of ``layer``'s
    totals."""
    return [
        (pos, f"total_{layer}_{suffix}")
        for direction, counters in _COUNTERS.items()
        for pos, suffix in zip(_dir_cols(direction), counters[:3], strict=True)
    ]


_LARGEST = np.finfo(np.float64).max
#: each layer's job-total columns and their places in VALUE_COLUMNS, found once
_TOTAL_PLACES = tuple((layer, pos, c) for layer in LAYERS for pos, c in _layer_totals(layer))


def assemble(
    origin: float,
    width: float,
    sums: np.ndarray,
    active: np.ndarray,
    offset: int = 0,
    metadata: dict | None = None,
) -> pa.Table:
    """Timeline rows of ``sums`` and ``active``: bins ``offset`` onwards from ``origin``
    (``metadata``: the table's schema metadata)."""
    import pyarrow as pa

    n = sums.shape[0]
    cols = {
        "bin_start": origin + width * np.arange(offset, offset + n, dtype=np.float64),
        "bin_width": np.full(n, float(width)),
    }
    for i, name in enumerate(VALUE_COLUMNS):
        cols[name] = sums[:, i]
    cols["active_jobs"] = active.astype(np.int64)
    return pa.table(cols, metadata=metadata)


def _range(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    lo = min((float(np.min(s)) for s, _ in parts if s.size), default=np.inf)
    hi = max((float(np.max(e)) for _, e in parts if e.size), default=-np.inf)
    if not np.isfinite(lo) or not np.isfinite(hi):
        raise IosightError("no jobs with start times to build a timeline from")
    return lo, hi


def _grid(lo: float, hi: float, width: float) -> tuple[float, int]:
    origin = np.floor(lo / width) * width
    return float(origin), int(np.floor((hi - origin) / width)) + 1


def _check_width(bin_width: float) -> None:
    ok = isinstance(bin_width, int | float) and np.isfinite(bin_width) and bin_width > 0
    check_param("bin_width", bin_width, ok, "a positive number of seconds")


def timeline_from_job_totals(
    df: pd.DataFrame, *, bin_width: float = 300.0, spread: str = "overlap"
) -> pa.Table:
    """Timeline of a job-totals table (one row per job, e.g. Summit's published totals).

    Each job's POSIX + STDIO bytes, operations and I/O time are spread over
    ``[start_time, end_time]`` (process-level precision, §II). Columns as
    :func:`build_timeline`; ``active_jobs`` counts the jobs running in a bin.

    ``df``: one row per job (``start_time``, ``end_time`` and the totals' columns);
    ``bin_width``: the bin width (s); ``spread``: ``overlap`` or ``equal``.
    """
    _check_width(bin_width)
    check_spread(spread)
    start, end, values = job_totals_intervals(df)
    lo, hi = _range([(start, end)])
    origin, n_bins = _grid(lo, hi, bin_width)
    sums = bin_intervals(
        start - origin, end - origin, values, width=bin_width, n_bins=n_bins, spread=spread
    )
    active = count_active(start - origin, end - origin, width=bin_width, n_bins=n_bins)
    return assemble(origin, bin_width, sums, active)


# ---------------------------------------------------------------- warehouse SQL
def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _heatmap_match(layer: str) -> str:
    return f"replace(replace(upper(h.module), 'HEATMAP:', ''), '-', '') = '{layer}'"


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


KeyRange = tuple[str | None, str | None]


def _key_range(alias: str, keys: KeyRange) -> str:
    """SQL condition ``lo <= alias.job_key < hi`` (an open end when None)."""
    lo, hi = keys
    cond = ["true"]
    if lo is not None:
        cond.append(f"{alias}.job_key >= {_lit(lo)}")
    if hi is not None:
        cond.append(f"{alias}.job_key < {_lit(hi)}")
    return " and ".join(cond)


def _job_condition(
    since: float | None,
    until: float | None,
    part: tuple[int, int] = (0, 1),
    keys: KeyRange = (None, None),
    as_of: float | None = None,
    known_from: float | None = None,
) -> str:
    """SQL condition on ``jobs j``: a start time, inside ``[since, until)`` when given, job
    partition ``part = (k, n)`` (jobs whose key hashes to ``k`` modulo ``n``), key range
    ``keys`` and, when ``as_of`` is given, known by then (:data:`KNOWN_AT`; when
    ``known_from`` is given, not before it)."""
    cond = f"j.start_time is not null and {_key_range('j', keys)}"
    if as_of is not None:
        cond += f" and {known_at_sql('j')} <= {float(as_of)!r}"
    if known_from is not None:
        cond += f" and {known_at_sql('j')} >= {float(known_from)!r}"
    if since is not None:
        cond += f" and j.start_time >= {float(since)!r}"
    if until is not None:
        cond += f" and j.start_time < {float(until)!r}"
    k, n = part
    if n > 1:
        cond += f" and hash(j.job_key) % {int(n)} = {int(k)}"
    return cond


def _schema(wh: Warehouse) -> dict[str, set[str]]:
    """The columns of every table a timeline reads that ``wh`` holds (read once a build,
    on a DuckDB connection closed at once: :func:`~iosight.warehouse.table_columns`)."""
    from iosight.warehouse import table_columns

    names = [layer.lower() for layer in LAYERS] + ["heatmap", "dxt_posix", "job_totals"]
    return {n: {c for c, _ in table_columns(wh, n)} for n in names if wh.has_table(n)}


def _layer_queries(
    schema: dict[str, set[str]],
    layer: str,
    direction: str,
    jobs_where: str,
    keys: KeyRange = (None, None),
    known: bool = False,
    *,
    width: float,
) -> list[str]:
    """SQL queries returning ``t0, t1, b, o, t`` rows (epoch s) for one layer (a table of
    ``schema``, :func:`_schema`) and direction; with ``known``, also each row's job's
    known-at time (``known``). ``width``: the bin width (s), by which the DXT segments
    are summed (:func:`_dxt_query`).

    ``keys`` repeats the key range of ``jobs_where`` on every other table, so that no
    hash table holds more than the range's jobs.
    """
    table = layer.lower()
    cols = schema[table]
    b, o, t, s, e = (f"{layer}_{x}" for x in _COUNTERS[direction])
    if b not in cols:
        return []

    def val(c: str) -> str:
        return _counter(c) if c in cols else "0"

    start = f"greatest(coalesce(r.{_q(s)}, 0), 0)" if s in cols else "0"
    end = f"greatest(coalesce(r.{_q(e)}, 0), 0)" if e in cols else "(j.end_time - j.start_time)"
    # with ``known``: the job's known-at time, ``ka``, carried to the rows
    carried = (f"{_KNOWN} as ka", "ka", "any_value(ka) as ka")
    new_ka, ka, tot_ka = (f", {c}" if known else "" for c in carried)
    rec = (
        f"select r.job_key, r.rank, r.record_id, j.start_time as js{new_ka}, "
        f"coalesce(j.end_time, j.start_time) as je, {start} as s, "
        f"greatest({end}, {start}) as e, {val(b)} as b, {val(o)} as o, {val(t)} as t "
        f"from {table} r join jobs j using (job_key) where {jobs_where} and "
        f"{_key_range('r', keys)} and ({val(b)} > 0 or {val(o)} > 0 or {val(t)} > 0)"
    )
    has_hm = f"{direction}_bytes" in schema.get("heatmap", ())
    has_dxt = layer == "POSIX" and "dxt_posix" in schema
    ctes = [f"rec as ({rec})"]
    not_hm = "true"
    if has_hm:
        ctes.append(
            f"hmj as (select h.job_key, sum(h.{direction}_bytes) as hb from heatmap h "
            f"where {_heatmap_match(layer)} and {_key_range('h', keys)} "
            f"group by h.job_key having sum(h.{direction}_bytes) > 0)"
        )
        not_hm = "rec.job_key not in (select job_key from hmj)"
    # the keys of the records with segments, found first: a hash of the records' keys,
    # not one probed by every segment
    dxt_keys = (
        "(select distinct d.job_key, d.record_id, d.rank from dxt_posix d "
        f"where d.op = '{direction}' and {_key_range('d', keys)}) d"
    )
    no_dxt = f"not exists (select 1 from {dxt_keys} where {_DXT_MATCH})" if has_dxt else "true"
    with_ = "with " + ", ".join(ctes) + " "
    queries = [
        with_ + f"select job_key, js, je{ka}, js + s as t0, js + e as t1, b, o, t from rec "
        f"where {not_hm} and {no_dxt}"
    ]
    if has_dxt:
        queries.append(with_ + _dxt_query(direction, (jobs_where, keys), not_hm, width, known))
    if has_hm:
        share = f"h.{direction}_bytes / hmj.hb"
        queries.append(
            with_ + f"select job_key, tot.js, tot.je{ka}, tot.js + h.bin_start as t0, "
            "tot.js + h.bin_start + h.bin_width as t1, "
            f"tot.b * {share} as b, tot.o * {share} as o, tot.t * {share} as t from heatmap h "
            "join hmj using (job_key) join (select job_key, any_value(js) as js, "
            f"any_value(je) as je{tot_ka}, sum(b) as b, sum(o) as o, sum(t) as t from rec "
            "group by job_key) tot using (job_key) "
            f"where {_heatmap_match(layer)} and h.{direction}_bytes > 0 and {_key_range('h', keys)}"
        )
    return [_flag_outside(q, known) for q in queries]


# a DXT segment ``d`` of a record ``rec``: shared records (rank -1) match every rank's
_DXT_MATCH = (
    "d.job_key = rec.job_key and d.record_id = rec.record_id and (rec.rank = -1 or "
    "rec.rank = d.rank)"
)
# a DXT segment this far (s) from a bin edge lies in the same bin whichever way its bin
# is computed: its time's rounding is below 1e-7 s for times up to 1e9 s from the grid's
# origin (a grid of more bins than memory holds lies further)
_EDGE = "(1e-3 + 1e-12 * abs(s1))"


def _dxt_query(
    direction: str, jobs: tuple[str, KeyRange], rec_where: str, width: float, known: bool
) -> str:
    """SQL (after the ``rec`` CTE) of the DXT-placed rows of the records of ``rec``
    matching ``rec_where``, for bins of ``width`` seconds: each segment takes the
    record's bytes in proportion to its length, one operation and I/O time in proportion
    to its duration (all equal when the record's lengths or durations sum to 0).

    The segments of the ``jobs`` (SQL on ``jobs j`` and a key range, as
    :func:`_layer_queries`) are summed in DuckDB per record and bin they lie in before
    they meet the records, so that a job's rows grow with the bins its segments touch,
    not with its segments (millions in DXT-heavy logs): a segment wholly inside a bin
    puts all of it in that bin, so their sum in one row over their ``[min t0, max t1]``
    (inside that bin too) bins the same. Segments within :data:`_EDGE` of a bin edge, or
    across one, keep their own interval (only those with the same interval are summed:
    they spread alike). ``t0``/``t1`` stay each job's earliest and latest, so
    :class:`_Outside` widens a job as before."""
    (jobs_where, keys), w = jobs, repr(float(width))
    k = f"floor((s0 - {_EDGE}) / {w})"
    cell = f"case when {k} = floor((s1 + {_EDGE}) / {w}) then {k} end"  # null: near an edge
    seg = (
        "select d.job_key, d.record_id, d.rank, j.start_time + d.start as s0, j.start_time + "
        'greatest(d."end", d.start) as s1, d.length as l, greatest(d."end" - d.start, 0) as u '
        f"from dxt_posix d join jobs j using (job_key) where {jobs_where} and "
        f"d.op = '{direction}' and {_key_range('d', keys)}"
    )
    d = (
        "select job_key, record_id, rank, k, min(s0) as g0, max(s1) as g1, sum(l) as l, "
        f"count(*) as n, sum(u) as u from (select *, {cell} as k from ({seg})) group by "
        "job_key, record_id, rank, k, case when k is null then s0 end, case when k is null "
        "then s1 end"
    )
    over = "over (partition by rec.job_key, rec.rank, rec.record_id)"
    even = f"d.n / sum(d.n) {over}"
    ka = ", ka" if known else ""
    share = (
        f"select rec.job_key, rec.js, rec.je{', rec.ka' * known}, d.k, d.g0, d.g1, "
        f"rec.b * case when sum(d.l) {over} > 0 then d.l / sum(d.l) {over} else {even} end "
        f"as b, rec.o * {even} as o, "
        f"rec.t * case when sum(d.u) {over} > 0 then d.u / sum(d.u) {over} else {even} end "
        f"as t from rec join ({d}) d on {_DXT_MATCH} where {rec_where}"
    )
    return (
        f"select job_key, js, je{ka}, min(g0) as t0, max(g1) as t1, sum(b) as b, sum(o) as o, "
        f"sum(t) as t from ({share}) group by job_key, js, je{ka}, k, "
        "case when k is null then g0 end, case when k is null then g1 end"
    )


def _counter(column: str) -> str:
    """SQL of a record counter of ``r``: missing and negative values count as 0."""
    return f"greatest(coalesce(r.{_q(column)}, 0), 0)"


def _flag_outside(query: str, known: bool = False) -> str:
    """``t0, t1, b, o, t`` (and ``known``: ``ka``) of ``query`` and ``outside``: the job's
    key where the row lies outside the job's ``[js, je]``, else null (:class:`_Outside`)."""
    return (
        f"select t0, t1, b, o, t{', ka as known' if known else ''}, "
        f"case when t0 < js or t1 > je then job_key end as outside from ({query})"
    )


def _job_totals_query(
    schema: dict[str, set[str]],
    jobs_where: str,
    keys: KeyRange = (None, None),
    known: bool = False,
) -> str | None:
    """SQL of job-total rows, each layer blanked where the job has records of that layer
    (with ``known``, also the job's known-at time, ``known``)."""
    if "job_totals" not in schema:
        return None
    cols = schema["job_totals"]
    select = ["j.start_time", "coalesce(j.end_time, j.start_time) as end_time"]
    select += [f"{_KNOWN} as known"] if known else []
    joins = ""
    for i, layer in enumerate(LAYERS):
        totals = [
            f"total_{layer}_{suffix}"
            for direction in _COUNTERS.values()
            for suffix in direction[:3]
            if f"total_{layer}_{suffix}" in cols
        ]
        if not totals:
            continue
        blank = "false"
        if layer.lower() in schema:  # the layer's jobs with records, found once
            joins += (
                f" left join (select distinct r.job_key from {layer.lower()} r "
                f"where {_key_range('r', keys)}) rec{i} on rec{i}.job_key = jt.job_key"
            )
            blank = f"rec{i}.job_key is not null"
        select += [f"case when {blank} then null else jt.{_q(c)} end as {_q(c)}" for c in totals]
    return (
        f"select {', '.join(select)} from job_totals jt join jobs j using (job_key){joins} "
        f"where {jobs_where} and {_key_range('jt', keys)}"
    )


def record_queries(schema: dict[str, set[str]]) -> list[str]:
    """Every record query a timeline of a warehouse with ``schema`` (:func:`_schema`)
    runs, on any jobs: two warehouses whose queries are the same bin their jobs alike."""
    out = [
        q
        for layer in LAYERS
        if layer.lower() in schema
        for direction in _COUNTERS
        for q in _layer_queries(schema, layer, direction, "true", width=1.0)  # any width
    ]
    return [*out, _job_totals_query(schema, "true") or ""]


def query_names(schema: dict[str, set[str]]) -> set[str]:
    """Every name (column, alias or keyword) in the :func:`record_queries` of ``schema``."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(record_queries(schema))))


def read_columns(schema: dict[str, set[str]]) -> dict[str, set[str]]:
    """The columns of ``schema`` that its :func:`record_queries` read, by table (every
    table kept): what a stored timeline records of the warehouse's columns, as the
    queries test whether a column is there and name it where it is, so these give the
    same queries (481 columns of job totals would be 12 kB of names in its metadata)."""
    used = query_names(schema)
    return {name: cols & used for name, cols in schema.items()}


class Bins:
    """Timeline sums on the bin lattice ``k * width`` that grow to whatever a batch touches.

    Lets records stream from the warehouse in one pass: only the bins are held.
    """

    known = False  # its rows need no known-at time (``_known.KnownBins`` keeps them apart)

    def __init__(self, width: float, spread: str) -> None:
        self.width, self.spread = width, spread
        self.first = 0  # lattice index of row 0
        self.sums = np.zeros((0, len(VALUE_COLUMNS)))
        self.active = np.zeros(0, dtype=np.int64)

    def _cover(self, lo: float, hi: float) -> None:
        k0 = int(np.floor(lo / self.width))
        k1 = int(np.floor(hi / self.width))
        if not len(self.sums):
            self.first = k0
        pad_lo = max(0, self.first - k0)
        pad_hi = max(0, k1 - (self.first + len(self.sums) - 1))
        if pad_lo or pad_hi:
            self.sums = _padded(self.sums, pad_lo, pad_hi)
            self.active = _padded(self.active, pad_lo, pad_hi)
            self.first -= pad_lo

    @property
    def origin(self) -> float:
        return self.first * self.width

    def add(self, t0: np.ndarray, t1: np.ndarray, values: np.ndarray, cols: list[int]) -> None:
        """Spread ``values`` (columns ``cols`` of VALUE_COLUMNS) over ``[t0, t1]`` (epoch s)."""
        if not len(t0):
            return
        t1 = np.maximum(t1, t0)
        self._cover(float(t0.min()), float(t1.max()))
        o = self.origin
        bin_intervals(
            t0 - o, t1 - o, values, width=self.width, n_bins=len(self.sums), spread=self.spread,
            out=_columns_view(self.sums, cols),
        )  # fmt: skip

    def merge(self, first: int, sums: np.ndarray, active: np.ndarray) -> None:
        """Add another accumulator's bins (``first`` is its lattice index of row 0)."""
        if not len(sums):
            return
        w = self.width
        self._cover(first * w, (first + len(sums) - 1) * w)
        i = first - self.first
        self.sums[i : i + len(sums)] += sums
        self.active[i : i + len(active)] += active

    def add_jobs(self, start: np.ndarray, end: np.ndarray) -> None:
        """Count jobs running in each bin."""
        if not len(start):
            return
        end = np.maximum(end, start)
        self._cover(float(start.min()), float(end.max()))
        o = self.origin
        self.active += count_active(start - o, end - o, width=self.width, n_bins=len(self.active))


def _columns_view(sums: np.ndarray, cols: list[int]) -> np.ndarray:
    """Columns ``cols`` of ``sums`` as a view (a direction's are every other one, the job
    totals' all six), so a batch's bins add into the sums where they are: an array of
    the grid's bins a batch (24 MB for three columns over a million bins, 48 for six)
    was made and added in otherwise."""
    step = cols[1] - cols[0] if len(cols) > 1 else 1
    view = sums[:, cols[0] : cols[-1] + 1 : step]
    if list(range(cols[0], cols[-1] + 1, step)) != list(cols):
        raise ValueError(f"columns {cols} are not evenly spaced")
    return view


def _padded(a: np.ndarray, before: int, after: int) -> np.ndarray:
    """``a`` with ``before`` and ``after`` rows of zeros (``np.pad``'s result without its
    fixed cost of some 40 µs, paid twice for every batch binned)."""
    out = np.zeros((before + len(a) + after, *a.shape[1:]), dtype=a.dtype)
    out[before : before + len(a)] = a
    return out


def _duckdb_memory(warehouse: Warehouse, limit: str | None, footers_kept: bool = True):
    """DuckDB's settings while the timeline streams (:meth:`Warehouse.duckdb_settings`):
    memory capped at ``limit`` (joins spill to disk beyond it) and the Parquet footers it
    parses kept (``parquet_metadata_cache``) or not (``footers_kept``); None leaves both
    as they are.

    Kept on the warehouse's own views: they unite every file of a table by name, so each
    scan's bind parses every footer, and without the cache, before the files of narrow
    key ranges, one heatmap query of a 65,536-job chunk of a million jobs peaked at 946
    instead of 628 MB (docs/warehouse.md, "`timeline build` at a million, looked into").
    Not kept in a key range's scope (:func:`_chunk_reader`), whose views read files of one
    schema one after another (files of differing schemas, ``job_totals``'s, are still
    united, their few footers parsed again by each scan's bind): there the cache held
    every listed file's footer to the chunk's end, one or two files of every run beyond
    the chunk's share (52 MB of ``posix`` and ``heatmap`` at a million jobs), and the
    build peaked at 469 and 468 MiB against 435 and 443 (docs/warehouse.md, "What a
    chunk lists")."""
    if limit is None:
        return nullcontext()
    return warehouse.duckdb_settings(
        memory_limit=f"'{limit}'", parquet_metadata_cache="true" if footers_kept else "false"
    )


class _Outside:
    """I/O that a job placed outside its own ``[start, end]``, so that the job counts as
    active in those bins too (no bin holds I/O but no active job).

    Darshan records whole seconds for a job's start and end, so its I/O often ends a
    fraction of a second after ``end_time`` (up to 18 s in the shared 2.x logs), and a
    HEATMAP bin ends on its own edge past the job's end.
    """

    def __init__(self) -> None:
        self.parts: list[pa.Table] = []

    def add(self, batch) -> None:
        """Keep the ``outside, t0, t1`` rows of ``batch`` (a :func:`_flag_outside` query)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        flag = batch.column("outside")
        if flag.null_count < len(flag):
            rows = batch.filter(pc.is_valid(flag)).select(["outside", "t0", "t1"])
            self.parts.append(pa.Table.from_batches([rows]))

    def widen(self, keys, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each job's ``[start, end]`` (jobs ``keys``) widened to cover its I/O outside."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self.parts:
            return start, end
        spans = (
            pa.concat_tables(self.parts)
            .group_by("outside")
            .aggregate([("t0", "min"), ("t1", "max")])
        )
        known = spans.column("outside").combine_chunks()
        at = pc.index_in(keys, value_set=known).to_numpy(zero_copy_only=False)
        hit = np.flatnonzero(~np.isnan(at))
        if hit.size:
            pos = at[hit].astype(np.int64)
            start, end = start.copy(), end.copy()
            start[hit] = np.minimum(start[hit], spans.column("t0_min").to_numpy()[pos])
            end[hit] = np.maximum(end[hit], spans.column("t1_max").to_numpy()[pos])
        return start, end


@contextmanager
def _chunk_reader(warehouse: Warehouse, keys: KeyRange, memory: str | None):
    """The reader of one chunk's key range: a :func:`~iosight.warehouse.for_key_range`
    scope of the warehouse (its views list only the files whose keys overlap the range,
    on a DuckDB connection closed after the chunk, which frees the footers it read:
    docs/warehouse.md, "Files of narrow key ranges"), under DuckDB's settings
    meanwhile; the warehouse itself for one chunk of every key, or for the new rows of
    an update (not a warehouse)."""
    from iosight.warehouse import Warehouse, for_key_range

    if keys == (None, None) or not isinstance(warehouse, Warehouse):
        yield warehouse
        return
    scope = for_key_range(warehouse, *keys)
    try:
        with _duckdb_memory(scope, memory, footers_kept=False), system_arrow_pool():
            yield scope
    finally:
        scope.close()
        release_free_memory()  # what the chunk freed


def _batches(warehouse: Warehouse, query: str):
    """Arrow record batches of ``query``, streamed by DuckDB (never the whole result)."""
    yield from warehouse.batches(query, _BATCH_ROWS)


def _numpy(batch, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {n: batch.column(n).to_numpy(zero_copy_only=False) for n in names}


def _key_ranges(warehouse: Warehouse, jobs_where: str, chunk_jobs: int) -> list[KeyRange]:
    """Key ranges of about ``chunk_jobs`` jobs each among the jobs matching ``jobs_where``.

    Cut at the quantiles of a reservoir sample of the keys (bounded: a few thousand keys
    per chunk, :data:`_SAMPLE_MOST` in all), so no step holds all the keys. What a
    chunk holds grows with its jobs, so the largest chunk sets the peak: with 256 keys a
    chunk, the eight chunks of a million jobs held 117,000 to 137,680 jobs; with 4,096,
    123,130 to 127,623 (docs/warehouse.md, "Chunks of even size").
    """
    import pyarrow.compute as pc

    sub = f"select j.job_key from jobs j where {jobs_where}"
    con = warehouse.connect(["jobs"])
    job_count = con.execute(f"select count(*) from ({sub})").fetchall()[0][0]
    n = -(-int(job_count) // chunk_jobs)
    if n <= 1:
        return [(None, None)]
    size = min(n * _SAMPLE_PER_CHUNK, _SAMPLE_MOST)
    sample = con.sql(f"select job_key from ({sub}) using sample reservoir({size} rows) "
                     "repeatable (0)").to_arrow_table()["job_key"]  # fmt: skip
    keys = sample.take(pc.sort_indices(sample))
    cuts = sorted({keys[len(keys) * i // n].as_py() for i in range(1, n)})
    return list(zip([None, *cuts], [*cuts, None], strict=True))


def accumulate(
    warehouse: Warehouse,
    since: float | None,
    until: float | None,
    part: tuple[int, int],
    acc_args: tuple[float, str],
    chunk_jobs: int,
    progress,
    *,
    as_of: float | None = None,
    schema: dict[str, set[str]] | None = None,
    memory: str | None = JOIN_MEMORY,
    bins: type | None = None,
    known_from: float | None = None,
):
    """The timeline sums of the jobs in ``[since, until)``, known by ``as_of`` (and not
    before ``known_from``) and in partition ``part``, streamed chunk of jobs by chunk,
    query by query, into a ``bins`` accumulator (:class:`Bins`, or one that keeps them
    apart by known-at time: ``bins.known``). ``schema``: the columns the queries may use
    (default: the warehouse's, :func:`_schema`); ``memory``: DuckDB's memory limit
    meanwhile (None: as it is)."""
    acc = (Bins if bins is None else bins)(*acc_args)
    prog = ensure_progress(progress)
    schema = _schema(warehouse) if schema is None else schema
    with _duckdb_memory(warehouse, memory):
        jobs_where = _job_condition(since, until, part, as_of=as_of, known_from=known_from)
        ranges = _key_ranges(warehouse, jobs_where, chunk_jobs)
        for i, keys in enumerate(ranges):
            where = _job_condition(since, until, part, keys, as_of, known_from)
            queries = [
                (direction, q)
                for layer in LAYERS
                if layer.lower() in schema
                for direction in _COUNTERS
                for q in _layer_queries(
                    schema, layer, direction, where, keys, acc.known, width=acc.width
                )
            ]
            totals = _job_totals_query(schema, where, keys, acc.known)
            if i == 0:
                prog.start(len(ranges) * (len(queries) + 2), "timeline")
            with _chunk_reader(warehouse, keys, memory) as reader:
                _stream(reader, acc, where, queries, totals, prog)
    prog.finish()
    return acc


def _stream(warehouse, acc, jobs_where, queries, totals, prog) -> None:
    """Bin the job totals' and every query's batches into ``acc``, then count the jobs
    active in each bin (advancing ``prog`` once per query); each row's known-at time too
    where ``acc.known``.

    The job totals go first: their query (with the keys of the jobs that have records)
    needs the most memory of a chunk's, and run first it starts from what the chunk
    before gave back, not on top of what the record queries left held (a million jobs:
    528 MiB at most against 572 with them last; docs/warehouse.md,
    "What a chunk of the million held, taken apart"). Rows whose totals are all zero
    or blanked (every job of a warehouse whose jobs all have records) are not binned:
    they add nothing, and binning a chunk's 137,680 of them over a million bins held
    90 MB (docs/warehouse.md, "Runs merged in tiers")."""
    outside = _Outside()
    known = ("known",) if acc.known else ()
    if totals is not None:
        for batch in _batches(warehouse, totals):
            df = batch.to_pandas()
            start, end, values = job_totals_intervals(df)  # every row has a start time
            some = values.any(axis=1)  # the rest add nothing: a job with records, or none
            acc.add(start[some], end[some], values[some], list(range(len(VALUE_COLUMNS))),
                    *(df[c].to_numpy(np.float64)[some] for c in known))  # fmt: skip
    prog.advance(1)
    for direction, q in queries:
        cols = _dir_cols(direction)
        for batch in _batches(warehouse, q):
            arr = _numpy(batch, ("t0", "t1", "b", "o", "t", *known))
            vals = np.column_stack([arr["b"], arr["o"], arr["t"]]).astype(float)
            acc.add(arr["t0"].astype(float), arr["t1"].astype(float), vals, cols,
                    *(arr[c] for c in known))  # fmt: skip
            outside.add(batch)
        prog.advance(1)
    jobs_q = (
        "select job_key, start_time, coalesce(end_time, start_time) as end_time"
        f"{f', {_KNOWN} as known' if known else ''} from jobs j where {jobs_where}"
    )
    for batch in _batches(warehouse, jobs_q):
        arr = _numpy(batch, ("start_time", "end_time", *known))
        start, end = outside.widen(
            batch.column("job_key"), arr["start_time"].astype(float), arr["end_time"].astype(float)
        )
        acc.add_jobs(start, end, *(arr[c] for c in known))
    prog.advance(1)


def dense_fences(
    warehouse: Warehouse, where: str, jobs: str = "jobs"
) -> tuple[float, float] | None:
    """The dense span's fences of the starts of the jobs matching ``where`` (SQL on
    ``jobs j``, the table ``jobs``; :func:`~iosight.timeline._span.fences`); None when
    too few jobs."""
    n, q1, q3 = (
        warehouse.connect([jobs])
        .execute(
            "select count(*), quantile_cont(j.start_time, 0.25), quantile_cont(j.start_time, 0.75) "
            f"from {jobs} j where {where}"
        )
        .fetchall()[0]
    )
    return None if n < MIN_JOBS else fences(q1, q3)


def dense_quartiles(
    warehouse: Warehouse, where: str, bounds: tuple[float, float], jobs: str = "jobs"
) -> Quartiles:
    """The :class:`~iosight.timeline._span.Quartiles` of the starts of the jobs matching
    ``where`` (fences ``bounds``), kept with the timeline so that an update finds the
    fences of old and new jobs from the new jobs alone."""
    con, lo, hi = warehouse.connect([jobs]), *bounds
    starts = f"select j.start_time as s from {jobs} j where {where}"
    n, *near = con.execute(
        f"select count(*), max(s) filter (s < {lo!r}), min(s) filter (s >= {lo!r}), "
        f"max(s) filter (s <= {hi!r}), min(s) filter (s > {hi!r}) from ({starts})"
    ).fetchall()[0]
    ranks = [window_ranks(n, q) for q in QUARTILES]
    rows = con.execute(  # one sort for both windows
        f"select r, s from (select s, row_number() over (order by s) - 1 as r from ({starts})) "
        f"where {' or '.join(f'r between {a} and {b}' for a, b in ranks)} order by r"
    ).fetchnumpy()
    rank, start = np.asarray(rows["r"]), np.asarray(rows["s"], dtype=np.float64)
    windows = tuple((a, start[(rank >= a) & (rank <= b)]) for a, b in ranks)
    return Quartiles(int(n), windows, tuple(near))


def outside_fences(bounds: tuple[float, float] | None, alias: str = "j") -> str:
    """SQL: the job's start lies outside the fences ``bounds`` (None: never)."""
    if bounds is None:
        return "false"
    lo, hi = bounds
    return f"({alias}.start_time < {lo!r} or {alias}.start_time > {hi!r})"


def _dense_span(
    warehouse: Warehouse, since: float | None, until: float | None, as_of: float | None
) -> tuple[float | None, float | None, LeftOut | None, tuple[float, float] | None]:
    """``since`` and ``until`` narrowed to the dense span of the starts of the jobs in
    them known by ``as_of``, what that leaves out (None: nothing) and the fences."""
    where = _job_condition(since, until, as_of=as_of)
    bounds = dense_fences(warehouse, where)
    if bounds is None:
        return since, until, None, None
    lo, hi = bounds
    out = outside_fences(bounds)
    con = warehouse.connect(["jobs"])
    jobs, first, last, kept_first, kept_last = con.execute(
        f"select count(*) filter ({out}), min(j.start_time) filter ({out}), "
        f"max(j.start_time) filter ({out}), min(j.start_time) filter (not {out}), "
        f"max(j.start_time) filter (not {out}) from jobs j where {where}"
    ).fetchall()[0]
    if not jobs:
        return since, until, None, bounds
    outside = f"{where} and {out}"
    left = LeftOut(int(jobs), _bytes_of(warehouse, outside), first, last, (kept_first, kept_last))
    until_hi = float(np.nextafter(hi, np.inf))  # ``until`` excludes; ``hi`` is kept
    since = lo if since is None else max(lo, since)
    return since, until_hi if until is None else min(until_hi, until), left, bounds


def _bytes_of(warehouse: Warehouse, jobs_where: str) -> float:
    """POSIX + STDIO bytes, read and written, of the jobs matching ``jobs_where`` (SQL on
    ``jobs j``) as the timeline counts them: their records', else their job totals'."""
    schema = _schema(warehouse)
    total = 0.0
    for layer in LAYERS:
        cols = schema.get(layer.lower(), set())
        terms = [_counter(c) for c in (f"{layer}_{x[0]}" for x in _COUNTERS.values()) if c in cols]
        if terms:
            total += (
                warehouse.connect([layer.lower(), "jobs"])
                .execute(
                    f"select coalesce(sum({' + '.join(terms)}), 0) from {layer.lower()} r "
                    f"join jobs j using (job_key) where {jobs_where}"
                )
                .fetchall()[0][0]
            )
    totals = _job_totals_query(schema, jobs_where)
    for batch in _batches(warehouse, totals) if totals else ():
        values = job_totals_intervals(batch.to_pandas())[2]
        total += values[:, [VALUE_COLUMNS.index(f"{d}_bytes") for d in _COUNTERS]].sum()
    return float(total)


def _partition_task(arg, beat) -> tuple[int, np.ndarray, np.ndarray]:
    """One job partition's partial timeline (runs on a Dask worker)."""
    from iosight.warehouse import Warehouse

    path, acc_args, (since, until, as_of), part, chunk_jobs = arg
    acc = accumulate(Warehouse(path, create=False), since, until, part, acc_args, chunk_jobs,
                      None, as_of=as_of)  # fmt: skip
    return acc.first, acc.sums, acc.active


def _run_partitions(warehouse, acc, window, scheduler, partitions, chunk_jobs, progress) -> None:
    """Partial timelines of ``partitions`` job partitions on a Dask cluster, summed;
    ``window``: the jobs' ``(since, until, as_of)``."""
    from iosight.parallel import dask_results

    check_param("partitions", partitions, int(partitions) >= 1, "a positive integer")
    n = int(partitions)
    args = (float(acc.width), acc.spread)
    tasks = [(k, (str(warehouse.path), args, window, (k, n), chunk_jobs)) for k in range(n)]
    prog = ensure_progress(progress)
    prog.start(n, "timeline partitions")
    for res in dask_results(_partition_task, tasks, scheduler=scheduler):
        if res.error:
            raise IosightError(f"timeline partition {res.key} failed: {res.error}")
        acc.merge(*res.value)
        prog.advance(1)
    prog.finish()


def build_timeline(
    warehouse: Warehouse,
    *,
    bin_width: float = 300.0,
    spread: str = "overlap",
    since: float | None = None,
    until: float | None = None,
    span: str = "dense",
    as_of: float | None = None,
    scheduler: str | None = None,
    partitions: int = 16,
    chunk_jobs: int = CHUNK_JOBS,
    progress: Progress | None = None,
) -> pa.Table:
    """Build the system-level timeline and write it as the warehouse table ``timeline``.

    Parameters
    ----------
    warehouse : Warehouse
        Needs ``jobs``; uses ``posix``, ``stdio``, ``dxt_posix``, ``heatmap`` and
        ``job_totals`` when present (module docstring: which layer counts and how I/O is
        placed).
    bin_width : float, default 300
        Bin width in seconds (5 min, §IV).
    spread : {"overlap", "equal"}
        ``"equal"`` reproduces the paper; ``"overlap"`` is exact (docs/methods.md §1).
    since, until : float, optional
        Only jobs that start in ``[since, until)`` (epoch s) count, e.g. one month of a
        years-long archive; their I/O is binned whole, even past ``until``.
    span : {"dense", "all"}
        ``"dense"`` leaves out the jobs (of those in ``[since, until)``) whose start lies
        far outside the others' (Tukey's outer fences: three interquartile ranges past
        the quartiles, and at least 30 days), so a few logs with a clock from another
        decade do not stretch the timeline over decades of empty bins; the result says
        what it left out (:func:`left_out`). ``"all"`` keeps every job.
    as_of : float, optional
        The timeline as it could have been seen at this time (epoch s): only the jobs
        known by then (:data:`~iosight.warehouse.KNOWN_AT` ``<= as_of``: a Darshan log
        exists only once its job ended), their I/O binned whole. The dense span is that
        of these jobs. Stored with the build options (:func:`build_options`).
    scheduler : str, optional
        Address of a Dask scheduler (as ``ingest --scheduler``): the jobs are split into
        ``partitions`` by a hash of their key, each worker streams its partition's partial
        timeline from the warehouse (a shared file system) and the partials are summed.
    partitions : int, default 16
        Job partitions when ``scheduler`` is given.
    chunk_jobs : int, default CHUNK_JOBS
        At most about this many jobs per streamed chunk (a range of ``job_key``); bounds
        memory whatever the number of jobs (module docstring).
    progress : Progress, optional
        Advanced once per query and chunk (jobs, each layer and direction, job totals).

    Returns
    -------
    pyarrow.Table
        Its schema metadata holds what ``span="dense"`` left out (:func:`left_out`).
        ``bin_start`` (epoch s, UTC), ``bin_width``, read/write bytes, operations and I/O
        time (float64) and ``active_jobs`` (int64, jobs whose run or I/O touches the
        bin); every bin from first to last, and a bin no job touches is exactly 0.
        Stored in runs of bins with what it read (``_stored``), so that
        :func:`~iosight.timeline.update_timeline` can add new jobs to it.
    """
    _check_width(bin_width)
    check_spread(spread)
    ok = isinstance(chunk_jobs, int) and chunk_jobs >= 1
    check_param("chunk_jobs", chunk_jobs, ok, "a positive integer")
    for name, t in (("since", since), ("until", until), ("as_of", as_of)):
        ok = t is None or (isinstance(t, numbers.Real) and bool(np.isfinite(t)))
        check_param(name, t, ok, "a finite time in epoch seconds")
    check_param("span", span, span in SPANS, "'dense' or 'all'")
    warehouse.require("jobs")
    asked = (since, until, as_of)
    with warehouse.writer_lock():  # no batch lands between what is read and what is recorded
        files, schema = source_files(warehouse), _schema(warehouse)
        left, bounds = None, None
        if span == "dense":
            since, until, left, bounds = _dense_span(warehouse, since, until, as_of)
        acc_args = (float(bin_width), spread)
        if scheduler:
            acc = Bins(float(bin_width), spread)
            window = (since, until, as_of)
            _run_partitions(warehouse, acc, window, scheduler, partitions, chunk_jobs, progress)
        else:
            acc = accumulate(warehouse, since, until, (0, 1), acc_args, chunk_jobs, progress,
                              as_of=as_of, schema=schema)  # fmt: skip
        if not len(acc.sums):
            raise IosightError("no jobs with start times to build a timeline from")
        table = assemble(acc.origin, bin_width, acc.sums, acc.active)
        since_, until_, as_of_ = (None if t is None else float(t) for t in asked)
        options = {"bin_width": float(bin_width), "spread": spread, "since": since_,
                   "until": until_, "span": span, "as_of": as_of_}  # fmt: skip
        state = {**sources_state(files, read_columns(schema)), "fences": bounds, "first": acc.first,
                 "bins": table.num_rows}  # fmt: skip
        metadata = {
            **(left.metadata() if left is not None else {}),
            **undated_metadata(_count_undated(warehouse, as_of)),
            _OPTIONS_KEY: json.dumps(options).encode(),
            STATE_KEY: json.dumps(state).encode(),
        }
        if bounds is not None:
            where = _job_condition(*asked[:2], as_of=as_of)
            metadata[QUARTILES_KEY] = dense_quartiles(warehouse, where, bounds).to_bytes()
        table = table.replace_schema_metadata(metadata)
        write_runs(warehouse, table, acc.first, runs_of(acc.first, table.num_rows), None)
    return table


_OPTIONS_KEY = b"iosight.build_options"


def build_options(metadata: dict[bytes, bytes]) -> dict | None:
    """The options a timeline was built with, from its schema ``metadata``; None for a
    timeline stored before they were kept."""
    raw = metadata.get(_OPTIONS_KEY)
    return None if raw is None else json.loads(raw)


def build_options_of(table: pa.Table) -> dict | None:
    """The options the timeline ``table`` (from :func:`build_timeline`) was built with:
    bin width, spread, since, until, span and as-of; None for one stored before they
    were kept."""
    return build_options(table.schema.metadata or {})


def stored_options(warehouse: Warehouse) -> dict:
    """The stored timeline's build options (one stored before they were kept: its bin
    width, the rest the defaults)."""
    from iosight.timeline._frame import bin_width_of, load_timeline

    warehouse.require("timeline")
    options = build_options(stored_metadata(warehouse))
    return options if options is not None else {"bin_width": bin_width_of(load_timeline(warehouse))}


def rebuild_timeline(warehouse: Warehouse, **kwargs) -> pa.Table:
    """Build the timeline again with the options its stored build was given (bin width,
    spread, since/until, span, as-of; ``kwargs`` such as ``progress`` are passed on), e.g.
    after new jobs came in. A timeline stored before its options were kept: its bin width
    and the defaults.

    ``warehouse``: the warehouse holding the timeline.
    """
    return build_timeline(warehouse, **stored_options(warehouse), **kwargs)


def accumulate_as_built(
    warehouse: Warehouse,
    bins: type,
    progress: Progress | None = None,
    known: tuple[float, float] | None = None,
):
    """The sums of the jobs the stored timeline counts, with the options it was built
    with (:func:`stored_options`), streamed into a ``bins`` accumulator (one that keeps
    them apart by known-at time: :class:`~iosight.timeline._known.KnownBins`); with
    ``known = (lo, hi)``, only those of them known in ``[lo, hi)``."""
    options = stored_options(warehouse)
    since, until, as_of = options.get("since"), options.get("until"), options.get("as_of")
    if options.get("span", "dense") == "dense":
        since, until, _, _ = _dense_span(warehouse, since, until, as_of)
    acc_args = (float(options["bin_width"]), options.get("spread", "overlap"))
    lo = None
    if known is not None:
        lo, hi = known
        lo = lo if np.isfinite(lo) else None  # -inf: every job known before hi
        before_hi = float(np.nextafter(hi, -np.inf))  # as_of keeps its end, [lo, hi) does not
        as_of = before_hi if as_of is None else min(as_of, before_hi)
    return accumulate(warehouse, since, until, (0, 1), acc_args, CHUNK_JOBS, progress,
                      as_of=as_of, bins=bins, known_from=lo)  # fmt: skip


_UNDATED_KEY = b"iosight.undated_jobs"


def undated_condition(as_of: float | None) -> str:
    """SQL on ``jobs``: no start time (and known by ``as_of`` when given)."""
    known = "true" if as_of is None else f"{known_at_sql()} <= {float(as_of)!r}"
    return f"start_time is null and {known}"


def _count_undated(warehouse: Warehouse, as_of: float | None) -> int:
    """How many jobs (known by ``as_of`` when given) have no start time."""
    n = warehouse.connect(["jobs"]).execute(
        f"select count(*) from jobs where {undated_condition(as_of)}"
    )
    return int(n.fetchall()[0][0])


def undated_metadata(count: int) -> dict[bytes, bytes]:
    """Schema metadata saying how many jobs have no start time (none: empty)."""
    return {_UNDATED_KEY: str(count).encode()} if count else {}


def undated_jobs(table: pa.Table | dict) -> int:
    """Jobs the timeline ``table`` (from :func:`build_timeline`; or its schema metadata,
    a dict) could not place: those without a start time, e.g. Darshan logs whose job
    record is garbage (read for their records, their job fields unknown)."""
    metadata = table if isinstance(table, dict) else table.schema.metadata or {}
    return int(metadata.get(_UNDATED_KEY, b"0"))
