"""``darshan-parser --total`` for POSIX records without libdarshan-util.

A vectorised reimplementation of libdarshan-util 3.5's accumulator for the POSIX
module: ``darshan_log_agg_posix_files`` (one summary record, rule by counter) and
``darshan_accumulator_emit``'s derived metrics (total bytes, the slowest rank's
time in unique files plus the slowest time in each shared file, and their rate).
The C code folds records one at a time; each rule here is the closed form of that
fold over the record array, so results are equal value by value (float sums are
taken sequentially, in record order, as the C loop does). Only the top-4
stride/access tables, whose merge depends on the order records arrive in, are
folded record by record, and only over records that hold any.
"""

from __future__ import annotations

import numpy as np

from iosight.darshan._darshan3_counters import COUNTERS

_BASE = 2  # words of struct darshan_base_record (id, rank)
_CNAMES, _FNAMES = COUNTERS["POSIX"]
_C = {n: i for i, n in enumerate(_CNAMES)}
_F = {n: i for i, n in enumerate(_FNAMES)}
_SUMMED = [
    _C[n]
    for n in _CNAMES
    if n.startswith(("POSIX_SIZE_", "POSIX_CONSEC_", "POSIX_SEQ_", "POSIX_BYTES_"))
    or n.endswith("_NOT_ALIGNED")
    or n
    in (
        "POSIX_OPENS",
        "POSIX_FILENOS",
        "POSIX_DUPS",
        "POSIX_READS",
        "POSIX_WRITES",
        "POSIX_SEEKS",
        "POSIX_STATS",
        "POSIX_MMAPS",
        "POSIX_FSYNCS",
        "POSIX_FDSYNCS",
        "POSIX_RENAME_SOURCES",
        "POSIX_RENAME_TARGETS",
        "POSIX_RW_SWITCHES",
    )
]
_LAST = [_C[n] for n in ("POSIX_RENAMED_FROM", "POSIX_MODE", "POSIX_MEM_ALIGNMENT")] + [
    _C["POSIX_FILE_ALIGNMENT"]
]
_MAXED = [_C["POSIX_MAX_BYTE_READ"], _C["POSIX_MAX_BYTE_WRITTEN"]]
_TOP4 = (_C["POSIX_STRIDE1_STRIDE"], _C["POSIX_ACCESS1_ACCESS"])


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


def _top4(ints: np.ndarray, at: int) -> list[int]:
    block = ints[:, at : at + 8]
    agg = [0] * 8
    for row in block[block.any(axis=1)].tolist():
        _merge_top4(agg, row)
    return agg


def accumulate_posix(recs: np.ndarray, nprocs: int) -> dict[str, float]:
    """``total_POSIX_*`` and the POSIX derived metrics of a log's POSIX records.

    Parameters
    ----------
    recs : numpy.ndarray
        Records as read, one row each: id, rank, counters, fcounters (8-byte words,
        up-converted to the current POSIX module version).
    nprocs : int
        Processes in the job (ranks are checked to lie in ``[-1, nprocs)``).

    Returns
    -------
    dict of str to float
        The same keys and values as libdarshan-util's accumulator gives for POSIX.
    """
    ids = recs[:, 0]
    ranks = recs[:, 1].view(np.int64)
    ints = np.ascontiguousarray(recs[:, _BASE : _BASE + len(_CNAMES)]).view(np.int64)
    fl = np.ascontiguousarray(recs[:, _BASE + len(_CNAMES) :][:, : len(_FNAMES)]).view(np.float64)
    c = np.zeros(len(_CNAMES), np.int64)
    f = np.zeros(len(_FNAMES), np.float64)
    for i in _SUMMED:
        c[i] = _clamped_sum(ints[:, i])
    c[_LAST] = ints[-1, _LAST]
    c[_MAXED] = np.maximum(ints[:, _MAXED].max(axis=0), 0)
    for at in _TOP4:
        c[at : at + 8] = _top4(ints, at)
    rt, wt, mt = (fl[:, _F[f"POSIX_F_{n}_TIME"]] for n in ("READ", "WRITE", "META"))
    f[_F["POSIX_F_READ_TIME"]] = _seq_sum(rt)
    f[_F["POSIX_F_WRITE_TIME"]] = _seq_sum(wt)
    f[_F["POSIX_F_META_TIME"]] = _seq_sum(mt)
    for op in ("OPEN", "READ", "WRITE", "CLOSE"):
        start = fl[:, _F[f"POSIX_F_{op}_START_TIMESTAMP"]]
        positive = start[start > 0]
        f[_F[f"POSIX_F_{op}_START_TIMESTAMP"]] = positive.min() if len(positive) else 0.0
        f[_F[f"POSIX_F_{op}_END_TIMESTAMP"]] = max(
            fl[:, _F[f"POSIX_F_{op}_END_TIMESTAMP"]].max(), 0.0
        )
    for op in ("READ", "WRITE"):
        col = fl[:, _F[f"POSIX_F_MAX_{op}_TIME"]]
        i = _first_extreme(col, 0.0, larger=True)
        if i >= 0:
            f[_F[f"POSIX_F_MAX_{op}_TIME"]] = col[i]
            c[_C[f"POSIX_MAX_{op}_TIME_SIZE"]] = ints[i, _C[f"POSIX_MAX_{op}_TIME_SIZE"]]
    shared = ranks == -1
    nbytes = ints[:, _C["POSIX_BYTES_READ"]] + ints[:, _C["POSIX_BYTES_WRITTEN"]]
    for kind, larger in (("FASTEST", False), ("SLOWEST", True)):
        rank_col, bytes_col = f"POSIX_{kind}_RANK", f"POSIX_{kind}_RANK_BYTES"
        time_col = f"POSIX_F_{kind}_RANK_TIME"
        if not (ids == ids[0]).all():  # records of several files: not meaningful
            c[_C[rank_col]], c[_C[bytes_col]], f[_F[time_col]] = -1, -1, 0.0
            continue
        times = np.where(shared, fl[:, _F[time_col]], (rt + wt) + mt)
        i = int(np.argmax(times) if larger else np.argmin(times))
        c[_C[rank_col]] = ints[i, _C[rank_col]] if shared[i] else ranks[i]
        c[_C[bytes_col]] = ints[i, _C[bytes_col]] if shared[i] else nbytes[i]
        f[_F[time_col]] = times[i]
    out: dict[str, float] = {f"total_{n}": v for n, v in zip(_CNAMES, c.tolist(), strict=True)}
    out.update({f"total_{n}": v for n, v in zip(_FNAMES, f.tolist(), strict=True)})
    out.update(_derived(ranks, nbytes, rt, wt, mt, fl[:, _F["POSIX_F_SLOWEST_RANK_TIME"]], nprocs))
    return out


def _derived(ranks, nbytes, rt, wt, mt, slowest, nprocs: int) -> dict[str, float]:
    """``darshan_accumulator_emit``'s POSIX_agg_perf_by_slowest, _agg_time_by_slowest
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
        "POSIX_agg_perf_by_slowest": perf,
        "POSIX_agg_time_by_slowest": agg_time,
        "POSIX_total_bytes": total,
    }
