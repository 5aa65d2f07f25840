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

from iosight._units import human_bytes, human_duration
from iosight.insights._frame import JobData, first_joined, leading, per_job, top_files
from iosight.insights._rules import findings, no_findings, pct, rule, share
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds


def _shared_small(d: JobData, t: Thresholds, op: str) -> Table:
    j, f = d.jobs, d.files
    if not len(f):
        return no_findings(d.jobs)
    shared = _shared(f)
    ops = per_job(d, shared, f.num(f"{op}s"))
    small = per_job(d, shared, f.num(f"small_{op}s"))
    time = per_job(d, shared, f.num(f"{op}_time"))
    s = share(small, ops)
    return findings(
        j,
        j["has_records"] & (s > t.small_requests) & (small > t.small_requests_absolute),
        level="high",
        message=lambda i: [
            f"{n:.0f} of {o:.0f} {op}s to shared files ({pct(v)}) are smaller than 1 MiB"
            for n, o, v in zip(small[i], ops[i], s[i], strict=True)
        ],
        evidence={f"shared_small_{op}s": small, f"shared_{op}s": ops, "small_share": s},
        recommendation="Use collective MPI-IO on shared files so that aggregators merge the "
        "ranks' small requests into large ones",
        stake_s=time * s,
        stake_how=f"{op} time on shared files x share of small {op}s (upper bound)",
        files=top_files(d, f.num(f"small_{op}s"), shared & (f.num(f"small_{op}s") > 0)),
    )


@rule("P15", "imbalance", "small reads to shared files", needs="records")
def shared_small_reads(d: JobData, t: Thresholds) -> Table:
    return _shared_small(d, t, "read")


@rule("P16", "imbalance", "small writes to shared files", needs="records")
def shared_small_writes(d: JobData, t: Thresholds) -> Table:
    return _shared_small(d, t, "write")


@rule("P18", "imbalance", "data imbalance on shared files (stragglers)", needs="records")
def straggler_bytes(d: JobData, t: Thresholds) -> Table:
    j, f = d.jobs, d.files
    if not len(f):
        return no_findings(d.jobs)
    gap = f.num("rank_bytes_gap")
    imb = share(gap, f.num("bytes_read") + f.num("bytes_written"))
    hit = _shared(f) & (imb > t.imbalance_stragglers)
    count = per_job(d, hit)
    gap_bytes = per_job(d, hit, gap)
    return findings(
        j,
        count > 0,
        level="high",
        message=lambda i: [
            f"Data transfer imbalance caused by stragglers on {n:.0f} shared file(s): "
            f"the slowest and fastest ranks moved {human_bytes(b)} apart"
            for n, b in zip(count[i], gap_bytes[i], strict=True)
        ],
        evidence={"files": count, "slowest_minus_fastest_bytes": gap_bytes},
        recommendation="Balance the data each rank moves to shared files; if an unequal split "
        "is inherent, consider collective I/O or fewer writers (aggregators)",
        stake_bytes=gap_bytes,
        stake_how="sum over the files of |bytes of the slowest rank - bytes of the fastest|",
        files=top_files(d, imb * 100, hit),
    )


@rule("P19", "imbalance", "time imbalance on shared files (stragglers)", needs="records")
def straggler_time(d: JobData, t: Thresholds) -> Table:
    j, f = d.jobs, d.files
    if not len(f):
        return no_findings(d.jobs)
    gap = f.num("rank_time_gap")
    busy = f.num("read_time") + f.num("write_time") + f.num("meta_time")
    imb = share(gap, busy)
    hit = _shared(f) & (imb > t.imbalance_stragglers)
    count = per_job(d, hit)
    gap_s = per_job(d, hit, gap)
    return findings(
        j,
        count > 0,
        level="high",
        message=lambda i: [
            f"Time imbalance caused by stragglers on {n:.0f} shared file(s): the slowest rank "
            f"spent {human_duration(s)} more in I/O than the fastest"
            for n, s in zip(count[i], gap_s[i], strict=True)
        ],
        evidence={"files": count, "slowest_minus_fastest_s": gap_s},
        recommendation="Find why some ranks are slower (more data, worse placement, contention); "
        "balance the work or use collective I/O",
        stake_s=gap_s,
        stake_how="sum over the files of slowest-rank minus fastest-rank I/O time: what the "
        "other ranks may wait",
        files=top_files(d, imb * 100, hit),
    )


def _individual(d: JobData, t: Thresholds, op: str) -> Table:
    j, f = d.jobs, d.files
    if not len(f):
        return no_findings(d.jobs)
    col = "written" if op == "write" else "read"
    hi, lo = f[f"rank_{col}_max"].astype(float), f[f"rank_{col}_min"].astype(float)
    diff = np.nan_to_num(hi - lo, nan=0.0)
    imb = share(diff, np.nan_to_num(hi, nan=0.0))
    hit = ~np.isnan(hi) & (imb > t.imbalance_size)
    count = per_job(d, hit)
    gap = per_job(d, hit, diff)
    rows = np.flatnonzero(hit)  # files come ordered by job: the first 3 of each job's
    rows = rows[leading(d.file_job[rows], 3)]
    most, least = f[f"rank_{col}_most"][rows], f[f"rank_{col}_least"][rows]
    label = [
        f"{name}: rank {_rank(a)} {human_bytes(h)} vs rank {_rank(b)} {human_bytes(w)}"
        for name, a, h, b, w in zip(f["name"][rows], most, np.nan_to_num(hi[rows], nan=0.0),
                                    least, np.nan_to_num(lo[rows], nan=0.0), strict=True)
    ]  # fmt: skip
    ranks = first_joined(j, d.file_job[rows], label, 3, "; ")
    return findings(
        j,
        count > 0,
        level="high",
        message=lambda i: [
            f"{op.capitalize()} imbalance across ranks on {n:.0f} file(s) opened by ranks "
            f"separately ({human_bytes(g)} between most and least)"
            for n, g in zip(count[i], gap[i], strict=True)
        ],
        evidence={
            "files": count,
            "max_minus_min_bytes": gap,
            "ranks": ranks,
        },
        recommendation=f"Give ranks equal shares of the data to {op}, or let fewer ranks "
        f"({'aggregators' if op == 'write' else 'readers'}) do it and distribute",
        stake_bytes=gap,
        stake_how="sum over the files of bytes of the busiest rank minus the least busy",
        files=top_files(d, imb * 100, hit),
    )


def _shared(f: Table) -> np.ndarray:
    """Per file row, whether it is a shared file's reduced record (rank -1)."""
    return np.array([v is True or v == 1 for v in f["shared"].tolist()], dtype=bool)


def _rank(v) -> str:
    """A rank as pandas' ``Int64`` writes it: whole, ``<NA>`` where missing."""
    return "<NA>" if v is None or v != v else str(int(v))


@rule("P21", "imbalance", "write imbalance across ranks", needs="records")
def write_imbalance(d: JobData, t: Thresholds) -> Table:
    return _individual(d, t, "write")


@rule("P22", "imbalance", "read imbalance across ranks", needs="records")
def read_imbalance(d: JobData, t: Thresholds) -> Table:
    return _individual(d, t, "read")
