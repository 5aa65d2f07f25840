"""Request-size rules: many small requests (P05/P06) and misaligned requests (P07/P08).

Drishti's ``check_small_operation`` and ``check_misaligned``. Counts come from the
job totals (Darshan's access-size histograms), so job-total tables get them too; the
files come from the per-file records and the ranks from DXT where present.
"""

from __future__ import annotations

import numpy as np

from iosight.insights._frame import JobData, top_files, top_ranks
from iosight.insights._rules import findings, pct, rule, share
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds


def _hdf5(d: JobData) -> np.ndarray:
    return d.jobs.contains("modules", "H5F")


def _small(d: JobData, t: Thresholds, op: str) -> Table:
    j, f = d.jobs, d.files
    ops, small, time = j.num(f"{op}s"), j.num(f"small_{op}s"), j.num(f"{op}_time")
    s = share(small, ops)
    files = top_files(d, f.num(f"small_{op}s"), f.num(f"small_{op}s") > 0) if len(f) else None
    ranks = top_ranks(d, op)
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
        message=lambda i: [
            f"{n:.0f} of {o:.0f} {op}s ({pct(v)}) are smaller than 1 MiB"
            for n, o, v in zip(small[i], ops[i], s[i], strict=True)
        ],
        evidence={f"small_{op}s": small, f"{op}s": ops, "small_share": s, "dxt_ranks": ranks},
        recommendation=rec,
        stake_s=time * s,
        stake_how=f"POSIX {op} time x share of {op}s below 1 MiB (time spent in small "
        "requests if each costs as much as any other: an upper bound on what aggregation saves)",
        files=files,
    )


@rule("P05", "requests", "many small reads", counters=("reads", "small_reads"))
def small_reads(d: JobData, t: Thresholds) -> Table:
    return _small(d, t, "read")


@rule("P06", "requests", "many small writes", counters=("writes", "small_writes"))
def small_writes(d: JobData, t: Thresholds) -> Table:
    return _small(d, t, "write")


def _misaligned(d: JobData, t: Thresholds, col: str, what: str, rec) -> Table:
    j = d.jobs
    ops = j.num("reads") + j.num("writes")
    bad = j.num(col)
    s = share(bad, ops)
    time = j.num("read_time") + j.num("write_time")
    return findings(
        j,
        (ops > 0) & (s > t.misaligned_requests),
        level="high",
        message=lambda i: [f"{pct(v)} of the requests are misaligned in {what}" for v in s[i]],
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
def misaligned_memory(d: JobData, t: Thresholds) -> Table:
    return _misaligned(
        d, t, "mem_not_aligned", "memory", "Allocate I/O buffers aligned (posix_memalign)"
    )


@rule(
    "P08",
    "requests",
    "misaligned file requests",
    counters=("reads", "writes", "file_not_aligned"),
)
def misaligned_file(d: JobData, t: Thresholds) -> Table:
    rec = np.where(
        _hdf5(d),
        "Align requests to the file system's block or stripe size; with HDF5 use H5Pset_alignment",
        "Align requests to the file system's block or stripe size (on Lustre, match the "
        "stripe size: lfs setstripe -S)",
    )
    return _misaligned(d, t, "file_not_aligned", "the file", rec)
