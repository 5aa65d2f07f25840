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

from iosight._errors import IosightError

if TYPE_CHECKING:
    import pandas as pd

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


def _system(prefix: str, df: pd.DataFrame) -> pd.Series:
    fs = df["_file_system"].astype("string")
    bb = df["darshan_biggest_write_fs"].astype("string").str.contains("/dws/", regex=False)
    fs = fs.mask(fs.isna() & bb.fillna(False), "datawarp").fillna("unknown")
    return prefix + "/" + fs


def tokio_samples(path: str | Path) -> pd.DataFrame:
    """File-per-process write samples of one TOKIO-ABC summary file, with their features.

    Columns: ``system, app, start_time, nprocs, size, write_time, synthetic`` and one column
    per raw feature (``m*n``, ``K``, ``fullest OST %``, ...; NaN where the system lacks it).
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
    nbytes = w["darshan_tot_bytes_written_posix"].astype(float)
    out = pd.DataFrame(
        {
            "system": _system(prefix, w).to_numpy(),
            "app": w["darshan_app"].astype(str).str.rsplit("/", n=1).str[-1].to_numpy(),
            "start_time": w["_datetime_start"].astype(float).to_numpy(),
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
    starts after every training sample."""
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


def evaluate_tokio_files(
    paths: list[str | Path], *, seed: int = 0
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Accuracy of every family on every system of the given TOKIO-ABC files.

    Returns the accuracy table (``system`` column added) and, per system, the features the
    best Lasso selected with their coefficients (raw units).
    """
    import pandas as pd

    from iosight.perfmodel._search import linear_coefficients

    tables, coefs = [], {}
    for path in paths:
        samples = tokio_samples(path)
        for system in samples["system"].unique():
            out = evaluate_tokio(samples, system, seed=seed)
            acc = out.accuracy.assign(system=system)
            acc["validation_mse"] = acc["family"].map(
                {f: c.val_mse for f, c in out.candidates.items()}
            )
            tables.append(acc)
            coefs[system] = linear_coefficients(out.candidates["lasso"].estimator, out.features)
    cols = ["system", "family", "test_set"]
    acc = pd.concat(tables, ignore_index=True)
    return acc[cols + [c for c in acc.columns if c not in cols]], coefs
