"""iosight's accumulator rules (POSIX, STDIO) against the C recursions they replace (synthetic
arrays; the value-by-value oracle on real logs is test_job_totals_need_no_c_library)."""

from __future__ import annotations

import numpy as np
import pytest

from iosight.darshan import _accumulate
from iosight.darshan._accumulate import (
    _TOP4_VECTOR_MIN,
    _clamped_sums,
    _merge_top4,
    _top4,
    accumulate,
)
from iosight.darshan._darshan3_counters import COUNTERS


def _c_clamped_sum(values: list[int]) -> int:
    agg = 0
    for v in values:
        agg += v
        if agg < 0:
            agg = -1
    return agg


@pytest.mark.parametrize("rows", [3, _accumulate._ROWS])
def test_clamped_sum_equals_the_c_recursion(monkeypatch, rows: int) -> None:
    """Also when the records are summed a few at a time (``rows``), carrying the sum and
    its minimum from block to block."""
    monkeypatch.setattr(_accumulate, "_ROWS", rows)
    rng = np.random.default_rng(7)  # synthetic counters, -1 ("invalid") among them
    for _ in range(200):
        block = rng.choice([-1, -1, 0, 1, 5, 40, -3], size=(rng.integers(1, 12), 6))
        want = [_c_clamped_sum(col) for col in block.T.tolist()[:5]]
        assert _clamped_sums(block, [0, 1, 2, 3, 4]).tolist() == want, block


def test_top4_merge_keeps_the_most_common_values() -> None:
    agg = [0] * 8
    _merge_top4(agg, [8, 4, 0, 0, 10, 2, 0, 0])
    _merge_top4(agg, [4, 16, 0, 0, 9, 1, 0, 0])
    # 4 gains 9 in place (the C merge does not re-sort matches); 16 enters in count order
    assert agg == [8, 4, 16, 0, 10, 11, 1, 0]
    ints = np.array([[8, 4, 0, 0, 10, 2, 0, 0], [0] * 8, [4, 16, 0, 0, 9, 1, 0, 0]])
    assert _top4(ints, 0) == agg  # records without a table change nothing


def _record_fold(ints: np.ndarray, skip_empty_first: bool) -> list[int]:
    agg = [0] * 8
    for row in ints.tolist():
        if row[0] if skip_empty_first else any(row):
            _merge_top4(agg, row)
    return agg


def test_top4_vectorised_runs_equal_the_record_fold() -> None:
    """Many records (the vectorised path): synthetic tables drawn from few access sizes,
    so most records only add counts, some bring a value that enters or loses, counts
    past 2**31 (the C int ``total``), empty tables and repeated values among them."""
    rng = np.random.default_rng(4)
    for _ in range(60):
        n = int(rng.integers(_TOP4_VECTOR_MIN, 4 * _TOP4_VECTOR_MIN))
        sizes = rng.choice([1, 3, 512, 4096, 8192, 65536, 2**20], size=int(rng.integers(1, 8)))
        vals = rng.choice(np.append(sizes, [0, 0]), size=(n, 4))
        cnts = rng.choice([0, 1, 2, 7, 100, 2**31, 2**32 + 1], size=(n, 4))
        ints = np.concatenate([vals, cnts], axis=1).astype(np.int64)
        for skip in (False, True):
            assert _top4(ints, 0, skip) == _record_fold(ints, skip), (ints, skip)


def _c_stdio_fold(recs: np.ndarray) -> tuple[list[int], list[float]]:
    """darshan_log_agg_stdio_records (libdarshan-util 3.5), one record at a time."""
    c, f = [0] * 14, [0.0] * 15
    agg_id = int(recs[0, 0])
    for n, row in enumerate(recs):
        rid, rank = int(row[0]), int(row[1:2].view(np.int64)[0])
        ints = row[2:16].view(np.int64).tolist()
        fl = row[16:31].view(np.float64).tolist()
        if rank == -1:
            fast = (ints[10], ints[11], fl[11])
            slow = (ints[12], ints[13], fl[12])
        else:
            t = fl[2] + fl[1] + fl[0]
            fast = slow = (rank, ints[7] + ints[6], t)
        one_file = rid == agg_id  # so far, do all records reference the same file?
        agg_id = agg_id if one_file else 0
        for i in range(8):
            c[i] += ints[i]
        for i in (8, 9):
            c[i] = ints[i] if ints[i] > c[i] else c[i]
        for i in range(3):
            f[i] += fl[i]
        for i in range(3, 7):
            if fl[i] > 0 and (f[i] == 0 or fl[i] < f[i]):
                f[i] = fl[i]
        for i in range(7, 11):
            f[i] = fl[i] if fl[i] > f[i] else f[i]
        for (rc, bc, tc), (r, b, t), less in (
            ((10, 11, 11), fast, True),
            ((12, 13, 12), slow, False),
        ):
            if not one_file:
                c[rc], c[bc], f[tc] = -1, -1, 0.0
            elif n == 0 or (t < f[tc] if less else t > f[tc]):
                c[rc], c[bc], f[tc] = r, b, t
    return c, f


def test_stdio_rules_equal_the_c_fold() -> None:
    """Synthetic STDIO records (shared and per-rank, one file or several, unset and
    negative timestamps) reduce as the C fold does, value by value."""
    rng = np.random.default_rng(12)
    names = COUNTERS["STDIO"][0] + COUNTERS["STDIO"][1]
    for _ in range(300):
        n = int(rng.integers(1, 8))
        ints = rng.choice([0, 1, 7, 4096, 10**9], size=(n, 14)).astype(np.int64)
        fl = rng.choice([0.0, -1.0, 0.25, 1.5, 3.0, 1e9], size=(n, 15))
        ids = rng.choice([11, 22] if rng.random() < 0.5 else [11], size=n).astype(np.uint64)
        ranks = rng.choice([-1, 0, 1, 2], size=n).astype(np.int64)
        recs = np.column_stack(
            [ids, ranks.view(np.uint64), ints.view(np.uint64), fl.view(np.uint64)]
        )
        got = accumulate("STDIO", recs)
        c, f = _c_stdio_fold(recs)
        want = dict(zip(["total_" + x for x in names], c + f, strict=True))
        assert {k: got[k] for k in want} == want, (recs, got, want)
