"""The model contract, checked on every :data:`~iosight.bursts._models.MODELS` entry (as
scikit-learn's ``test_common.py`` checks every estimator): each makes a pipeline that
fits and predicts on a tiny SYNTHETIC problem, the same seed gives the same model, and
its search space names parameters the model has."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import UnknownNameError
from iosight.bursts._models import MODELS, make_pipeline, model_names


def _synthetic(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """SYNTHETIC: 240 bins of 4 byte-like features (0 to 1e9, one signed); the label is 1
    where the first feature is in its top third, with 5% of labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.lognormal(10, 3, size=(240, 4))
    X[:, 3] -= X[:, 3].mean()  # a MACD-like signed feature
    y = (X[:, 0] > np.quantile(X[:, 0], 2 / 3)).astype(np.int64)
    flip = rng.random(len(y)) < 0.05
    return X, np.where(flip, 1 - y, y)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return _synthetic()


@pytest.mark.parametrize("name", MODELS.names())
def test_fits_and_predicts_a_tiny_problem(name, data):
    X, y = data
    pipe = make_pipeline(name, seed=0).fit(X[:180], y[:180])
    pred = pipe.predict(X[180:])
    proba = pipe.predict_proba(X[180:])
    assert pred.shape == (60,) and set(np.unique(pred)) <= {0, 1}
    assert proba.shape == (60, 2) and np.allclose(proba.sum(axis=1), 1.0)
    # the signal is one feature's rank: every model beats always saying "no burst"
    assert (pred == y[180:]).mean() > (y[180:] == 0).mean()


@pytest.mark.parametrize("name", MODELS.names())
def test_the_same_seed_gives_the_same_model(name, data):
    X, y = data
    a, b = (make_pipeline(name, seed=7).fit(X, y) for _ in range(2))
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))


@pytest.mark.parametrize("name", MODELS.names())
def test_its_search_space_names_parameters_of_the_model(name, data):
    est, space = MODELS.get(name)(0)
    assert space and set(space) <= set(est.get_params())
    first = {k: v[0] for k, v in space.items()}
    pipe = make_pipeline(name, seed=0, params=first)
    assert {k: pipe.get_params()[f"model__{k}"] for k in first} == first


def test_all_names_registered_models_and_an_unknown_one_is_refused():
    assert set(model_names("all")) <= set(MODELS.names())
    with pytest.raises(UnknownNameError, match="choose one of: " + ", ".join(MODELS.names())):
        model_names("no-such-model")
