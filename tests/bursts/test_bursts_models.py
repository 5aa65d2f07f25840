"""The classifiers of §V and their search (``iosight.bursts._models``), on a SYNTHETIC
two-class problem whose class is told by the first feature."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.bursts import MODELS, make_pipeline
from iosight.bursts._models import check_search, model_names, search_params, signed_log1p


def _problem(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """SYNTHETIC: byte-sized features over many orders of magnitude, class 1 where the
    first is large."""
    rng = np.random.default_rng(seed)
    X = rng.lognormal(15, 3, (n, 3))
    return X, (X[:, 0] > np.quantile(X[:, 0], 0.8)).astype(np.int64)


def test_model_names_expand_all_and_refuse_unknown_or_none():
    assert model_names("all") == ["logreg", "naive_bayes", "tree", "forest", "xgboost"]
    assert model_names(" tree, logreg ") == ["tree", "logreg"]
    assert model_names(("xgboost",)) == ["xgboost"]
    with pytest.raises(IosightError, match="unknown model 'svm'"):
        model_names("tree,svm")
    with pytest.raises(IosightError, match="no model named"):
        model_names(" , ")


def test_signed_log1p_compresses_bytes_and_keeps_the_sign():
    x = np.array([-1e12, -1.0, 0.0, 1.0, 1e12])
    got = signed_log1p(x)
    assert np.array_equal(np.sign(got), np.sign(x))
    assert got[4] == pytest.approx(np.log1p(1e12)) and got[0] == -got[4]


@pytest.mark.parametrize("name", MODELS.names())
def test_every_registered_model_learns_a_plain_rule(name):
    """A contract over every MODELS entry: a pipeline (signed log1p, scaling, the
    classifier) that fits and separates classes told by one feature."""
    X, y = _problem()
    pipe = make_pipeline(name, seed=0)
    assert [step for step, _ in pipe.steps] == ["log", "scale", "model"]
    pipe.fit(X[:300], y[:300])
    assert (pipe.predict(X[300:]) == y[300:]).mean() > 0.9


def test_params_are_set_on_the_classifier():
    pipe = make_pipeline("tree", seed=4, params={"max_depth": 2})
    assert pipe.named_steps["model"].max_depth == 2
    assert pipe.named_steps["model"].random_state == 4


def test_search_settings_are_checked_and_a_search_picks_from_the_space():
    with pytest.raises(IosightError, match="'search_iter' parameter must be 0"):
        check_search(-1, 3)
    with pytest.raises(IosightError, match="'cv_splits' parameter must be at least 2"):
        check_search(2, 1)
    check_search(0, 1)  # no search: the folds are not used
    X, y = _problem()
    assert search_params("tree", X, y, seed=0, n_iter=0) == {}
    found = search_params("tree", X, y, seed=0, n_iter=3, cv_splits=2)
    _, space = MODELS.get("tree")(0)
    assert found and all(found[k] in space[k] for k in found)
    assert search_params("tree", X, y, seed=0, n_iter=3, cv_splits=2) == found  # seeded
