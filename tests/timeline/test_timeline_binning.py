import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.timeline import bin_intervals, count_active, spread_fractions


def _bins(start, end, vals, spread, n_bins=4, width=10.0):
    return bin_intervals(
        np.array(start, float),
        np.array(end, float),
        np.array(vals, float),
        width=width,
        n_bins=n_bins,
        spread=spread,
    )[:, 0]


def test_inside_one_bin_both_modes():
    for spread in ("overlap", "equal"):
        assert _bins([2], [8], [6], spread).tolist() == [6, 0, 0, 0]


def test_across_bins_overlap_is_proportional():
    # [5, 25] with 10 s bins: 5 s in bin 0, 10 s in bin 1, 5 s in bin 2
    assert np.allclose(_bins([5], [25], [20], "overlap"), [5, 10, 5, 0])


def test_across_bins_equal_splits_evenly():
    assert np.allclose(_bins([5], [25], [21], "equal"), [7, 7, 7, 0])


def test_zero_length_goes_to_one_bin():
    for spread in ("overlap", "equal"):
        assert _bins([12], [12], [7], spread).tolist() == [0, 7, 0, 0]


def test_ending_on_an_edge_does_not_touch_next_bin():
    for spread in ("overlap", "equal"):
        assert _bins([0], [10], [3], spread).tolist() == [3, 0, 0, 0]


def test_several_columns_and_rows_conserve_totals():
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 900, 5000)
    e = s + rng.exponential(50, 5000) * (rng.random(5000) > 0.2)
    v = rng.lognormal(10, 2, (5000, 3))
    for spread in ("overlap", "equal"):
        out = bin_intervals(s, np.minimum(e, 1000), v, width=7.0, n_bins=143, spread=spread)
        assert np.allclose(out.sum(axis=0), v.sum(axis=0), rtol=1e-12)


def test_difference_array_equals_explicit_fractions():
    # bin_intervals (first/last shares + difference array) = the explicit (row, bin) split
    rng = np.random.default_rng(1)
    s = rng.uniform(0, 500, 300)
    e = s + rng.uniform(0, 200, 300) * (rng.random(300) > 0.2)
    v = rng.random((300, 2))
    for spread in ("overlap", "equal"):
        rows, bins, frac = spread_fractions(s, e, 3.0, spread)
        want = np.column_stack(
            [np.bincount(bins, v[rows, c] * frac, minlength=240) for c in range(2)]
        )
        assert np.allclose(bin_intervals(s, e, v, width=3.0, n_bins=240, spread=spread), want)


def test_blocks_of_rows_equal_one_pass(monkeypatch):
    """Binning in blocks of rows (cache-sized) gives the bins of one pass over all rows."""
    from iosight.timeline import _binning

    rng = np.random.default_rng(2)
    s = rng.uniform(0, 500, 1000)
    e = s + rng.uniform(0, 200, 1000) * (rng.random(1000) > 0.2)
    v = rng.random((1000, 3))
    whole = bin_intervals(s, e, v, width=3.0, n_bins=240)
    monkeypatch.setattr(_binning, "BLOCK_ROWS", 64)  # 16 blocks, the last one partial
    assert np.allclose(bin_intervals(s, e, v, width=3.0, n_bins=240), whole, rtol=1e-12)


def test_an_interval_out_of_range_in_a_later_block_adds_nothing(monkeypatch):
    from iosight.timeline import _binning

    monkeypatch.setattr(_binning, "BLOCK_ROWS", 2)
    out = np.zeros((10, 1))
    with pytest.raises(ValueError):
        bin_intervals([0, 5, 10, 95], [1, 6, 11, 120], [1, 1, 1, 1], width=10.0, n_bins=10, out=out)
    assert not out.any()


def test_fractions_sum_to_one():
    rows, _, frac = spread_fractions(np.array([0.5, 3.0]), np.array([29.5, 3.0]), 1.0)
    assert np.allclose(np.bincount(rows, frac), [1, 1])


def test_out_of_range_is_an_error():
    with pytest.raises(ValueError):
        _bins([35], [45], [1], "overlap")


def test_bad_spread_is_a_clear_error():
    with pytest.raises(IosightError, match="spread"):
        _bins([0], [1], [1], "uniform")


def test_count_active():
    act = count_active(np.array([0.0, 5.0, 31.0]), np.array([10.0, 25.0, 31.0]), width=10, n_bins=4)
    assert act.tolist() == [2, 1, 1, 1]


def test_value_layouts_give_the_same_bins():
    """Strided and Fortran-ordered value columns bin as their C-ordered copy does."""
    rng = np.random.default_rng(3)
    s = rng.uniform(0, 500, 400)
    e = s + rng.uniform(0, 200, 400) * (rng.random(400) > 0.3)
    wide = rng.random((400, 6))
    want = bin_intervals(s, e, np.ascontiguousarray(wide[:, ::2]), width=3.0, n_bins=240)
    for v in (wide[:, ::2], np.asfortranarray(wide[:, ::2])):
        assert np.allclose(bin_intervals(s, e, v, width=3.0, n_bins=240), want, rtol=1e-12)


def _heavy_tailed(n: int, seed: int, span: float):
    """SYNTHETIC intervals over ``span`` s: durations and values over many magnitudes (the
    mix that leaves a float difference array's rounding behind in empty bins)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0, span, n)
    e = np.minimum(s + rng.lognormal(5, 2.5, n) * (rng.random(n) > 0.1), span)
    return s, e, rng.lognormal(18, 5, (n, 2))


def test_untouched_bins_are_exactly_zero_and_none_is_negative():
    s, e, v = _heavy_tailed(1000, 5, 1e6)
    out = bin_intervals(s, e, v, width=10.0, n_bins=100_001)
    act = count_active(s, e, width=10.0, n_bins=100_001)
    assert (act == 0).sum() > 10_000  # many gaps between the intervals
    assert (out[act == 0] == 0).all()
    assert (out >= 0).all() and (out[act > 0].sum(axis=1) > 0).all()


def test_bins_equal_an_exact_computation():
    """Every bin is within one unit (a byte) of the exact sum (``Fraction``s), at values of
    up to 1e15."""
    from tests_support import exact_bins, max_abs_error

    s, e, v = _heavy_tailed(200, 6, 10_000.0)
    v = np.minimum(v, 1e15)
    out = bin_intervals(s, e, v, width=10.0, n_bins=1_001)
    for c in range(v.shape[1]):
        want = exact_bins(s, e, v[:, c], 10.0, 10.0 * np.arange(1_001))
        assert max_abs_error(out[:, c], want) <= 1


def test_a_few_rows_are_summed_without_a_sparse_matrix_to_the_same_bit(monkeypatch):
    """SYNTHETIC intervals, heavy-tailed values, many in the same bins: up to
    ``SMALL_ROWS`` rows (an update's new jobs) are summed with ``np.add.at``, without
    building a sparse matrix, and give the sparse product's sums bit for bit."""
    from iosight.timeline import _binning

    rng = np.random.default_rng(7)
    cases = []
    for n in (1, 2, 8, 33, 64):
        s = rng.uniform(0, 600, n)
        e = s + rng.lognormal(3, 2, n) * (rng.random(n) > 0.2)
        cases.append((s, np.minimum(e, 700), rng.lognormal(20, 3, (n, 3))))

    def bins(spread: str) -> list[np.ndarray]:
        return [bin_intervals(s, e, v, width=7.0, n_bins=101, spread=spread) for s, e, v in cases]

    for spread in ("overlap", "equal"):
        monkeypatch.setattr(_binning, "SMALL_ROWS", -1)  # every product sparse
        sparse = bins(spread)
        monkeypatch.setattr(_binning, "SMALL_ROWS", 64)
        monkeypatch.setattr(_binning, "_per_column", None)  # no sparse matrix is built
        for got, want in zip(bins(spread), sparse, strict=True):
            assert np.array_equal(got, want)
        monkeypatch.undo()


def test_binning_a_batch_holds_about_one_grid_of_temporaries():
    """SYNTHETIC jobs from all over a long timeline (as a chunk of jobs by key is): the
    sums are built a column at a time, so binning holds little more than its result,
    where a product of every column at once held several whole grids (measured with
    ``tracemalloc``, which counts NumPy's and SciPy's arrays)."""
    import tracemalloc

    rng = np.random.default_rng(3)
    n_bins, width = 200_000, 300.0
    s = rng.uniform(0, (n_bins - 100) * width, 20_000)
    e = s + rng.exponential(3_600, len(s))
    v = rng.exponential(1e9, (len(s), 6))
    tracemalloc.start()
    try:
        out = bin_intervals(s, e, v, width=width, n_bins=n_bins)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * out.nbytes, (peak, out.nbytes)  # 1.7 here; 5.3 at once
