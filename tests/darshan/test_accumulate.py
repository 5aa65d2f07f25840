"""iosight's POSIX accumulator rules against the C recursions they replace (synthetic
arrays; the value-by-value oracle on real logs is test_posix_mpiio_totals_need_no_c_library)."""

from __future__ import annotations

import numpy as np

from iosight.darshan._accumulate import _clamped_sum, _merge_top4, _top4


def _c_clamped_sum(values: list[int]) -> int:
    agg = 0
    for v in values:
        agg += v
        if agg < 0:
            agg = -1
    return agg


def test_clamped_sum_equals_the_c_recursion() -> None:
    rng = np.random.default_rng(7)  # synthetic counters, -1 ("invalid") among them
    for _ in range(500):
        col = rng.choice([-1, -1, 0, 1, 5, 40, -3], size=rng.integers(1, 12))
        assert _clamped_sum(col) == _c_clamped_sum(col.tolist()), col


def test_top4_merge_keeps_the_most_common_values() -> None:
    agg = [0] * 8
    _merge_top4(agg, [8, 4, 0, 0, 10, 2, 0, 0])
    _merge_top4(agg, [4, 16, 0, 0, 9, 1, 0, 0])
    # 4 gains 9 in place (the C merge does not re-sort matches); 16 enters in count order
    assert agg == [8, 4, 16, 0, 10, 11, 1, 0]
    ints = np.array([[8, 4, 0, 0, 10, 2, 0, 0], [0] * 8, [4, 16, 0, 0, 9, 1, 0, 0]])
    assert _top4(ints, 0) == agg  # records without a table change nothing
