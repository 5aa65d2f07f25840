"""Segmentation, categories and codings of per-job I/O time series.

Betke & Kunkel, *The Importance of Temporal Behavior When Classifying Job IO
Patterns* §3 (segmentation, categorisation) and §4 (binary and hexadecimal
coding, zero aggregation), read as in ``docs/methods.md`` §3.

A job's series is held sparsely: one row per (job, node, file system, metric,
segment) whose segment mean is non-zero; the job's numbers of segments, nodes
and file systems come with it, so absent rows are zeros, never guesses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param

if TYPE_CHECKING:
    import pandas as pd

#: The nine monitoring metrics, alphabetical: bit ``i`` of a binary code is metric ``i``.
METRICS: tuple[str, ...] = (
    "md_file_create",
    "md_file_delete",
    "md_mod",
    "md_other",
    "md_read",
    "read_bytes",
    "read_calls",
    "write_bytes",
    "write_calls",
)
METRIC_INDEX: dict[str, int] = {m: i for i, m in enumerate(METRICS)}
SEGMENT_S: float = 600.0
#: Optional job columns of monitoring samples (one value per job, repeated on its rows):
#: with them, input without its zero samples segments as the full input does.
SAMPLE_JOB_COLUMNS: tuple[str, ...] = ("job_start", "job_end", "n_nodes", "n_fs")
HEX_LEVELS = 16


# --------------------------------------------------------------------- segmentation
def segment_samples(
    samples: pd.DataFrame | str | Path,
    segment_s: float = SEGMENT_S,
    interval_s: float = 5.0,
) -> pd.DataFrame:
    """Mean of each metric per (job, node, fs, segment) from raw samples (§3 "Segmentation").

    Parameters
    ----------
    samples : DataFrame or path
        Long format ``job, node, fs, metric, time, value`` (``time`` in seconds), as a
        DataFrame or a CSV / Parquet file; DuckDB does the grouping, so files larger
        than memory are fine. Optional :data:`SAMPLE_JOB_COLUMNS` ``job_start, job_end,
        n_nodes, n_fs`` (the same on every row of a job) give the job's span and
        its numbers of nodes and file systems.
    segment_s : float, default 600
        Segment length in seconds.
    interval_s : float, default 5
        Sampling interval of the monitoring.

    Returns
    -------
    DataFrame
        ``job, node, fs, metric, segment, value`` with non-zero means only, and
        ``attrs["jobs"]``: ``job, n_segments, n_nodes, n_fs``.

    Notes
    -----
    iosight's reading (docs/methods.md §3): a job spans ``job_start`` to ``job_end``, else its
    first to its last sample time; it has ``n_nodes`` nodes and ``n_fs`` file
    systems, else those its samples name; its samples lie on a grid of
    ``interval_s`` from its start; samples absent from the input are zeros
    (monitoring often stores only non-zero values: without the job columns, zero
    samples are still needed at a job's first and last instants and on its idle
    nodes and file systems, or the job shrinks). A segment's value is
    the sum of its samples over the number of grid instants it holds, so a last
    partial segment is the mean of what it has, kept as a full segment. Input with
    no rows, a row without job, node, fs, metric or finite time, a value that is
    empty, NaN, infinite or negative, job columns that disagree with the samples, or
    a job of 10 million segments or more is refused (:class:`IosightError`).
    """
    import duckdb

    check_param("segment_s", segment_s, 0 < segment_s < np.inf, "a positive number of seconds")
    check_param("interval_s", interval_s, 0 < interval_s <= segment_s, "in (0, segment_s]")
    con = duckdb.connect()
    _load_samples(con, samples)
    _check_samples(con)
    seg, iv = float(segment_s), float(interval_s)
    _job_spans(con, seg)
    jobs = con.execute(
        f"""select job, cast(floor((t1 - t0) / {seg}) as bigint) + 1 n_segments,
        cast(n_nodes as bigint) n_nodes, cast(n_fs as bigint) n_fs from span order by job"""
    ).df()
    out = con.execute(
        f"""with s as (select src.job, node, fs, metric,
                     cast(floor((t - t0) / {seg}) as bigint) segment, sum(v) total,
                     any_value(t0) t0, any_value(t1) t1
              from src join span using (job) group by all)
        select job, node, fs, metric, segment,
               total / (least(floor((t1 - t0) / {iv}) + 1,
                              ceil((segment + 1) * {seg} / {iv} - 1e-9))
                        - ceil(segment * {seg} / {iv} - 1e-9)) as value
        from s where total > 0 order by job, node, fs, metric, segment"""
    ).df()
    out.attrs["jobs"] = jobs
    return out


def _load_samples(con, samples: pd.DataFrame | str | Path) -> None:
    """``samples`` (a DataFrame, a CSV or a Parquet file) as the temp table ``src``:
    ``job, node, fs, metric`` as text, ``t, v`` and the job columns as numbers."""
    import duckdb

    if isinstance(samples, str | Path):
        path = Path(samples)
        if not path.is_file():
            raise IosightError(f"no monitoring file at {path}")
        reader = "read_parquet" if path.suffix in (".parquet", ".pq") else "read_csv_auto"
        src = f"{reader}('{str(path).replace(chr(39), chr(39) * 2)}')"
    else:
        con.register("samples_df", samples)
        src = "samples_df"
    need = {"job", "node", "fs", "metric", "time", "value"}
    try:
        have = {r[0] for r in con.execute(f"describe select * from {src}").fetchall()}
    except duckdb.Error as err:
        raise IosightError(f"cannot read monitoring samples: {err}") from None
    if need - have:
        raise IosightError(
            f"monitoring samples lack columns {sorted(need - have)}; need {sorted(need)}"
        )
    meta = ", ".join(
        f"cast({c} as double) {c}" if c in have else f"null::double {c}" for c in SAMPLE_JOB_COLUMNS
    )
    try:
        con.execute(
            f"""create temp table src as select cast(job as varchar) job,
            cast(node as varchar) node, cast(fs as varchar) fs, cast(metric as varchar) metric,
            cast(time as double) t, cast(value as double) v, {meta} from {src}"""
        )
    except duckdb.ConversionException as err:
        first = str(err).splitlines()[0]
        raise IosightError(
            f"monitoring samples: time and value must be numbers ({first})"
        ) from None
    except duckdb.InvalidInputException as err:  # e.g. a malformed CSV line past the sniffed part
        raise IosightError(f"cannot read monitoring samples: {str(err).splitlines()[0]}") from None


def _job_spans(con, seg: float) -> None:
    """Table ``span``: each job's start ``t0``, end ``t1``, nodes and file systems,
    from the optional :data:`SAMPLE_JOB_COLUMNS` where given, else from its samples."""
    con.execute(
        """create temp table span as select job,
        coalesce(max(job_start), min(t)) t0, coalesce(max(job_end), max(t)) t1,
        coalesce(max(n_nodes), count(distinct node)) n_nodes,
        coalesce(max(n_fs), count(distinct fs)) n_fs,
        min(t) t_first, max(t) t_last, count(distinct node) nodes, count(distinct fs) fss,
        greatest(count(distinct job_start), count(distinct job_end), count(distinct n_nodes),
                 count(distinct n_fs)) k
        from src group by job"""
    )
    bad = con.execute(
        """select job, case
        when k > 1 then 'its rows give different job_start, job_end, n_nodes or n_fs'
        when not (isfinite(t0) and isfinite(t1) and isfinite(n_nodes) and isfinite(n_fs))
            then 'job_start, job_end, n_nodes and n_fs must be finite numbers'
        when t0 > t_first or t1 < t_last then format(
            'has samples at {} to {}, outside job_start..job_end = {}..{}',
            t_first, t_last, t0, t1)
        when n_nodes < nodes or n_fs < fss or n_nodes != floor(n_nodes)
             or n_fs != floor(n_fs) or greatest(n_nodes, n_fs) > 1e9 then format(
            'n_nodes {} and n_fs {} must be whole numbers up to 1e9, at least the {} nodes '
            'and {} file systems in its samples', n_nodes, n_fs, nodes, fss)
        when (t1 - t0) / ? >= 1e7 then format(
            'would have {:.3g} segments of {:g} s (is time in seconds?)',
            floor((t1 - t0) / ?) + 1, ?)
        end reason from span where reason is not null order by job limit 1""",
        [seg, seg, seg],
    ).fetchone()
    if bad:
        raise IosightError(f"monitoring samples: job {bad[0]} {bad[1]}")


def _check_samples(con) -> None:
    """Refuse samples that would segment into nonsense: none at all, a missing key or
    time, a value that is not a finite number >= 0 (NaN passes SQL's ``> 0``), an
    unknown metric."""
    n, keyless, bad_v = con.execute(
        """select count(*),
        count(*) filter (job is null or node is null or fs is null or metric is null
                         or t is null or not isfinite(t)),
        count(*) filter (v is null or not isfinite(v) or v < 0) from src"""
    ).fetchone()
    if n == 0:
        raise IosightError("monitoring samples: no rows (only a header?)")
    if keyless:
        raise IosightError(
            f"monitoring samples: {keyless} of {n} rows lack a job, node, fs, metric or finite time"
        )
    if bad_v:
        job, node, metric, t, v = con.execute(
            "select job, node, metric, t, v from src "
            "where v is null or not isfinite(v) or v < 0 limit 1"
        ).fetchone()
        raise IosightError(
            f"monitoring samples: {bad_v} of {n} values are empty, NaN, infinite or negative "
            f"(first: job {job}, node {node}, {metric} at {t:g} = {v}); leave out samples "
            "without a value (absent samples count as zeros)"
        )
    bad = [r[0] for r in con.execute("select distinct metric from src").fetchall()]
    bad = sorted(set(bad) - set(METRICS))
    if bad:
        raise IosightError(f"unknown metrics {bad}; known: {', '.join(METRICS)}")


# ----------------------------------------------------------------------- categories
@dataclass(frozen=True)
class Categories:
    """Two split points per metric: LowIO below ``low``, CriticalIO from ``high`` (§3).

    A segment mean ``v`` scores 0 when ``v < low``, 1 when ``low <= v < high`` and 4
    when ``v >= high``.

    ``splits``: metric to its ``(low, high)`` split points.
    """

    splits: Mapping[str, tuple[float, float]]

    def __post_init__(self) -> None:
        missing = set(METRICS) - set(self.splits)
        if missing:
            raise IosightError(f"category split points lack metrics {sorted(missing)}")
        for m, (lo, hi) in self.splits.items():
            if not (0 < lo <= hi):
                raise IosightError(
                    f"split points of {m!r} must satisfy 0 < low <= high; got ({lo}, {hi})"
                )

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Low and high split points as arrays in :data:`METRICS` order."""
        lo = np.array([self.splits[m][0] for m in METRICS], dtype=float)
        hi = np.array([self.splits[m][1] for m in METRICS], dtype=float)
        return lo, hi

    def to_dict(self) -> dict[str, list[float]]:
        """The category splits per metric, as plain lists (JSON)."""
        return {m: [float(v) for v in self.splits[m]] for m in METRICS}

    @classmethod
    def from_config(cls, path: str | Path) -> Categories:
        """Read ``{metric: [low, high]}`` (or ``{metric: {low: .., high: ..}}``) from a
        YAML or JSON file.

        ``path``: the YAML or JSON file.
        """
        p = Path(path)
        if not p.is_file():
            raise IosightError(f"no category config at {p}")
        text = p.read_text()
        import yaml

        try:
            data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as err:  # json.JSONDecodeError is a ValueError
            kind = "JSON" if p.suffix == ".json" else "YAML"
            raise IosightError(f"{p}: not valid {kind} ({str(err).splitlines()[0]})") from None
        if not isinstance(data, dict):
            raise IosightError(f"{p}: expected a mapping metric -> [low, high]")
        try:
            splits = {
                str(k): (float(v["low"]), float(v["high"]))
                if isinstance(v, dict)
                else (float(v[0]), float(v[1]))
                for k, v in data.items()
            }
        except (TypeError, ValueError, IndexError, KeyError):
            raise IosightError(
                f"{p}: every metric needs [low, high] or {{low: .., high: ..}} numbers"
            ) from None
        return cls(splits)

    @classmethod
    def from_quantiles(
        cls, series: pd.DataFrame, quantiles: tuple[float, float] = (0.99, 0.999)
    ) -> Categories:
        """Split points from quantiles of each metric's non-zero segment means.

        ``series``: a segmented series (``metric``, ``value`` columns); ``quantiles``: the
        quantiles giving ``low`` and ``high``.

        Notes
        -----
        iosight's reading (docs/methods.md §3, "taken from quantiles of the data set"): the
        quantiles are of the non-zero node-segment means, so a split point is
        never 0; a metric never seen active gets split points (1, 1).
        """
        q1, q2 = quantiles
        check_param("quantiles", quantiles, 0 < q1 <= q2 < 1, "two levels 0 < q1 <= q2 < 1")
        splits = {}
        groups = (
            dict(tuple(series.groupby("metric", observed=True)["value"])) if len(series) else {}
        )
        for m in METRICS:
            v = groups.get(m)
            if v is None or len(v) == 0:
                splits[m] = (1.0, 1.0)
                continue
            lo, hi = np.quantile(v.to_numpy(dtype=float), [q1, q2])
            splits[m] = (float(lo), float(max(hi, lo)))
        return cls(splits)


def categorize(series: pd.DataFrame, categories: Categories) -> np.ndarray:
    """Category score (0, 1 or 4) of every row of a segmented series (§3).

    ``series``: a segmented series (``metric``, ``value`` columns); ``categories``: the split
    points per metric.
    """
    lo, hi = categories.arrays()
    mi = series["metric"].map(METRIC_INDEX).to_numpy()
    v = series["value"].to_numpy(dtype=float)
    return np.where(v >= hi[mi], 4, np.where(v >= lo[mi], 1, 0)).astype(np.int8)


# -------------------------------------------------------------------------- codings
@dataclass
class JobCodings:
    """Codings of many jobs, in job order.

    ``bin[i]`` is the binary code sequence of job ``i`` (ints 0..511), ``hex[i]``
    its (9, length) array of hex levels.

    ``jobs``: the jobs, in order; ``bin``: their binary codings; ``hex``: their hex codings.
    """

    jobs: list
    bin: list[np.ndarray]
    hex: list[np.ndarray]


def code_series(series: pd.DataFrame, jobs: pd.DataFrame, categories: Categories) -> JobCodings:
    """Binary and hexadecimal codings of every job (§4 "Coding").

    Parameters
    ----------
    series : DataFrame
        Segmented series ``job, node, fs, metric, segment, value``.
    jobs : DataFrame
        ``job, n_segments, n_nodes, n_fs``: one row per job, in the order wanted.
    categories : Categories
        Split points.

    Notes
    -----
    Binary: category scores summed over nodes and file systems; bit ``b`` of a
    segment's code is set when metric ``b``'s sum is > 0. Hexadecimal: the mean
    score over the job's ``n_nodes * n_fs`` node-file-system pairs, in [0, 4],
    quantised to ``floor(mean / 0.25)`` capped at 15 (docs/methods.md §3).
    """
    nseg = jobs["n_segments"].to_numpy(dtype=np.int64)
    if (nseg < 1).any():
        raise IosightError("every job needs at least one segment")
    offsets = np.concatenate([[0], np.cumsum(nseg)])
    pos = {j: i for i, j in enumerate(jobs["job"].tolist())}
    total = int(offsets[-1])
    score_sum = np.zeros((len(METRICS), total), dtype=np.float64)
    if len(series):
        ji = series["job"].map(pos)
        if ji.isna().any():
            raise IosightError("series rows for jobs missing from the job list")
        ji = ji.to_numpy(dtype=np.int64)
        seg = series["segment"].to_numpy(dtype=np.int64)
        if (seg >= nseg[ji]).any():
            raise IosightError("series segment beyond its job's n_segments")
        mi = series["metric"].map(METRIC_INDEX).to_numpy(dtype=np.int64)
        np.add.at(score_sum, (mi, offsets[ji] + seg), categorize(series, categories))
    bits = (1 << np.arange(len(METRICS), dtype=np.int64))[:, None]
    bin_all = ((score_sum > 0) * bits).sum(axis=0)
    pairs = np.repeat(
        (jobs["n_nodes"].to_numpy(dtype=float) * jobs["n_fs"].to_numpy(dtype=float)), nseg
    )
    hex_all = hex_levels(score_sum / np.maximum(pairs, 1.0))
    b = [bin_all[offsets[i] : offsets[i + 1]] for i in range(len(nseg))]
    h = [hex_all[:, offsets[i] : offsets[i + 1]] for i in range(len(nseg))]
    return JobCodings(jobs=jobs["job"].tolist(), bin=b, hex=h)


def hex_levels(mean_score: np.ndarray) -> np.ndarray:
    """Quantise mean category scores in [0, 4] into 16 levels of width 0.25 (§4).

    ``mean_score``: mean category scores per metric and segment.
    """
    m = np.asarray(mean_score, dtype=float)
    if (m < 0).any() or (m > 4 + 1e-9).any():
        raise IosightError("hex coding needs mean scores in [0, 4]")
    return np.minimum(np.floor(m / 0.25 + 1e-9), HEX_LEVELS - 1).astype(np.int8)


def aggregate_zeros(codes: Sequence[int] | np.ndarray) -> np.ndarray:
    """Collapse each run of zero segments into one zero segment (§4, BIN_AGGZEROS).

    ``codes``: one job's binary codes.
    """
    c = np.asarray(codes, dtype=np.int64)
    if c.size == 0:
        return c
    keep = np.ones(c.size, dtype=bool)
    keep[1:] = ~((c[1:] == 0) & (c[:-1] == 0))
    return c[keep]


def aggregate_zeros_many(codings: Sequence[np.ndarray]) -> list[np.ndarray]:
    """:func:`aggregate_zeros` of many codings at once (vectorised over their concatenation).

    ``codings``: one array of binary codes per job.
    """
    if not codings:
        return []
    lens = np.array([len(c) for c in codings])
    flat = np.concatenate(codings).astype(np.int64)
    starts = np.zeros(flat.size, dtype=bool)
    starts[np.cumsum(lens)[:-1]] = True
    starts[0] = True
    keep = ~((flat == 0) & np.r_[False, flat[:-1] == 0] & ~starts)
    kept = np.add.reduceat(keep.astype(np.int64), np.r_[0, np.cumsum(lens)[:-1]])
    return np.split(flat[keep], np.cumsum(kept)[:-1])


def is_zero_job(coding: np.ndarray) -> bool:
    """True when every segment (and every metric) of a coding is zero (§5.1).

    ``coding``: one job's binary codes or hex levels.
    """
    return not np.any(coding)


def encode_bin(active: Mapping[str, bool] | Sequence[str]) -> int:
    """The 9-bit code of a set of active metrics (md_read and read_bytes -> 48).

    ``active``: the active metrics (names, or names to flags).
    """
    names = [m for m, on in active.items() if on] if isinstance(active, Mapping) else active
    unknown = set(names) - set(METRICS)
    if unknown:
        raise IosightError(f"unknown metrics {sorted(unknown)}; known: {', '.join(METRICS)}")
    return int(sum(1 << METRIC_INDEX[m] for m in names))


def decode_bin(code: int) -> list[str]:
    """The active metrics of a 9-bit binary code (the coding is reversible, §4).

    ``code``: a binary code (0..511).
    """
    check_param("code", code, 0 <= int(code) < 512, "an integer in 0..511")
    return [m for i, m in enumerate(METRICS) if int(code) >> i & 1]


# -------------------------------------------------------------- text form for storage
def bin_to_text(codes: np.ndarray) -> str:
    """``256:0:6``, the DKRZ data set's colon-separated form.

    ``codes``: one job's binary codes.
    """
    return ":".join(map(str, np.asarray(codes).tolist()))


def bin_from_text(text: str) -> np.ndarray:
    """The codes of one colon-separated binary coding (``256:0:6``), each in 0..511.

    ``text``: the coding as text.
    """
    try:
        codes = [int(x) for x in str(text).strip().split(":")]
    except ValueError:
        raise IosightError(f"not a binary coding (colon-separated integers): {text!r}") from None
    if not all(0 <= c <= 511 for c in codes):  # checked before int64 can overflow
        raise IosightError(f"binary codes must be integers 0..511: {text!r}")
    return np.array(codes, dtype=np.int64)


def bin_from_texts(texts: Sequence[str]) -> list[np.ndarray]:
    """Parse many colon-separated binary codings at once (vectorised :func:`bin_from_text`).

    ``texts``: the codings as text.
    """
    texts = [str(t).strip() for t in texts]
    if not texts:
        return []
    try:
        flat = np.array(":".join(texts).split(":"), dtype=np.int64)
    except (ValueError, OverflowError):
        flat = None
    if flat is None or (flat < 0).any() or (flat > 511).any():
        return [bin_from_text(t) for t in texts]  # one at a time: names the first bad coding
    lens = np.array([t.count(":") + 1 for t in texts])
    return np.split(flat, np.cumsum(lens)[:-1])


def hex_to_text(levels: np.ndarray) -> str:
    """Nine hex-digit strings in metric order, joined by ``:`` (``0f10:0000:...``).

    ``levels``: one job's (9, length) hex levels.
    """
    return ":".join("".join(f"{int(v):x}" for v in row) for row in levels)


def hex_from_text(text: str) -> np.ndarray:
    """A hex coding from its text form (nine equal-length hex strings joined by ':').

    ``text``: the coding as text.
    """
    rows = str(text).split(":")
    if len(rows) != len(METRICS) or len({len(r) for r in rows}) != 1 or not rows[0]:
        raise IosightError(f"not a hex coding (9 equal-length hex strings): {text!r}")
    try:
        return np.array([[int(ch, 16) for ch in r] for r in rows], dtype=np.int8)
    except ValueError:
        raise IosightError(f"not a hex coding: {text!r}") from None
