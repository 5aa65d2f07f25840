"""Real file-per-process writes from TOKIO-ABC ("A Year in the Life of a Parallel File System").

The TOKIO-ABC summaries (Lockwood et al., SC'18) hold one row per daily benchmark job on
Cori and Edison (Lustre, plus Cori's DataWarp burst buffer) and Mira (BG/Q + GPFS, Cetus's
sibling): Darshan job totals, file-system health, concurrent jobs and job placement.

Notes
-----
iosight's reading of the paper's method on this data (docs/perfmodel.md, "Real data"):

- a file-per-process write is a job that wrote more than it read, with at least 0.9 files
  per process; the write time is ``bytes written / darshan_agg_perf_by_slowest_posix``
  (MiB/s, the slowest rank's I/O time), the closest column to "first open to last close";
- the stage topology is not in the data, so the three performance-related parameters come
  from what is known when the job starts: aggregate load (files ``mn``, bytes per file
  ``K``, bytes ``mnK``), load skew (largest per-rank bytes, fullest OST, overloaded OSTs and
  OSSes), resources (OSTs in service, placement radius) and interference (concurrent nodes
  and jobs, ``concurrent nodes / mnK``), each as ``x`` and ``1/x``. Server-side load
  measured *during* the job (``fs_*``) is left out: it contains the job's own bytes and
  would leak the answer;
- one system (machine and file system) at a time, split in time: the first 70% of the
  year trains, the last 30% tests, and a random 20% of the test set validates.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_seed

if TYPE_CHECKING:
    import pandas as pd

    from iosight.perfmodel._online import OnlineSettings
    from iosight.perfmodel._search import SearchOutcome

_RAW = {  # feature -> (parameter, column or expression)
    "m*n": ("aggregate load", "darshan_biggest_write_api_files"),
    "K": ("aggregate load", None),
    "m*n*K": ("aggregate load", "darshan_tot_bytes_written_posix"),
    "max rank bytes": ("load skew", "darshan_max_bytes_written_posix"),
    "fullest OST %": ("load skew", "fshealth_ost_most_full_pct"),
    "average OST %": ("load skew", "fshealth_ost_avg_full_pct"),
    "overloaded OSTs": ("load skew", "fshealth_ost_overloaded_ost_count"),
    "overloaded OSSes": ("load skew", "fshealth_ost_overloaded_oss_count"),
    "OSTs in service": ("resources in use", "fshealth_ost_count"),
    "placement radius": ("resources in use", "topology_job_max_radius"),
    "concurrent nodes": ("interference", "jobsdb_concurrent_nodes"),
    "concurrent jobs": ("interference", "jobsdb_concurrent_jobs"),
    "concurrent nodes/(m*n*K)": ("interference", None),
}


#: Server-side load of the previous TOKIO job on the same file system (one that ended
#: before this job started): name -> (column, divide by the job's duration).
_LAGGED = {
    "lag written GiB/s": ("fs_tot_bytes_written", True),
    "lag read GiB/s": ("fs_tot_bytes_read", True),
    "lag OSS CPU": ("fs_ave_oss_cpu", False),
    "lag MDS CPU": ("fs_ave_mds_cpu", False),
}


def _lagged_load(df: pd.DataFrame, system: pd.Series, rows: pd.Index) -> pd.DataFrame:
    """For each row of ``rows``: the server-side load measured during the last job of
    ``df`` on the same system that *ended before* the row's job started, and the hours
    since that job ended (``lag age h``). Known when the job starts."""
    import pandas as pd

    start = df["_datetime_start"].astype(float)
    end = df["_datetime_end"].astype(float)
    dur = (end - start).clip(lower=1.0)
    cols = [col for col, _ in _LAGGED.values() if col in df.columns]
    # every server-side counter at zero: nothing was recorded (a production file system
    # never idles at 0% CPU and 0 bytes), so the sample is missing, not an idle system
    blank = (df[cols].astype(float) == 0).all(axis=1) if cols else None
    vals = {}
    for name, (col, rate) in _LAGGED.items():
        v = df[col].astype(float) if col in df.columns else pd.Series(np.nan, index=df.index)
        v = v.mask(blank) if blank is not None else v
        vals[name] = v / dur / 2**30 if rate else v
    out = pd.DataFrame(np.nan, index=rows, columns=[*_LAGGED, "lag age h"])
    for sys_name in system.loc[rows].unique():
        mine = system.index[(system == sys_name).to_numpy()]
        order = mine[np.argsort(end.loc[mine].to_numpy(), kind="mergesort")]
        ends = end.loc[order].to_numpy()
        targets = rows[(system.loc[rows] == sys_name).to_numpy()]
        k = np.searchsorted(ends, start.loc[targets].to_numpy(), side="left") - 1
        ok = k >= 0
        prev = order[k[ok]]
        for name in _LAGGED:
            out.loc[targets[ok], name] = vals[name].loc[prev].to_numpy()
        age = (start.loc[targets[ok]].to_numpy() - ends[k[ok]]) / 3600
        out.loc[targets[ok], "lag age h"] = age
    return out


def _system(prefix: str, df: pd.DataFrame) -> pd.Series:
    fs = df["_file_system"].astype("string")
    bb = df["darshan_biggest_write_fs"].astype("string").str.contains("/dws/", regex=False)
    fs = fs.mask(fs.isna() & bb.fillna(False), "datawarp").fillna("unknown")
    return prefix + "/" + fs


def tokio_samples(path: str | Path) -> pd.DataFrame:
    """File-per-process write samples of one TOKIO-ABC summary file, with their features.

    Columns: ``system, app, start_time, nprocs, size, write_time, synthetic`` and one column
    per raw feature (``m*n``, ``K``, ``fullest OST %``, ...; NaN where the system lacks it).

    ``path``: the TOKIO-ABC summary file.
    """
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise IosightError(f"no such file: {p}")
    try:
        df = pd.read_csv(p, low_memory=False)
    except (ValueError, OSError) as err:
        raise IosightError(f"cannot read {p} as a TOKIO-ABC summary CSV: {err}") from None
    need = {
        "darshan_tot_bytes_written_posix",
        "darshan_tot_bytes_read_posix",
        "darshan_nprocs",
        "darshan_biggest_write_api_files",
        "darshan_agg_perf_by_slowest_posix",
        "_datetime_start",
        "_datetime_end",
        "darshan_app",
        "_file_system",
    }
    missing = sorted(need - set(df.columns))
    if missing:
        raise IosightError(f"{p.name} is not a TOKIO-ABC summary file: missing {missing}")
    w = df[
        (df["darshan_tot_bytes_written_posix"] > df["darshan_tot_bytes_read_posix"])
        & (df["darshan_biggest_write_api_files"] >= 0.9 * df["darshan_nprocs"])
        & (df["darshan_agg_perf_by_slowest_posix"] > 0)
    ]
    if w.empty:
        raise IosightError(f"{p.name} holds no file-per-process write jobs")
    prefix = p.name.split("-")[0].split("_")[0].lower()
    system = pd.Series(_system(prefix, df).to_numpy(), index=df.index)
    lagged = _lagged_load(df, system, w.index)
    nbytes = w["darshan_tot_bytes_written_posix"].astype(float)
    out = pd.DataFrame(
        {
            "system": system.loc[w.index].to_numpy(),
            "app": w["darshan_app"].astype(str).str.rsplit("/", n=1).str[-1].to_numpy(),
            "start_time": w["_datetime_start"].astype(float).to_numpy(),
            "end_time": w["_datetime_end"].astype(float).to_numpy(),
            "nprocs": w["darshan_nprocs"].astype(int).to_numpy(),
            "size": (nbytes / w["darshan_biggest_write_api_files"]).to_numpy(),
            "write_time": (nbytes / (w["darshan_agg_perf_by_slowest_posix"] * 2**20)).to_numpy(),
            "synthetic": False,
        }
    )
    for name, (_, col) in _RAW.items():
        if col is not None:
            out[name] = w[col].astype(float).to_numpy() if col in w.columns else np.nan
    out["K"] = out["size"]
    out["concurrent nodes/(m*n*K)"] = out["concurrent nodes"] / out["m*n*K"]
    for name in lagged.columns:
        out[name] = lagged[name].to_numpy()
    return out.sort_values(["system", "start_time"], kind="mergesort").reset_index(drop=True)


def tokio_feature_frame(samples: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``x`` and ``1/x`` of each raw feature column (``1/x`` is 0 where ``x`` is 0)."""
    import pandas as pd

    parts = {}
    for c in columns:
        x = samples[c].to_numpy(float)
        parts[c] = x
        parts[f"1/({c})"] = np.divide(1.0, x, out=np.zeros_like(x), where=x != 0)
    return pd.DataFrame(parts, index=samples.index)


def tokio_split(
    samples: pd.DataFrame, system: str, *, train_share: float = 0.7
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One system's samples split in time: the first ``train_share`` trains, the rest
    tests; jobs starting at the same second stay on one side, so every test sample
    starts after every training sample.

    ``samples``: TOKIO-ABC samples; ``system``: the system split.
    """
    s = samples[samples["system"] == system].sort_values("start_time", kind="mergesort")
    if len(s) < 30:
        raise IosightError(
            f"system {system!r} has {len(s)} write samples; need at least 30 "
            f"(systems here: {', '.join(sorted(samples['system'].unique()))})"
        )
    t = s["start_time"].to_numpy()
    cut = int(np.searchsorted(t, t[int(round(len(s) * train_share))], side="left"))
    return s.iloc[:cut], s.iloc[cut:]


def evaluate_tokio(
    samples: pd.DataFrame,
    system: str,
    *,
    train_share: float = 0.7,
    seed: int = 0,
    families: tuple[str, ...] = ("lasso", "linear", "gradient boosting", "random forest", "median"),
) -> SearchOutcome:
    """Fit the paper's method and the other families on one system, split in time.

    Test sets are the benchmark applications (IOR, HACC-IO) of the last 30% of the year.

    ``samples``: TOKIO-ABC samples (:func:`tokio_samples`); ``system``: the system evaluated;
    ``train_share``: the earliest share of samples that trains; ``seed``: the random seed of the
    fits; ``families``: the model families compared.
    """
    from iosight.perfmodel._search import search_models

    train, test = tokio_split(samples, system, train_share=train_share)
    raw = [c for c in _RAW if train[c].notna().any() and train[c].nunique() > 1]
    fill = train[raw].median()
    x = tokio_feature_frame(train[raw].fillna(fill), raw)
    tx = tokio_feature_frame(test[raw].fillna(fill), raw)
    return search_models(
        x.to_numpy(float),
        train["write_time"].to_numpy(float),
        np.zeros(len(train), int),
        tx.to_numpy(float),
        test["write_time"].to_numpy(float),
        test["app"].to_numpy(),
        list(x.columns),
        subsets=[(0,)],
        families=families,
        seed=seed,
    )


#: Design choices of the predictor are scored on the training part from this quantile of
#: its start times on (:func:`training_walk_forward`).
DESIGN_START_SHARE = 0.3


def training_walk_forward(
    samples: pd.DataFrame,
    system: str,
    settings: OnlineSettings | None = None,
    *,
    start_share: float = DESIGN_START_SHARE,
) -> dict[str, float]:
    """Within-30% shares of the online median and the iosight predictor walked forward
    over one system's *training part* only (predictions from its ``start_share``
    quantile of start times on): the numbers the predictor's design is chosen on. The
    test period is not read (tested). Returns ``online median``, ``iosight predictor``
    and ``samples``.

    ``system``: the system walked; ``settings``: the online settings (default:
    :class:`OnlineSettings`).
    """
    from iosight.perfmodel._online import walk_forward
    from iosight.perfmodel._search import accuracy, relative_errors

    train, _ = tokio_split(samples, system)
    first = float(np.quantile(train["start_time"].to_numpy(float), start_share))
    pred = walk_forward(train, first, settings=settings)
    y = train.loc[pred.index, "write_time"].to_numpy(float)
    out = {
        name: float(accuracy(relative_errors(pred[col].to_numpy(), y))["within_30"])
        for name, col in (("online median", "online median"), ("iosight predictor", "predicted"))
    }
    return out | {"samples": float(len(y))}


#: The deployed method is chosen on the last ``VALIDATION_SHARE`` of the training part,
#: cut into ``VALIDATION_WINDOWS`` consecutive windows (walk-forward validation): the
#: period the predictor's design is scored on, about one month per window (three
#: windows over the last 30% decide some systems on differences under one point:
#: ``benchmarks/perfmodel_design.py`` prints both, docs/perfmodel.md).
VALIDATION_SHARE = 1 - DESIGN_START_SHARE
VALIDATION_WINDOWS = 7


def deployable_comparison(
    samples: pd.DataFrame,
    system: str,
    paper: SearchOutcome | None = None,
    *,
    seed: int = 0,
    share: float = VALIDATION_SHARE,
    windows: int = VALIDATION_WINDOWS,
) -> pd.DataFrame:
    """:func:`iosight.perfmodel.online_accuracy` on one system, with what iosight deploys
    chosen on ``windows`` consecutive windows covering the last ``share`` of the training
    part, the paper pipeline refitted for each window on the training rows before it
    (short validation decides on a few rows: docs/perfmodel.md). ``paper`` is
    :func:`evaluate_tokio`'s outcome on the usual split when already computed. The test
    period is not read for the choice (tested).

    ``samples``: TOKIO-ABC samples (:func:`tokio_samples`); ``system``: the system scored;
    ``seed``: the random seed of the fits.
    """
    from iosight.perfmodel._online import online_accuracy

    paper = paper or evaluate_tokio(samples, system, seed=seed, families=("lasso",))
    train, test = tokio_split(samples, system)
    n = len(train)
    edges = np.linspace(n * (1 - share), n, windows + 1).round()
    parts, paper_rows = [], []
    for lo, hi in zip(edges[:-1].astype(int), edges[1:].astype(int), strict=True):
        upto = train.iloc[:hi]
        _, window = tokio_split(upto, system, train_share=lo / hi)
        out = evaluate_tokio(upto, system, train_share=lo / hi, seed=seed, families=("lasso",))
        parts.append(window)
        paper_rows.append(out.predictions[out.predictions["family"] == "lasso"])
    cmp = online_accuracy(
        samples[samples["system"] == system],
        test,
        paper.predictions[paper.predictions["family"] == "lasso"],
        validation=parts,
        paper_validation=paper_rows,
    )
    return cmp.assign(system=system)


def evaluate_tokio_files(
    paths: list[str | Path], *, seed: int = 0
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], pd.DataFrame]:
    """Accuracy of every family on every system of the given TOKIO-ABC files.

    Returns the accuracy table (``system`` column added); per system, the features the
    best Lasso selected with their coefficients (raw units); and the deployable
    comparison (:func:`iosight.perfmodel.online_accuracy`: paper pipeline, online median,
    iosight predictor on the same scored rows, and the one of them iosight deploys,
    chosen on ``VALIDATION_WINDOWS`` windows over the last ``VALIDATION_SHARE`` of the
    training part; ``system`` column added).

    ``paths``: TOKIO-ABC summary files; ``seed``: the random seed of the fits.
    """
    import pandas as pd

    from iosight.perfmodel._search import linear_coefficients

    check_seed(seed)
    tables, coefs, online = [], {}, []
    for path in paths:
        samples = tokio_samples(path)
        for system in samples["system"].unique():
            out = evaluate_tokio(samples, system, seed=seed)
            online.append(deployable_comparison(samples, system, out, seed=seed))
            acc = out.accuracy.assign(system=system)
            acc["validation_mse"] = acc["family"].map(
                {f: c.val_mse for f, c in out.candidates.items()}
            )
            tables.append(acc)
            coefs[system] = linear_coefficients(out.candidates["lasso"].estimator, out.features)
    cols = ["system", "family", "test_set"]
    acc = pd.concat(tables, ignore_index=True)
    cmp = pd.concat(online, ignore_index=True)
    first = ["system", "method", "test_set"]
    cmp = cmp[first + [c for c in cmp.columns if c not in first]]
    return acc[cols + [c for c in acc.columns if c not in cols]], coefs, cmp
