"""The model search is exact: every cell equals an independent, converged scikit-learn fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LinearRegression
from sklearn.preprocessing import StandardScaler

from iosight.perfmodel import compute_features, split_samples
from iosight.perfmodel._platform import load_platform
from iosight.perfmodel._samples import group_runs
from iosight.perfmodel._search import (
    SHRINKAGE_GRID,
    _path,
    all_subsets,
    independent_columns,
    lasso_grid_search,
)
from iosight.synth.writes import WriteSimConfig, simulate_writes


def test_independent_columns_by_hand():
    n = np.array([1.0, 2.0, 1.0, 2.0, 1.0])
    k = np.array([3.0, 3.0, 5.0, 7.0, 5.0])
    # 1/n is affine in n over two node counts; 2n duplicates n; 7 is constant
    xs = np.column_stack([n, 1 / n, k, 2 * n, np.full(5, 7.0), k * n])
    assert independent_columns(xs).tolist() == [0, 2, 5]


@pytest.fixture(scope="module")
def samples():
    """SYNTHETIC Titan write samples (iosight.synth.writes), labelled by write scale."""
    plat = load_platform("titan")
    cfg = WriteSimConfig(scales=(1, 2, 4, 8, 16, 200, 256), patterns_per_scale=10, seed=5)
    train, test = split_samples(group_runs(simulate_writes(plat, cfg)))
    x = compute_features(plat, train).to_numpy(float)
    tx = compute_features(plat, test).to_numpy(float)
    rng = np.random.default_rng(0)
    val = rng.choice(len(test), len(test) // 5, replace=False)
    return (
        x,
        train["mean_time"].to_numpy(float),
        train["nodes"].to_numpy(),
        tx[val],
        (test["mean_time"].to_numpy(float)[val]),
    )


def _objective(xc, yc, w, a):
    return np.sum((yc - xc @ w) ** 2) / (2 * len(yc)) + a * np.abs(w).sum()


@pytest.mark.slow
def test_search_equals_independent_fits_cell_by_cell(samples):
    x, y, scale, xv, yv = samples
    subsets = all_subsets(scale)
    got = lasso_grid_search(x, y, scale, xv, yv, subsets=subsets)
    ref = np.empty_like(got)
    converged = np.ones(got.shape, bool)
    worse_or_equal = np.ones(got.shape, bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for i, sub in enumerate(subsets):
            m = np.isin(scale, sub)
            scaler = StandardScaler().fit(x[m])
            xs = scaler.transform(x[m])
            keep = independent_columns(xs)
            xs, xvs = xs[:, keep], scaler.transform(xv)[:, keep]
            _, _, _, xm, ym, coefs = _path(x[m], y[m], SHRINKAGE_GRID)
            for j, a in enumerate(SHRINKAGE_GRID):
                if a == 0:
                    reg = LinearRegression().fit(xs, y[m])
                else:
                    reg = Lasso(alpha=a, tol=1e-12, max_iter=300_000).fit(xs, y[m])
                    converged[i, j] = reg.n_iter_ < 300_000
                    # the search's solution is at least as good as the reference's
                    xc, yc = xs - xm, y[m] - ym
                    ours = _objective(xc, yc, coefs[:, j], a)
                    theirs = _objective(xc, yc, reg.coef_, a)
                    worse_or_equal[i, j] = ours <= theirs * (1 + 1e-12)
                ref[i, j] = np.mean((reg.predict(xvs) - yv) ** 2)
    assert worse_or_equal.all()
    # shrinkage 0 is ordinary least squares, as LinearRegression computes it
    assert np.allclose(got[:, 0], ref[:, 0], rtol=1e-9, atol=0)
    # every cell where coordinate descent converged agrees to 1e-6 relative
    assert converged.mean() > 0.9
    rel = np.abs(got - ref) / ref
    assert rel[converged].max() < 1e-6
    assert np.unravel_index(np.argmin(got), got.shape) == np.unravel_index(
        np.argmin(ref), ref.shape
    )
