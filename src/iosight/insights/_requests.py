"""Request-size rules: many small requests (P05/P06) and misaligned requests (P07/P08).

Drishti's ``check_small_operation`` and ``check_misaligned``. Counts come from the
job totals (Darshan's access-size histograms), so job-total tables get them too; the
files come from the per-file records and the ranks from DXT where present.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iosight.insights._frame import JobData, top_files, top_ranks
from iosight.insights._rules import findings, pct, rule, share
from iosight.insights._thresholds import Thresholds


def _hdf5(d: JobData) -> np.ndarray:
    return d.jobs["modules"].str.contains("H5F", regex=False).to_numpy()


def _small(d: JobData, t: Thresholds, op: str) -> pd.DataFrame:
    j, f = d.jobs, d.files
    ops = j[f"{op}s"].fillna(0).to_numpy(dtype=float)
    small = j[f"small_{op}s"].fillna(0).to_numpy(dtype=float)
    s = share(small, ops)
    time = j[f"{op}_time"].fillna(0).to_numpy(dtype=float)
    files = top_files(f, f[f"small_{op}s"], f[f"small_{op}s"] > 0) if len(f) else None
    ranks = top_ranks(d.dxt, op)
    ranks = ranks.reindex(j["job_key"]).fillna("").to_numpy()
    rec = np.where(
        _hdf5(d),
        "Aggregate small requests into larger ones; since the job uses HDF5, consider "
        "collective I/O (H5Pset_dxpl_mpio) and chunk sizes of 1 MiB or more",
        "Aggregate small requests into larger ones (buffer in memory, or collective MPI-IO "
        "that merges ranks' requests)",
    )
    return findings(
        j,
        (s > t.small_requests) & (small > t.small_requests_absolute),
        level="high",
        message=lambda x: [
            f"{n:.0f} of {o:.0f} {op}s ({pct(v)}) are smaller than 1 MiB"
            for n, o, v in zip(small[x.index], ops[x.index], s[x.index], strict=True)
        ],
        evidence={f"small_{op}s": small, f"{op}s": ops, "small_share": s, "dxt_ranks": ranks},
        recommendation=rec,
        stake_s=time * s,
        stake_how=f"POSIX {op} time x share of {op}s below 1 MiB (time spent in small "
        "requests if each costs as much as any other: an upper bound on what aggregation saves)",
        files=files,
    )


@rule("P05", "requests", "many small reads", counters=("reads", "small_reads"))
def small_reads(d: JobData, t: Thresholds) -> pd.DataFrame:
    return _small(d, t, "read")


@rule("P06", "requests", "many small writes", counters=("writes", "small_writes"))
def small_writes(d: JobData, t: Thresholds) -> pd.DataFrame:
    return _small(d, t, "write")


def _misaligned(d: JobData, t: Thresholds, col: str, what: str, rec) -> pd.DataFrame:
    j = d.jobs
    ops = (j["reads"].fillna(0) + j["writes"].fillna(0)).to_numpy(dtype=float)
    bad = j[col].fillna(0).to_numpy(dtype=float)
    s = share(bad, ops)
    time = (j["read_time"].fillna(0) + j["write_time"].fillna(0)).to_numpy(dtype=float)
    return findings(
        j,
        (ops > 0) & (s > t.misaligned_requests),
        level="high",
        message=lambda x: [
            f"{pct(v)} of the requests are misaligned in {what}" for v in s[x.index]
        ],
        evidence={col: bad, "operations": ops, "misaligned_share": s},
        recommendation=rec,
        stake_s=time * np.minimum(s, 1.0),
        stake_how="POSIX read+write time x share of misaligned requests (upper bound)",
    )


@rule(
    "P07",
    "requests",
    "misaligned memory requests",
    counters=("reads", "writes", "mem_not_aligned"),
)
def misaligned_memory(d: JobData, t: Thresholds) -> pd.DataFrame:
    return _misaligned(
        d, t, "mem_not_aligned", "memory", "Allocate I/O buffers aligned (posix_memalign)"
    )


@rule(
    "P08",
    "requests",
    "misaligned file requests",
    counters=("reads", "writes", "file_not_aligned"),
)
def misaligned_file(d: JobData, t: Thresholds) -> pd.DataFrame:
    rec = np.where(
        _hdf5(d),
        "Align requests to the file system's block or stripe size; with HDF5 use H5Pset_alignment",
        "Align requests to the file system's block or stripe size (on Lustre, match the "
        "stripe size: lfs setstripe -S)",
    )
    return _misaligned(d, t, "file_not_aligned", "the file", rec)
