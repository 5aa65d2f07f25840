"""Shared files and rank imbalance: small requests to shared files (P15/P16),
stragglers on shared files (P18 bytes, P19 time), and unequal amounts per rank on
files several ranks open separately (P21 writes, P22 reads).

Drishti's ``check_shared_small_operation``, ``check_shared_data_imblance``,
``check_shared_time_imbalance`` and ``check_individual_*_imbalance``. A shared file
is one Darshan reduced to a rank -1 record (every rank opened it); the others keep
one record per rank.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iosight._units import human_bytes, human_duration
from iosight.insights._frame import JobData, per_job, top_files
from iosight.insights._rules import findings, no_findings, pct, rule, share
from iosight.insights._thresholds import Thresholds


def _by_job(d: JobData, values: pd.Series) -> np.ndarray:
    return values.reindex(d.jobs["job_key"]).fillna(0).to_numpy(dtype=float)


def _shared_small(d: JobData, t: Thresholds, op: str) -> pd.DataFrame:
    j, f = d.jobs, d.files
    if not len(f):
        return no_findings(d.jobs)
    shared = f["shared"].fillna(False).astype(bool)
    ops = _by_job(d, per_job(f, shared, f[f"{op}s"].fillna(0)))
    small = _by_job(d, per_job(f, shared, f[f"small_{op}s"].fillna(0)))
    time = _by_job(d, per_job(f, shared, f[f"{op}_time"].fillna(0)))
    s = share(small, ops)
    return findings(
        j,
        j["has_records"].to_numpy() & (s > t.small_requests) & (small > t.small_requests_absolute),
        level="high",
        message=lambda x: [
            f"{n:.0f} of {o:.0f} {op}s to shared files ({pct(v)}) are smaller than 1 MiB"
            for n, o, v in zip(small[x.index], ops[x.index], s[x.index], strict=True)
        ],
        evidence={f"shared_small_{op}s": small, f"shared_{op}s": ops, "small_share": s},
        recommendation="Use collective MPI-IO on shared files so that aggregators merge the "
        "ranks' small requests into large ones",
        stake_s=time * s,
        stake_how=f"{op} time on shared files x share of small {op}s (upper bound)",
        files=top_files(f, f[f"small_{op}s"], shared & (f[f"small_{op}s"] > 0)),
    )


@rule("P15", "imbalance", "small reads to shared files", needs="records")
def shared_small_reads(d: JobData, t: Thresholds) -> pd.DataFrame:
    return _shared_small(d, t, "read")


@rule("P16", "imbalance", "small writes to shared files", needs="records")
def shared_small_writes(d: JobData, t: Thresholds) -> pd.DataFrame:
    return _shared_small(d, t, "write")


@rule("P18", "imbalance", "data imbalance on shared files (stragglers)", needs="records")
def straggler_bytes(d: JobData, t: Thresholds) -> pd.DataFrame:
    j, f = d.jobs, d.files
    if not len(f):
        return no_findings(d.jobs)
    gap = f["rank_bytes_gap"].fillna(0)
    imb = pd.Series(share(gap, f["bytes_read"].fillna(0) + f["bytes_written"].fillna(0)), f.index)
    hit = f["shared"].fillna(False).astype(bool) & (imb > t.imbalance_stragglers)
    count = _by_job(d, per_job(f, hit))
    gap_bytes = _by_job(d, per_job(f, hit, gap))
    return findings(
        j,
        count > 0,
        level="high",
        message=lambda x: [
            f"Data transfer imbalance caused by stragglers on {n:.0f} shared file(s): "
            f"the slowest and fastest ranks moved {human_bytes(b)} apart"
            for n, b in zip(count[x.index], gap_bytes[x.index], strict=True)
        ],
        evidence={"files": count, "slowest_minus_fastest_bytes": gap_bytes},
        recommendation="Balance the data each rank moves to shared files; if an unequal split "
        "is inherent, consider collective I/O or fewer writers (aggregators)",
        stake_bytes=gap_bytes,
        stake_how="sum over the files of |bytes of the slowest rank - bytes of the fastest|",
        files=top_files(f, imb * 100, hit),
    )


@rule("P19", "imbalance", "time imbalance on shared files (stragglers)", needs="records")
def straggler_time(d: JobData, t: Thresholds) -> pd.DataFrame:
    j, f = d.jobs, d.files
    if not len(f):
        return no_findings(d.jobs)
    gap = f["rank_time_gap"].fillna(0)
    busy = f["read_time"].fillna(0) + f["write_time"].fillna(0) + f["meta_time"].fillna(0)
    imb = pd.Series(share(gap, busy), f.index)
    hit = f["shared"].fillna(False).astype(bool) & (imb > t.imbalance_stragglers)
    count = _by_job(d, per_job(f, hit))
    gap_s = _by_job(d, per_job(f, hit, gap))
    return findings(
        j,
        count > 0,
        level="high",
        message=lambda x: [
            f"Time imbalance caused by stragglers on {n:.0f} shared file(s): the slowest rank "
            f"spent {human_duration(s)} more in I/O than the fastest"
            for n, s in zip(count[x.index], gap_s[x.index], strict=True)
        ],
        evidence={"files": count, "slowest_minus_fastest_s": gap_s},
        recommendation="Find why some ranks are slower (more data, worse placement, contention); "
        "balance the work or use collective I/O",
        stake_s=gap_s,
        stake_how="sum over the files of slowest-rank minus fastest-rank I/O time: what the "
        "other ranks may wait",
        files=top_files(f, imb * 100, hit),
    )


def _individual(d: JobData, t: Thresholds, op: str) -> pd.DataFrame:
    j, f = d.jobs, d.files
    if not len(f):
        return no_findings(d.jobs)
    col = "written" if op == "write" else "read"
    hi = f[f"rank_{col}_max"]
    lo = f[f"rank_{col}_min"]
    imb = pd.Series(share((hi - lo).fillna(0), hi.fillna(0)), f.index)
    hit = hi.notna() & (imb > t.imbalance_size)
    count = _by_job(d, per_job(f, hit))
    gap = _by_job(d, per_job(f, hit, (hi - lo).fillna(0)))
    label = (
        f["name"].astype(str)
        + ": rank "
        + f[f"rank_{col}_most"].astype("Int64").astype(str)
        + " "
        + hi.fillna(0).map(human_bytes)
        + " vs rank "
        + f[f"rank_{col}_least"].astype("Int64").astype(str)
        + " "
        + lo.fillna(0).map(human_bytes)
    )
    ranks = label.where(hit).dropna().groupby(f["job_key"]).agg(lambda s: "; ".join(s[:3]))
    return findings(
        j,
        count > 0,
        level="high",
        message=lambda x: [
            f"{op.capitalize()} imbalance across ranks on {n:.0f} file(s) opened by ranks "
            f"separately ({human_bytes(g)} between most and least)"
            for n, g in zip(count[x.index], gap[x.index], strict=True)
        ],
        evidence={
            "files": count,
            "max_minus_min_bytes": gap,
            "ranks": ranks.reindex(j["job_key"]).fillna("").to_numpy(),
        },
        recommendation=f"Give ranks equal shares of the data to {op}, or let fewer ranks "
        f"({'aggregators' if op == 'write' else 'readers'}) do it and distribute",
        stake_bytes=gap,
        stake_how="sum over the files of bytes of the busiest rank minus the least busy",
        files=top_files(f, imb * 100, hit),
    )


@rule("P21", "imbalance", "write imbalance across ranks", needs="records")
def write_imbalance(d: JobData, t: Thresholds) -> pd.DataFrame:
    return _individual(d, t, "write")


@rule("P22", "imbalance", "read imbalance across ranks", needs="records")
def read_imbalance(d: JobData, t: Thresholds) -> pd.DataFrame:
    return _individual(d, t, "read")
