"""Access-pattern rules: redundant traffic (P09/P10) and random vs sequential (P11-P14).

Drishti's ``check_traffic`` and ``check_random_operation``. Random requests are
Drishti's ``reads - sequential`` (Darshan's SEQ counters include the consecutive ones).
"""

from __future__ import annotations

import numpy as np

from iosight._units import human_bytes
from iosight.insights._frame import JobData, per_job, top_files
from iosight.insights._rules import findings, pct, rule, share
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds


def _redundant(d: JobData, t: Thresholds, op: str) -> Table:
    """iosight's reading: per file, bytes moved beyond the file's extent were moved twice.

    Drishti compares the largest offset of any file with the job's total bytes and
    fires when the offset is the larger, which is sparse access, not redundancy
    (docs/insights.md).
    """
    j, f = d.jobs, d.files
    moved_col = "bytes_read" if op == "read" else "bytes_written"
    ext_col = "read_extent" if op == "read" else "write_extent"
    if len(f):
        extra = np.maximum(f.num(moved_col) - f.num(ext_col), 0.0)
        per = per_job(d, extra > 0, extra)
        files = top_files(d, extra, extra > 0)
    else:
        per, files = np.zeros(len(j)), None
    moved = j.num(moved_col)
    s = share(per, moved)
    time = j.num(f"{op}_time")
    verb = "read" if op == "read" else "written"
    return findings(
        j,
        j["has_records"] & (per > 0) & (s > t.redundant_bytes_ratio),
        level="warn",
        message=lambda i: [
            f"{human_bytes(b)} ({pct(v)} of the bytes {verb}) were {verb} more than once: "
            f"more than the files' extents"
            for b, v in zip(per[i], s[i], strict=True)
        ],
        evidence={f"redundant_{op}_bytes": per, moved_col: moved, "redundant_share": s},
        recommendation=f"Keep data {verb} once in memory (or broadcast it to the ranks that "
        f"need it) instead of {'reading' if op == 'read' else 'writing'} it again",
        stake_s=time * s,
        stake_bytes=per,
        stake_how=f"per file, bytes {verb} beyond its extent; time = {op} time x that share",
        files=files,
    )


@rule("P09", "access", "redundant reads", needs="records")
def redundant_reads(d: JobData, t: Thresholds) -> Table:
    return _redundant(d, t, "read")


@rule("P10", "access", "redundant writes", needs="records")
def redundant_writes(d: JobData, t: Thresholds) -> Table:
    return _redundant(d, t, "write")


# what P11-P14 decide on; the "ok" findings also report the consecutive share
_RANDOM_READ = ("reads", "seq_reads")
_RANDOM_WRITE = ("writes", "seq_writes")
_SEQ_READ = (*_RANDOM_READ, "consec_reads")
_SEQ_WRITE = (*_RANDOM_WRITE, "consec_writes")


def _pattern(d: JobData, t: Thresholds, op: str, random: bool) -> Table:
    j, f = d.jobs, d.files
    ops, consec, seq = j.num(f"{op}s"), j.num(f"consec_{op}s"), j.num(f"seq_{op}s")
    rnd = np.maximum(ops - seq, 0.0)
    s = share(rnd, ops)
    fired = (rnd > 0) & (s > t.random_operations) & (rnd > t.random_operations_absolute)
    time = j.num(f"{op}_time")
    ev = {f"random_{op}s": rnd, f"{op}s": ops, f"consec_{op}s": consec, f"seq_{op}s": seq}
    if random:
        rnd_f = f.num(f"random_{op}s") if len(f) else None
        files = top_files(d, rnd_f, rnd_f > 0) if len(f) else None
        return findings(
            j,
            fired,
            level="high",
            message=lambda i: [
                f"{r:.0f} of {o:.0f} {op}s ({pct(v)}) are random (not after the previous one)"
                for r, o, v in zip(rnd[i], ops[i], s[i], strict=True)
            ],
            evidence=ev,
            recommendation="Reorder or sort requests by offset, or use collective I/O so the "
            "library does; on HDF5, read whole chunks",
            stake_s=time * s,
            stake_how=f"POSIX {op} time x share of random {op}s (upper bound)",
            files=files,
        )
    return findings(
        j,
        (ops > 0) & ~fired,
        level="ok",
        message=lambda i: [
            f"{op.capitalize()}s are mostly consecutive ({pct(a)}) and sequential ({pct(b)})"
            for a, b in zip(share(consec, ops)[i], share(seq - consec, ops)[i], strict=True)
        ],
        evidence=ev,
        recommendation="",
    )


@rule("P11", "access", "random reads", counters=_RANDOM_READ)
def random_reads(d: JobData, t: Thresholds) -> Table:
    return _pattern(d, t, "read", True)


@rule("P12", "access", "sequential reads", counters=_SEQ_READ)
def sequential_reads(d: JobData, t: Thresholds) -> Table:
    return _pattern(d, t, "read", False)


@rule("P13", "access", "random writes", counters=_RANDOM_WRITE)
def random_writes(d: JobData, t: Thresholds) -> Table:
    return _pattern(d, t, "write", True)


@rule("P14", "access", "sequential writes", counters=_SEQ_WRITE)
def sequential_writes(d: JobData, t: Thresholds) -> Table:
    return _pattern(d, t, "write", False)
