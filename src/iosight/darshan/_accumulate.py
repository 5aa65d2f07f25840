"""``darshan-parser --total`` for POSIX, MPI-IO and STDIO records without libdarshan-util.

A vectorised reimplementation of libdarshan-util 3.5's accumulator for the modules it
reduces: ``darshan_log_agg_{posix,mpiio}_files`` and ``darshan_log_agg_stdio_records``
(one summary record, rule by counter) and ``darshan_accumulator_emit``'s derived metrics
(total bytes, the slowest rank's time in unique files plus the slowest time in each
shared file, and their rate). The C code folds records one at a time; each rule here is
the closed form of that fold over the record array, so results are equal value by value
(float sums are taken sequentially, in record order, as the C loop does). Only the top-4
stride/access tables, whose merge depends on the order records arrive in, are folded
record by record, and only over records that hold any. The rank-variance fcounters stay
0, as in the C code (its variance fold is compiled out).

libdarshan-util 3.5 reduces no other module iosight stores: its accumulator refuses H5F,
H5D, PNETCDF_FILE and PNETCDF_VAR (``darshan_accumulator_create`` fails, as those
modules have no ``log_record_metrics``), and ``darshan-parser --total`` prints none for
them, so a log's ``job_totals`` hold none either.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from iosight.darshan._darshan3_counters import COUNTERS

_BASE = 2  # words of struct darshan_base_record (id, rank)

ACCUMULATED = ("POSIX", "MPI-IO", "STDIO")  # modules reduced here


@dataclass(frozen=True)
class _Rules:
    """Which rule of a module's ``agg_records`` each counter follows."""

    prefix: str  # counter prefix: POSIX, MPIIO, STDIO
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


_ROWS = 1 << 13  # records summed at once: the sums' arrays do not grow with the records


def _clamped_sums(ints: np.ndarray, cols: list[int]) -> np.ndarray:
    """``a += x; if (a < 0) a = -1`` from a = 0 down each column ``cols`` of ``ints``: the
    running sum floored at -1.

    Closed form of that recursion (Lindley's): with partial sums S_k, the result is
    ``S_n - 1 + max(1, -min_k S_k)`` (int64 arithmetic, as the C counters), S and its
    minimum carried from one block of :data:`_ROWS` records to the next.
    """
    total, low = np.zeros(len(cols), np.int64), None
    for at in range(0, len(ints), _ROWS):
        s = np.cumsum(ints[at : at + _ROWS, cols], axis=0, dtype=np.int64)
        if at:
            s += total
        low = s.min(axis=0) if low is None else np.minimum(low, s.min(axis=0))
        total = s[-1]
    return total if low is None else total - 1 + np.maximum(1, -low)


def _sums(ints: np.ndarray, cols: list[int]) -> np.ndarray:
    """Columns ``cols`` of ``ints`` summed (int64), a block of :data:`_ROWS` at a time."""
    total = np.zeros(len(cols), np.int64)
    for at in range(0, len(ints), _ROWS):
        total += ints[at : at + _ROWS, cols].sum(axis=0)
    return total


def _seq_sum(col: np.ndarray) -> float:
    """Sum in record order (``np.sum`` sums pairwise, which differs in the last bits)."""
    return float(np.cumsum(col)[-1]) if len(col) else 0.0


def _seq_sums(block: np.ndarray) -> np.ndarray:
    """:func:`_seq_sum` of each column (``cumsum`` down a column adds row after row)."""
    return np.cumsum(block, axis=0)[-1] if len(block) else np.zeros(block.shape[1])


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
    have = agg[:4]
    dup = [v in have for v in rec[:4]]
    for j in range(4):
        if dup[j]:
            for k in range(4):
                if have[k] == rec[j]:
                    agg[k + 4] += rec[j + 4]
    for j in range(4):
        if dup[j]:
            continue
        if rec[j] == 0:
            break
        k = agg.index(rec[j], 0, 4) if rec[j] in agg[:4] else -1
        total = _i32(rec[j + 4] if k < 0 else agg[k + 4] + rec[j + 4])
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
    """The C fold of every record's table into one, in record order.

    Most records change no value of the aggregate: their values stand in it already,
    or the first new one is 0 (where the C loop stops) or loses to all four counts
    (where it gives up); such a record only adds its counts where its values stand.
    A run of them is one vectorised sum up to the next record that does change a
    value, which goes through :func:`_merge_top4` (of the real logs' records with a
    table, 7% change a value; few in large logs). Few records are folded one by one:
    that costs less than the numpy calls.
    """
    block = ints[:, at : at + 8]
    agg = [0] * 8
    if len(block) >= _TOP4_VECTOR_MIN:
        block = block[block[:, 0] != 0 if skip_empty_first else block.any(axis=1)]
    if len(block) < _TOP4_VECTOR_MIN:  # the records without any entry change nothing
        for row in block.tolist():
            if row[0] if skip_empty_first else any(row):
                _merge_top4(agg, row)
        return agg
    pos, window = 0, _TOP4_WINDOW
    while pos < len(block):
        vals, cnts = block[pos : pos + window, :4], block[pos : pos + window, 4:]
        have = np.array(agg[:4], np.int64)
        match = vals[:, :, None] == have  # [record, j, k]: where each value stands
        adds = (cnts[:, :, None] * match).sum(axis=1)  # [record, k]
        counts = np.array(agg[4:], np.int64) + np.cumsum(adds, axis=0)  # after each record
        new = ~match.any(axis=2)
        j = new.argmax(axis=1)
        rows = np.arange(len(vals))
        value, total = vals[rows, j], _i32_array(cnts[rows, j])
        loses = (counts > total[:, None]) | ((counts == total[:, None]) & (have > value[:, None]))
        changes = new.any(axis=1) & (value != 0) & ~loses.all(axis=1)
        stop = int(changes.argmax()) if changes.any() else len(vals)
        if stop:
            agg[4:] = counts[stop - 1].tolist()
        pos += stop
        if stop < len(vals):
            _merge_top4(agg, block[pos].tolist())
            pos, window = pos + 1, _TOP4_WINDOW
        else:
            window *= 2  # a long run that changes no value: look further ahead at once
    return agg


def _i32_array(v: np.ndarray) -> np.ndarray:
    """:func:`_i32` of each value."""
    return v.astype(np.int32).astype(np.int64)


_TOP4_VECTOR_MIN = 128  # records from which the vectorised runs cost less than the loop
_TOP4_WINDOW = 64  # records examined at once after a merge (doubling while none merges)


@dataclass(frozen=True)
class _Plan:
    """Column indices of one module's rules, worked out once per module."""

    names: tuple[str, ...]  # output keys: total_<counter>, then total_<fcounter>
    ncount: int
    nfloat: int
    summed: list[int]
    last: list[int]
    maxed: list[int]
    top4: list[int]
    times: list[int]  # F_READ_TIME, F_WRITE_TIME, F_META_TIME
    starts: list[int]  # F_{OPEN,READ,WRITE,CLOSE}_START_TIMESTAMP
    ends: list[int]  # the matching END_TIMESTAMPs
    slowest_op: list[tuple[int, int]]  # (F_MAX_<op>_TIME, MAX_<op>_TIME_SIZE)
    rank_of: list[tuple[int, int, int]]  # FASTEST, SLOWEST: (RANK, RANK_BYTES, F_RANK_TIME)
    nbytes: list[int]  # BYTES_READ, BYTES_WRITTEN


@cache
def _plan(mod: str) -> _Plan:
    rules = _RULES[mod]
    p = rules.prefix
    cnames, fnames = COUNTERS[mod]
    ci = {n: i for i, n in enumerate(cnames)}
    fi = {n: i for i, n in enumerate(fnames)}
    ops = ("OPEN", "READ", "WRITE", "CLOSE")
    return _Plan(
        tuple(f"total_{n}" for n in cnames + fnames),
        len(cnames),
        len(fnames),
        [ci[n] for n in rules.summed],
        [ci[n] for n in rules.last],
        [ci[n] for n in rules.maxed],
        [ci[n] for n in rules.top4],
        [fi[f"{p}_F_{n}_TIME"] for n in ("READ", "WRITE", "META")],
        [fi[f"{p}_F_{op}_START_TIMESTAMP"] for op in ops],
        [fi[f"{p}_F_{op}_END_TIMESTAMP"] for op in ops],
        [
            (fi[f"{p}_F_MAX_{op}_TIME"], ci[f"{p}_MAX_{op}_TIME_SIZE"])
            for op in (("READ", "WRITE") if rules.slowest_op else ())
        ],
        [
            (ci[f"{p}_{k}_RANK"], ci[f"{p}_{k}_RANK_BYTES"], fi[f"{p}_F_{k}_RANK_TIME"])
            for k in ("FASTEST", "SLOWEST")
        ],
        [ci[f"{p}_BYTES_READ"], ci[f"{p}_BYTES_WRITTEN"]],
    )


def accumulate(mod: str, recs: np.ndarray) -> dict[str, float]:
    """``total_<COUNTER>`` and the derived metrics of a log's records of one module.

    Parameters
    ----------
    mod : str
        ``POSIX``, ``MPI-IO`` or ``STDIO`` (see :data:`ACCUMULATED`).
    recs : numpy.ndarray
        Records as read, one row each: id, rank, counters, fcounters (8-byte words,
        up-converted to the module's current version).

    Returns
    -------
    dict of str to float
        The same keys and values as libdarshan-util's accumulator gives.
    """
    rules, plan = _RULES[mod], _plan(mod)
    ids = recs[:, 0]
    ranks = recs[:, 1].view(np.int64)
    # views of the records, no copy: memory stays a small part of the records'
    ints = recs[:, _BASE : _BASE + plan.ncount].view(np.int64)
    fl = recs[:, _BASE + plan.ncount :][:, : plan.nfloat].view(np.float64)
    c = np.zeros(plan.ncount, np.int64)
    f = np.zeros(plan.nfloat, np.float64)
    c[plan.summed] = (_clamped_sums if rules.clamp else _sums)(ints, plan.summed)
    c[plan.last] = ints[-1, plan.last]
    if plan.maxed:
        c[plan.maxed] = np.maximum(ints[:, plan.maxed].max(axis=0), 0)
    for at in plan.top4:
        c[at : at + 8] = _top4(ints, at, rules.top4_skip_empty_first)
    rt, wt, mt = (fl[:, i] for i in plan.times)
    f[plan.times] = _seq_sums(fl[:, plan.times])
    starts = fl[:, plan.starts]  # the smallest positive start, 0 when none
    positive = starts > 0
    first = np.where(positive, starts, np.inf).min(axis=0)
    f[plan.starts] = np.where(positive.any(axis=0), first, 0.0)
    f[plan.ends] = np.maximum(fl[:, plan.ends].max(axis=0), 0.0)
    for time_col, size_col in plan.slowest_op:
        i = _first_extreme(fl[:, time_col], 0.0, larger=True)
        if i >= 0:
            f[time_col] = fl[i, time_col]
            c[size_col] = ints[i, size_col]
    shared = ranks == -1
    nbytes = ints[:, plan.nbytes[0]] + ints[:, plan.nbytes[1]]
    one_file = bool((ids == ids[0]).all())  # else fastest/slowest are not meaningful
    for (rank_col, bytes_col, time_col), larger in zip(plan.rank_of, (False, True), strict=True):
        if not one_file:
            c[rank_col], c[bytes_col], f[time_col] = -1, -1, 0.0
            continue
        times = np.where(shared, fl[:, time_col], (rt + wt) + mt)
        i = int(np.argmax(times) if larger else np.argmin(times))
        c[rank_col] = ints[i, rank_col] if shared[i] else ranks[i]
        c[bytes_col] = ints[i, bytes_col] if shared[i] else nbytes[i]
        f[time_col] = times[i]
    out: dict[str, float] = dict(zip(plan.names, c.tolist() + f.tolist(), strict=True))
    slowest = fl[:, plan.rank_of[1][2]]
    out.update(_derived(rules.prefix, ranks, nbytes, rt, wt, mt, slowest))
    return out


def _derived(p: str, ranks, nbytes, rt, wt, mt, slowest) -> dict[str, float]:
    """``darshan_accumulator_emit``'s <p>_agg_perf_by_slowest, _agg_time_by_slowest
    and _total_bytes: per-rank time in unique files (summed in record order, as
    ``np.bincount`` does), the slowest rank's plus each shared file's slowest time.

    Only ranks that have records get a sum (the C code's ranks without any add 0 to
    the maximum, which is floored at 0), so memory follows the records, not a rank or
    nprocs the log claims."""
    shared = ranks < 0
    io_time = (mt + rt) + wt
    own = ranks[~shared]
    if len(own) and (own == own[0]).all():  # one rank (most logs): no grouping to do
        slowest_rank = max(_seq_sum(io_time[~shared]), 0.0)
    else:
        _, rank_of = np.unique(own, return_inverse=True)
        by_rank = np.bincount(rank_of, io_time[~shared], minlength=1)
        slowest_rank = max(float(by_rank.max()), 0.0)
    agg_time = slowest_rank + _seq_sum(slowest[shared])
    total = int(nbytes.sum())
    perf = (total / 1048576.0) / agg_time if agg_time else 0.0
    return {
        f"{p}_agg_perf_by_slowest": perf,
        f"{p}_agg_time_by_slowest": agg_time,
        f"{p}_total_bytes": total,
    }
