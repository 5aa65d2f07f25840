"""Model search (§III-B3, §IV-B), evaluation (§IV-C) and checkpoint planning (§II-A)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.perfmodel._features import WritePattern
from iosight.perfmodel._model import (
    FAMILIES,
    WriteModel,
    fit_model,
    plan_checkpoints,
    predict_pattern,
)
from iosight.perfmodel._platform import load_platform
from iosight.perfmodel._samples import group_runs
from iosight.perfmodel._search import (
    accuracy,
    all_subsets,
    lasso_grid_search,
    naive_grid_search,
    relative_errors,
)
from iosight.synth.writes import WriteSimConfig, simulate_writes


def test_subsets_and_errors_by_hand():
    subs = all_subsets([1, 2, 4, 8, 16, 32, 64, 128])
    assert len(subs) == 255 and subs[0] == (1,) and subs[-1] == (1, 2, 4, 8, 16, 32, 64, 128)
    err = relative_errors([12.0, 7.0, 10.0, 20.0], [10.0, 10.0, 10.0, 10.0])
    assert np.allclose(err, [0.2, -0.3, 0.0, 1.0])
    acc = accuracy(err)
    assert acc["within_20"] == 0.5 and acc["within_30"] == 0.75
    assert acc["overestimated"] == 0.5 and acc["underestimated"] == 0.25
    assert acc["under_among_inaccurate"] == 0.0  # the only |error| > 30% is an overestimate


def test_path_search_matches_naive_refits():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 5))
    y = 3 * x[:, 0] - 2 * x[:, 1] + rng.normal(scale=0.5, size=120)
    scale = np.repeat([1, 2, 4], 40)
    xv = rng.normal(size=(30, 5))
    yv = 3 * xv[:, 0] - 2 * xv[:, 1]
    alphas = np.array([0.0, 0.01, 0.1, 1.0])
    fast = lasso_grid_search(x, y, scale, xv, yv, alphas=alphas)
    slow = naive_grid_search(x, y, scale, xv, yv, alphas=alphas)
    assert fast.shape == (7, 4)
    assert np.allclose(fast, slow, rtol=1e-2)  # same optimum, coordinate descent tol 1e-3
    # strong shrinkage is worse than little on this clean linear signal
    assert (fast[:, 3] > fast[:, 1]).all()


def test_unfittable_training_sets_score_inf():
    # scale 1 holds one sample; scale 2 holds two identical feature rows (no varying column)
    rng = np.random.default_rng(1)
    x = np.vstack([rng.normal(size=(1, 3)), np.ones((2, 3)), rng.normal(size=(20, 3))])
    y = x.sum(axis=1) + rng.normal(scale=0.1, size=len(x))
    y[1:3] = [1.0, 2.0]
    scale = np.array([1] + [2, 2] + [4] * 20)
    xv = rng.normal(size=(10, 3))
    yv = xv.sum(axis=1)
    alphas = np.array([0.0, 0.01])
    subs = [(1,), (2,), (1, 2), (4,)]
    fast = lasso_grid_search(x, y, scale, xv, yv, subsets=subs, alphas=alphas)
    slow = naive_grid_search(x, y, scale, xv, yv, subsets=subs, alphas=alphas)
    assert np.isinf(fast[:2]).all() and np.isfinite(fast[2:]).all()
    assert np.allclose(fast, slow, rtol=1e-2)


@pytest.mark.parametrize("workers", [-1, 1.5])
def test_worker_count_is_checked(workers):
    x = np.arange(12.0).reshape(6, 2)
    with pytest.raises(IosightError, match="'workers' parameter must be an integer >= 0"):
        lasso_grid_search(x, x[:, 0], np.ones(6), x, x[:, 0], workers=workers)


def test_fit_model_with_a_single_sample_scale():
    plat = load_platform("titan")
    cfg = WriteSimConfig(patterns_per_scale=5, seed=0)
    samples = group_runs(simulate_writes(plat, cfg))
    model = fit_model(samples, plat, seed=0)
    assert np.isfinite(model.accuracy.loc[model.accuracy.family == "lasso", "samples"]).all()


@pytest.fixture(scope="module")
def small_model():
    plat = load_platform("titan")
    cfg = WriteSimConfig(scales=(1, 2, 4, 8, 200, 256), patterns_per_scale=12, seed=3)
    samples = group_runs(simulate_writes(plat, cfg))
    return fit_model(samples, plat, min_time=0.5, seed=0, workers=2), samples


def test_fit_predict_save_load(small_model, tmp_path):
    model, samples = small_model
    assert model.family == "lasso" and model.meta["training_sets_searched"] == 15
    assert set(model.accuracy.family) == set(FAMILIES)
    assert model.coefficients.feature.iloc[0] == "(intercept)"
    # the validated estimator reproduces the reported test predictions
    test = samples[samples.nodes > 128].head(5)
    pred = model.predict(test).seconds
    assert np.all(np.isfinite(pred))
    back = WriteModel.load(model.save(tmp_path / "m"))
    assert np.allclose(back.predict(test).seconds, pred)
    with pytest.raises(IosightError, match="not a model directory"):
        WriteModel.load(tmp_path)


def _same_model(a: WriteModel, b: WriteModel) -> None:
    assert (a.family, a.scales, a.params) == (b.family, b.scales, b.params)
    for name in ("accuracy", "predictions", "coefficients"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


def test_one_worker_fits_the_same_model(small_model):
    """Every cell of the search is exact and seeded: the model does not depend on how
    many cells run at once (the fixture ran on two workers)."""
    model, samples = small_model
    _same_model(fit_model(samples, load_platform("titan"), min_time=0.5, seed=0, workers=1),
                model)  # fmt: skip


def test_a_dask_cluster_fits_the_same_model(small_model):
    distributed = pytest.importorskip("distributed")
    model, samples = small_model
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = fit_model(samples, load_platform("titan"), min_time=0.5, seed=0,
                            scheduler=cluster.scheduler_address)  # fmt: skip
    _same_model(on_dask, model)


def test_predict_refuses_a_non_positive_prediction(small_model):
    model, samples = small_model
    plat = load_platform("titan")
    linear = fit_model(samples, plat, family="linear", min_time=0.5, seed=0)
    pat = WritePattern(8, 16, 1, 1)  # 1-byte files: far below the training sizes
    row = {"nodes": 8, "cores": 16, "size": 1, "stripes": 1}
    assert linear.predict(pd.DataFrame([row])).seconds[0] < 0  # least squares extrapolates below 0
    with pytest.raises(IosightError, match="write time of -.* cannot be used"):
        predict_pattern(linear, pat)
    assert predict_pattern(model, pat) > 0


def test_plan_by_hand():
    # 100 s writes, +30% margin = 130 s; 10% budget -> interval >= 130 * 0.9 / 0.1 = 1170 s
    p = plan_checkpoints(100.0, 3600.0, io_budget=0.1, margin=0.3)
    assert p.planned_write_s == pytest.approx(130.0)
    assert p.checkpoints == 3 and p.interval_s == pytest.approx(1200.0) and p.feasible
    assert p.min_interval_s == pytest.approx(1170.0)
    tight = plan_checkpoints(100.0, 600.0, io_budget=0.1, margin=0.0)
    assert not tight.feasible and tight.checkpoints == 1
    assert p.write_share == pytest.approx(390 / 3990)
    assert p.write_share <= 0.1
    with pytest.raises(IosightError, match="cannot be used"):
        plan_checkpoints(-5.0, 3600.0)
    with pytest.raises(IosightError, match="io_budget"):
        plan_checkpoints(10.0, 3600.0, io_budget=1.5)
    for bad in (float("inf"), float("nan"), 1e300):
        with pytest.raises(IosightError, match="'compute_time' parameter"):
            plan_checkpoints(10.0, bad)
    with pytest.raises(IosightError, match="'margin' parameter"):
        plan_checkpoints(10.0, 3600.0, margin=float("inf"))


def test_negative_seeds_are_refused(small_model, tmp_path):
    from iosight.perfmodel import evaluate_tokio_files, place_nodes
    from iosight.synth.writes import runs_to_warehouse
    from iosight.warehouse import Warehouse

    model, samples = small_model
    plat = load_platform("titan")
    calls = [
        lambda: fit_model(samples, plat, seed=-1),
        lambda: simulate_writes(plat, WriteSimConfig(patterns_per_scale=1, seed=-1)),
        lambda: runs_to_warehouse(
            Warehouse(tmp_path / "w", create=True), samples.head(0), plat, seed=-1
        ),
        lambda: evaluate_tokio_files([tmp_path / "missing.csv.gz"], seed=-1),
        lambda: place_nodes(plat, 2, seed=-1),
    ]
    for call in calls:
        with pytest.raises(IosightError, match="'seed' parameter"):
            call()
