"""Counter bookkeeping shared by the modules: size buckets, common values, timers.

These follow ``darshan-common.h`` (Darshan 3.4): ``DARSHAN_BUCKET_INC`` (ten access-size
buckets, upper bounds inclusive at 100 B, 1 KiB, 10 KiB, 100 KiB, 1 MiB, 4 MiB, 10 MiB,
100 MiB, 1 GiB), ``darshan_track_common_val_counters`` plus
``DARSHAN_UPDATE_COMMON_VAL_COUNTERS`` (the four most frequent non-zero values among the
first 32 distinct values seen, ordered by count then value, both descending) and
``DARSHAN_TIMER_INC_NO_OVERLAP`` (cumulative time that never counts an overlap twice).
"""

from __future__ import annotations

import numpy as np

# searchsorted(BUCKET_EDGES, n, side="right") is the bucket (0-9) of an access of n bytes
BUCKET_EDGES = (101, 1025, 10241, 102401, 1048577, 4194305, 10485761, 104857601, 1073741825)
COMMON_VAL_MAX = 32


def top_four(table: dict[int, int]) -> tuple[list[int], list[int]]:
    """The four most common non-zero values and their counts (zero-padded)."""
    best = sorted(((c, v) for v, c in table.items() if v != 0), reverse=True)[:4]
    best += [(0, 0)] * (4 - len(best))
    return [v for _, v in best], [c for c, _ in best]


def merge_top_four(
    vals_a: list[int], cnts_a: list[int], vals_b: list[int], cnts_b: list[int]
) -> tuple[list[int], list[int]]:
    """Combine two ranks' four common values, as Darshan's shared-record reduction does."""
    table: dict[int, int] = {}
    for v, c in zip([*vals_a, *vals_b], [*cnts_a, *cnts_b], strict=True):
        if v != 0 and c:
            table[v] = table.get(v, 0) + c
    return top_four(table)


def no_overlap_time(t1: np.ndarray, t2: np.ndarray, last_end: float) -> tuple[float, float]:
    """``DARSHAN_TIMER_INC_NO_OVERLAP`` over a sequence of operations, in one pass.

    Each operation adds ``t2 - max(t1, end of the operations before it)``; returns the
    added time and the new last end.
    """
    if len(t1) == 0:
        return 0.0, last_end
    if t1[0] >= last_end and (t1[1:] >= t2[:-1]).all():  # one thread: nothing overlaps
        return float(np.sum(t2 - t1)), float(t2[-1])
    ends = np.maximum.accumulate(np.concatenate(([last_end], t2)))
    return float(np.sum(t2 - np.maximum(t1, ends[:-1]))), float(ends[-1])


def track_values(table: dict[int, int], values: np.ndarray) -> None:
    """Count values in order; a value not yet in ``table`` is only added while fewer than
    32 distinct values are tracked (``darshan_track_common_val_counters``)."""
    if len(values) == 0:
        return
    if (values == values[0]).all():  # the common case: one access size, one stride
        uniq, first, counts = values[:1], np.zeros(1, dtype=np.int64), [len(values)]
    else:
        uniq, first, counts = np.unique(values, return_index=True, return_counts=True)
    for k in np.argsort(first, kind="stable"):
        v = int(uniq[k])
        if v in table:
            table[v] += int(counts[k])
        elif len(table) < COMMON_VAL_MAX:
            table[v] = int(counts[k])


def first_start(current: float, t1: np.ndarray) -> float:
    """Darshan's start timestamp: the earliest start, 0 meaning not yet set."""
    if len(t1) == 0:
        return current
    m = float(t1.min())
    return m if current == 0 or current > m else current


def update_common_vectors(
    vals: list[tuple[int, ...]], cnts: list[int], val: tuple[int, ...], count: int
) -> None:
    """``DARSHAN_UPDATE_COMMON_VAL_COUNTERS`` for value vectors (H5D's access size, lengths
    and strides), operation by operation: entries stay ordered by count, then by their
    first value, both descending; a vector whose first value is 0 is not kept."""
    if val[0] == 0:
        return
    keep_v, keep_c, i = [], [], 0
    while i < 4 and (cnts[i] > count or (cnts[i] == count and vals[i][0] > val[0])):
        keep_v.append(vals[i])
        keep_c.append(cnts[i])
        i += 1
    if len(keep_v) == 4:
        return
    keep_v.append(val)
    keep_c.append(count)
    while len(keep_v) < 4 and i < 4:
        if vals[i] != val:
            keep_v.append(vals[i])
            keep_c.append(cnts[i])
        i += 1
    pad = 4 - len(keep_v)
    vals[:] = keep_v + [(0,) * len(val)] * pad
    cnts[:] = keep_c + [0] * pad
