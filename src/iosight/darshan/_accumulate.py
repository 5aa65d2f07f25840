"""``darshan-parser --total`` for POSIX, MPI-IO and STDIO records without libdarshan-util.

A vectorised reimplementation of libdarshan-util 3.5's accumulator for the modules it
reduces: ``darshan_log_agg_{posix,mpiio}_files`` and ``darshan_log_agg_stdio_records``
(one summary record, rule by counter) and ``darshan_accumulator_emit``'s derived metrics
(total bytes, the slowest rank's time in unique files plus the slowest time in each
shared file, and their rate). The C code folds records one at a time; each rule here is
the closed form of that fold over the record array, so results are equal value by value
(float sums are taken sequentially, in record order, as the C loop does). Only the top-4
stride/access tables, whose merge depends on the order records arrive in, are folded
record by record, and only over records that hold any.

libdarshan-util 3.5 reduces no other module iosight stores: its accumulator refuses H5F,
H5D, PNETCDF_FILE and PNETCDF_VAR (``darshan_accumulator_create`` fails, as those
modules have no ``log_record_metrics``), and ``darshan-parser --total`` prints none for
them, so a log's ``job_totals`` hold none either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iosight.darshan._darshan3_counters import COUNTERS

_BASE = 2  # words of struct darshan_base_record (id, rank)

ACCUMULATED = ("POSIX", "MPI-IO", "STDIO")  # modules reduced here


@dataclass(frozen=True)
class _Rules:
    """Which rule of a module's ``agg_records`` each counter follows."""

    prefix: str  # counter prefix: POSIX, MPIIO
    summed: tuple[str, ...]  # summed (POSIX: floored at -1, "invalid")
    clamp: bool
    last: tuple[str, ...] = ()  # the last record's value
    maxed: tuple[str, ...] = ()  # largest value, from 0
    top4: tuple[str, ...] = ()  # first counter of each (4 values, 4 counts) table
    top4_skip_empty_first: bool = False  # MPI-IO skips a record whose first value is 0
    slowest_op: bool = True  # F_MAX_{READ,WRITE}_TIME and the size of that operation


def _names(mod: str, pred) -> tuple[str, ...]:
    return tuple(n for n in COUNTERS[mod][0] if pred(n.split("_", 1)[1]))


_POSIX_SUMS = {"OPENS", "FILENOS", "DUPS", "READS", "WRITES", "SEEKS", "STATS", "MMAPS"}
_POSIX_SUMS |= {"FSYNCS", "FDSYNCS", "RENAME_SOURCES", "RENAME_TARGETS", "RW_SWITCHES"}
_STDIO_SUMS = {"OPENS", "FDOPENS", "READS", "WRITES", "SEEKS", "FLUSHES"}
_RULES = {
    "POSIX": _Rules(
        "POSIX",
        _names(
            "POSIX",
            lambda n: (
                n in _POSIX_SUMS
                or n.startswith(("SIZE_", "CONSEC_", "SEQ_", "BYTES_"))
                or n.endswith("_NOT_ALIGNED")
            ),
        ),
        True,
        ("POSIX_RENAMED_FROM", "POSIX_MODE", "POSIX_MEM_ALIGNMENT", "POSIX_FILE_ALIGNMENT"),
        ("POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN"),
        ("POSIX_STRIDE1_STRIDE", "POSIX_ACCESS1_ACCESS"),
        False,
    ),
    "MPI-IO": _Rules(
        "MPIIO",
        _names(
            "MPI-IO",
            lambda n: (
                n.endswith(("_OPENS", "_READS", "_WRITES", "SYNCS", "HINTS", "VIEWS"))
                or n.startswith(("BYTES_", "SIZE_", "RW_SWITCHES"))
            ),
        ),
        False,
        ("MPIIO_MODE",),
        (),
        ("MPIIO_ACCESS1_ACCESS",),
        True,
    ),
    "STDIO": _Rules(
        "STDIO",
        _names("STDIO", lambda n: n in _STDIO_SUMS or n.startswith("BYTES_")),
        False,
        maxed=("STDIO_MAX_BYTE_READ", "STDIO_MAX_BYTE_WRITTEN"),
        slowest_op=False,
    ),
}


def _clamped_sum(col: np.ndarray) -> int:
    """``a += x; if (a < 0) a = -1`` from a = 0: the running sum floored at -1.

    Closed form of that recursion (Lindley's): with partial sums S_k, the result is
    ``S_n - 1 + max(1, -min_k S_k)``.
    """
    if not len(col):
        return 0
    s = np.cumsum(col, dtype=np.int64)
    return int(s[-1] - 1 + max(1, -int(s.min())))


def _seq_sum(col: np.ndarray) -> float:
    """Sum in record order (``np.sum`` sums pairwise, which differs in the last bits)."""
    return float(np.cumsum(col)[-1]) if len(col) else 0.0


def _first_extreme(values: np.ndarray, start: float, larger: bool) -> int:
    """Index of the record that last wins ``if (v > agg) agg = v`` (or ``<``) from
    ``agg = start``: the first extreme value, or -1 when none beats ``start``."""
    i = int(np.argmax(values) if larger else np.argmin(values))
    beats = values[i] > start if larger else values[i] < start
    return i if beats else -1


def _i32(v: int) -> int:
    """C ``int total_count``: an int64 count stored in a 32-bit int."""
    return (v + 2**31) % 2**32 - 2**31


def _merge_top4(agg: list[int], rec: list[int]) -> None:
    """One step of the C merge of a record's 4 (value, count) pairs into the
    aggregate's, in place: matching values add counts where they stand, a new value enters in count
    order (ties: larger value first) and the last falls off."""
    dup = [False] * 4
    for j in range(4):
        for k in range(4):
            if agg[k] == rec[j]:
                agg[k + 4] += rec[j + 4]
                dup[j] = True
    for j in range(4):
        if dup[j]:
            continue
        if rec[j] == 0:
            break
        total = next((agg[k + 4] + rec[j + 4] for k in range(4) if agg[k] == rec[j]), None)
        total = _i32(rec[j + 4] if total is None else total)
        vals: list[int] = []
        cnts: list[int] = []
        k = 0
        while k < 4 and (agg[k + 4] > total or (agg[k + 4] == total and agg[k] > rec[j])):
            vals.append(agg[k])
            cnts.append(agg[k + 4])
            k += 1
        if len(vals) == 4:
            break
        vals.append(rec[j])
        cnts.append(rec[j + 4])
        while len(vals) != 4 and k < 4:
            if agg[k] != rec[j]:
                vals.append(agg[k])
                cnts.append(agg[k + 4])
            k += 1
        vals += [0] * (4 - len(vals))  # the C code reads past the table here; never seen
        cnts += [0] * (4 - len(cnts))
        agg[:8] = vals + cnts


def _top4(ints: np.ndarray, at: int, skip_empty_first: bool = False) -> list[int]:
    block = ints[:, at : at + 8]
    agg = [0] * 8
    used = block[:, 0] != 0 if skip_empty_first else block.any(axis=1)
    for row in block[used].tolist():
        _merge_top4(agg, row)
    return agg


def accumulate(mod: str, recs: np.ndarray, nprocs: int) -> dict[str, float]:
    """``total_<COUNTER>`` and the derived metrics of a log's records of one module.

    Parameters
    ----------
    mod : str
        ``POSIX``, ``MPI-IO`` or ``STDIO`` (see :data:`ACCUMULATED`).
    recs : numpy.ndarray
        Records as read, one row each: id, rank, counters, fcounters (8-byte words,
        up-converted to the module's current version).
    nprocs : int
        Processes in the job (ranks lie in ``[-1, nprocs)``, checked by the reader).

    Returns
    -------
    dict of str to float
        The same keys and values as libdarshan-util's accumulator gives.
    """
    rules = _RULES[mod]
    p = rules.prefix
    cnames, fnames = COUNTERS[mod]
    ci = {n: i for i, n in enumerate(cnames)}
    fi = {n: i for i, n in enumerate(fnames)}
    ids = recs[:, 0]
    ranks = recs[:, 1].view(np.int64)
    ints = np.ascontiguousarray(recs[:, _BASE : _BASE + len(cnames)]).view(np.int64)
    fl = np.ascontiguousarray(recs[:, _BASE + len(cnames) :][:, : len(fnames)]).view(np.float64)
    c = np.zeros(len(cnames), np.int64)
    f = np.zeros(len(fnames), np.float64)
    summed = [ci[n] for n in rules.summed]
    if rules.clamp:
        for i in summed:
            c[i] = _clamped_sum(ints[:, i])
    else:
        c[summed] = ints[:, summed].sum(axis=0)
    last = [ci[n] for n in rules.last]
    c[last] = ints[-1, last]
    maxed = [ci[n] for n in rules.maxed]
    if maxed:
        c[maxed] = np.maximum(ints[:, maxed].max(axis=0), 0)
    for name in rules.top4:
        at = ci[name]
        c[at : at + 8] = _top4(ints, at, rules.top4_skip_empty_first)
    rt, wt, mt = (fl[:, fi[f"{p}_F_{n}_TIME"]] for n in ("READ", "WRITE", "META"))
    f[fi[f"{p}_F_READ_TIME"]] = _seq_sum(rt)
    f[fi[f"{p}_F_WRITE_TIME"]] = _seq_sum(wt)
    f[fi[f"{p}_F_META_TIME"]] = _seq_sum(mt)
    for op in ("OPEN", "READ", "WRITE", "CLOSE"):
        start = fl[:, fi[f"{p}_F_{op}_START_TIMESTAMP"]]
        positive = start[start > 0]
        f[fi[f"{p}_F_{op}_START_TIMESTAMP"]] = positive.min() if len(positive) else 0.0
        end = fl[:, fi[f"{p}_F_{op}_END_TIMESTAMP"]]
        f[fi[f"{p}_F_{op}_END_TIMESTAMP"]] = max(end.max(), 0.0)
    for op in ("READ", "WRITE") if rules.slowest_op else ():
        col = fl[:, fi[f"{p}_F_MAX_{op}_TIME"]]
        i = _first_extreme(col, 0.0, larger=True)
        if i >= 0:
            f[fi[f"{p}_F_MAX_{op}_TIME"]] = col[i]
            c[ci[f"{p}_MAX_{op}_TIME_SIZE"]] = ints[i, ci[f"{p}_MAX_{op}_TIME_SIZE"]]
    shared = ranks == -1
    nbytes = ints[:, ci[f"{p}_BYTES_READ"]] + ints[:, ci[f"{p}_BYTES_WRITTEN"]]
    for kind, larger in (("FASTEST", False), ("SLOWEST", True)):
        rank_col, bytes_col = ci[f"{p}_{kind}_RANK"], ci[f"{p}_{kind}_RANK_BYTES"]
        time_col = fi[f"{p}_F_{kind}_RANK_TIME"]
        if not (ids == ids[0]).all():  # records of several files: not meaningful
            c[rank_col], c[bytes_col], f[time_col] = -1, -1, 0.0
            continue
        times = np.where(shared, fl[:, time_col], (rt + wt) + mt)
        i = int(np.argmax(times) if larger else np.argmin(times))
        c[rank_col] = ints[i, rank_col] if shared[i] else ranks[i]
        c[bytes_col] = ints[i, bytes_col] if shared[i] else nbytes[i]
        f[time_col] = times[i]
    out: dict[str, float] = {f"total_{n}": v for n, v in zip(cnames, c.tolist(), strict=True)}
    out.update({f"total_{n}": v for n, v in zip(fnames, f.tolist(), strict=True)})
    slowest = fl[:, fi[f"{p}_F_SLOWEST_RANK_TIME"]]
    out.update(_derived(p, ranks, nbytes, rt, wt, mt, slowest, nprocs))
    return out


def _derived(p: str, ranks, nbytes, rt, wt, mt, slowest, nprocs: int) -> dict[str, float]:
    """``darshan_accumulator_emit``'s <p>_agg_perf_by_slowest, _agg_time_by_slowest
    and _total_bytes: per-rank time in unique files (summed in record order, as
    ``np.bincount`` does), the slowest rank's plus each shared file's slowest time."""
    shared = ranks < 0
    io_time = (mt + rt) + wt
    by_rank = np.bincount(ranks[~shared], io_time[~shared], minlength=max(nprocs, 1))
    slowest_rank = max(float(by_rank.max()), 0.0)
    agg_time = slowest_rank + _seq_sum(slowest[shared])
    total = int(nbytes.sum())
    perf = (total / 1048576.0) / agg_time if agg_time else 0.0
    return {
        f"{p}_agg_perf_by_slowest": perf,
        f"{p}_agg_time_by_slowest": agg_time,
        f"{p}_total_bytes": total,
    }
