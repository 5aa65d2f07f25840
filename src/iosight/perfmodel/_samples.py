"""Write samples: runs of file-per-process writes, grouped into a pattern's mean time.

A *run* is one execution of a pattern (``nodes, cores, size[, stripes]``) with its write
time, from the first ``open`` to the last ``close`` of the files (§IV-A). A *sample* is the
mean time of a pattern's runs; it is *converged* when the central-limit interval at the
given confidence is within ``error`` of the mean, and the runs stop at ``max_runs`` (§IV-A:
confidence 0.9 on Titan, 0.98 on Cetus, error 0.1, 9 runs).

References
----------
.. [1] Xie et al., 2019, §IV-A "Experiment Data".
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param

if TYPE_CHECKING:
    import pandas as pd

    from iosight.perfmodel._platform import Platform
    from iosight.warehouse import Warehouse

PATTERN_COLUMNS = ("nodes", "cores", "size", "stripes")
RUN_COLUMNS = (*PATTERN_COLUMNS, "write_time")
DEFAULT_CONFIDENCE = {"lustre": 0.9, "gpfs": 0.98}


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV (optionally compressed) or Parquet file as a DataFrame, with clear errors.

    ``path``: the file.
    """
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise IosightError(f"no such file: {p}")
    try:
        if p.suffix == ".parquet":
            return pd.read_parquet(p)
        return pd.read_csv(p)
    except (ValueError, OSError) as err:
        raise IosightError(f"cannot read {p} as a table: {err}") from None


_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst")


def check_table_path(path: str | Path) -> Path:
    """``path`` when its name says Parquet (``.parquet``) or CSV (``.csv``, optionally
    compressed: ``.csv.gz``...), so a table is never written in a format its name hides."""
    p = Path(path)
    if p.suffix != ".parquet" and not p.name.endswith(_CSV_SUFFIXES):
        raise IosightError(
            f"{p}: a table file must end in .parquet or .csv (or {', '.join(_CSV_SUFFIXES[1:])})"
        )
    return p


def write_table(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` as Parquet (``.parquet``) or CSV (``.csv``, compressed by its suffix).

    ``path``: the file written.
    """
    p = check_table_path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix == ".parquet":
        df.to_parquet(p, index=False)
    else:
        df.to_csv(p, index=False)
    return p


def check_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Validate a runs table (``nodes, cores, size, write_time``; ``stripes`` optional)."""
    need = {"nodes", "cores", "size", "write_time"}
    missing = sorted(need - set(runs.columns))
    if missing:
        raise IosightError(
            f"write runs need the columns {sorted(need)} (and optionally stripes, start_time); "
            f"missing {missing}"
        )
    out = runs.copy()
    if "stripes" not in out:
        out["stripes"] = np.nan
    for col in ("nodes", "cores", "size", "write_time"):
        vals = np.asarray(out[col], dtype=float)
        if not np.all(np.isfinite(vals)) or np.any(vals <= 0):
            bad = int(np.count_nonzero(~np.isfinite(vals) | (vals <= 0)))
            raise IosightError(f"column {col!r} must be positive and finite; {bad} rows are not")
    return out


def group_runs(
    runs: pd.DataFrame,
    *,
    confidence: float = 0.9,
    error: float = 0.1,
    max_runs: int = 9,
    min_runs: int = 3,
) -> pd.DataFrame:
    """Group repeated runs of a pattern into one sample with the CLT convergence test.

    Runs of a pattern are taken in ``start_time`` order (file order without it); after each
    run ``r >= min_runs`` the interval ``z * s / sqrt(r)`` is compared with ``error * mean``;
    the first ``r`` that passes ends the pattern (converged), otherwise the first
    ``max_runs`` runs give an unconverged sample.

    ``runs``: one row per run (``nodes, cores, size[, stripes], write_time``); ``error``: the
    relative error the interval must reach; ``min_runs``: runs before the test is first made.

    Notes
    -----
    iosight's reading: ``z`` is the two-sided normal quantile of ``confidence`` and the
    test starts at ``min_runs = 3`` runs (a two-run standard deviation is too unstable).
    Vectorised with cumulative sums per pattern.
    """
    import pandas as pd
    from scipy.stats import norm

    check_param("confidence", confidence, 0 < confidence < 1, "in (0, 1)")
    check_param("error", error, error > 0, "positive")
    check_param("max_runs", max_runs, max_runs >= min_runs >= 2, "at least min_runs (>= 2)")
    df = check_runs(runs)
    extra = [c for c in ("system", "synthetic", "first_node", "first_target") if c in df.columns]
    keys = [*extra, *PATTERN_COLUMNS]
    order = ["start_time"] if "start_time" in df.columns else []
    df = df.assign(_row=np.arange(len(df)), stripes=df["stripes"].fillna(0))
    df = df.sort_values([*keys, *order, "_row"], kind="mergesort").reset_index(drop=True)
    g = df.groupby(keys, sort=False)
    r = g.cumcount().to_numpy() + 1
    s1 = g["write_time"].cumsum().to_numpy()
    s2 = (df["write_time"] ** 2).groupby([df[k] for k in keys], sort=False).cumsum().to_numpy()
    mean = s1 / r
    var = np.where(r > 1, (s2 - r * mean**2) / np.maximum(r - 1, 1), np.inf)
    half = norm.ppf(0.5 + confidence / 2) * np.sqrt(np.maximum(var, 0) / r)
    ok = (r >= min_runs) & (r <= max_runs) & (half <= error * mean)
    df = df.assign(_r=r, _mean=mean, _half=half, _ok=ok, _key=g.ngroup().to_numpy())
    df = df[r <= max_runs]
    first_ok = df[df["_ok"]].groupby("_key").head(1)
    last = df.groupby("_key").tail(1)
    end = pd.concat([first_ok, last[~last["_key"].isin(first_ok["_key"])]]).sort_values("_key")
    out = end[keys].copy()
    out["mean_time"] = end["_mean"].to_numpy()
    out["runs"] = end["_r"].to_numpy()
    out["halfwidth"] = end["_half"].to_numpy()
    out["converged"] = end["_ok"].to_numpy()
    out["stripes"] = out["stripes"].replace(0, np.nan)
    return out.reset_index(drop=True)


def runs_from_warehouse(
    wh: Warehouse, platform: Platform, *, cores_per_node: int | None = None
) -> pd.DataFrame:
    """File-per-process write runs from Darshan logs (IOR and similar) in the warehouse.

    A job qualifies when every written POSIX record belongs to one rank (no shared file,
    rank ``-1``) and each writing rank wrote exactly one file. ``nodes`` is
    ``ceil(nprocs / cores_per_node)`` (Darshan does not record nodes; default: the
    platform's cores per node), ``size`` the median bytes per file, ``write_time`` the last
    ``POSIX_F_CLOSE_END_TIMESTAMP`` minus the first ``POSIX_F_OPEN_START_TIMESTAMP``, and
    ``stripes`` the median ``LUSTRE_COMP_STRIPE_COUNT`` (``LUSTRE_STRIPE_WIDTH`` in older
    logs) of the written files.

    ``wh``: the warehouse of Darshan logs; ``platform``: the platform the jobs ran on;
    ``cores_per_node``: cores per node the jobs used (default: the platform's).
    """
    wh.require("jobs")
    wh.require("posix", "ingest Darshan logs with a POSIX module first")
    m = cores_per_node or platform.cores_per_node
    check_param("cores_per_node", m, m >= 1, "a positive integer")
    need = {"POSIX_BYTES_WRITTEN", "POSIX_F_OPEN_START_TIMESTAMP", "POSIX_F_CLOSE_END_TIMESTAMP"}
    missing = sorted(need - set(wh.column_names("posix")))
    if missing:
        raise IosightError(f"the posix table lacks {missing}; re-ingest with a newer reader")
    stripe_sql = "null"
    if wh.has_table("lustre"):
        cols = set(wh.column_names("lustre"))
        col = next(
            (c for c in ("LUSTRE_COMP_STRIPE_COUNT", "LUSTRE_STRIPE_WIDTH") if c in cols), None
        )
        if col:
            stripe_sql = (
                f'(select median("{col}") from lustre l where l.job_key = f.job_key '
                "and l.record_id in (select record_id from w where w.job_key = f.job_key))"
            )
    synth = (
        "coalesce(any_value(j.synthetic), false)"
        if "synthetic" in set(wh.column_names("jobs"))
        else "false"
    )
    query = f"""
        with w as (
            select job_key, rank, record_id, "POSIX_BYTES_WRITTEN" as b,
                   "POSIX_F_OPEN_START_TIMESTAMP" as o, "POSIX_F_CLOSE_END_TIMESTAMP" as c
            from posix where "POSIX_BYTES_WRITTEN" > 0
        ), f as (
            select w.job_key, any_value(j.nprocs) as nprocs,
                   any_value(j.start_time) as start_time, {synth} as synthetic,
                   count(*) as files, count(distinct w.rank) as ranks, min(w.rank) as min_rank,
                   median(w.b) as size, min(w.o) as t0, max(w.c) as t1
            from w join jobs j on j.job_key = w.job_key group by w.job_key
        )
        select job_key, nprocs, start_time, synthetic, files, ranks, min_rank, size,
               t1 - t0 as write_time, {stripe_sql} as stripes
        from f order by start_time, job_key
    """
    jobs = wh.sql(query)
    fpp = (jobs["min_rank"] >= 0) & (jobs["files"] == jobs["ranks"]) & (jobs["write_time"] > 0)
    jobs = jobs[fpp].copy()
    if jobs.empty:
        raise IosightError(
            "no file-per-process write jobs in the warehouse (every written file must belong to "
            "one rank, one file per rank, with open/close timestamps)"
        )
    jobs["cores"] = np.minimum(jobs["ranks"], m).astype(int)
    jobs["nodes"] = [math.ceil(r / m) for r in jobs["ranks"]]
    jobs["size"] = jobs["size"].round().astype(np.int64)
    if platform.filesystem != "lustre":
        jobs["stripes"] = np.nan
    return jobs[["job_key", "start_time", "synthetic", *RUN_COLUMNS]].reset_index(drop=True)


def collect_samples(
    platform: Platform,
    *,
    warehouse: Warehouse | None = None,
    runs_csv: str | Path | None = None,
    cores_per_node: int | None = None,
    confidence: float | None = None,
    error: float = 0.1,
    max_runs: int = 9,
) -> pd.DataFrame:
    """Samples from a runs CSV/Parquet file or from the warehouse's Darshan logs (§IV-A).

    ``confidence`` defaults to 0.9 on Lustre and 0.98 on GPFS, as the paper used.

    ``platform``: the platform the runs ran on; ``warehouse``: a warehouse of Darshan logs to
    take runs from; ``runs_csv``: a runs table (CSV or Parquet) to take them from instead;
    ``cores_per_node``: cores per node the jobs used (default: the platform's); ``error``: the
    convergence test's relative error; ``max_runs``: runs of a pattern at most.
    """
    if (warehouse is None) == (runs_csv is None):
        raise IosightError("give exactly one source of runs: a warehouse or a runs CSV")
    if runs_csv is not None:
        runs = read_table(runs_csv)
    else:
        runs = runs_from_warehouse(warehouse, platform, cores_per_node=cores_per_node)
    conf = confidence or DEFAULT_CONFIDENCE[platform.filesystem]
    return group_runs(runs, confidence=conf, error=error, max_runs=max_runs)
