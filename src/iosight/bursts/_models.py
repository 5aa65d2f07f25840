"""The five classifiers of §V with their hyper-parameter spaces, and the search.

Every model is a scikit-learn pipeline: signed ``log1p`` of the features (bytes span
many orders of magnitude), standardisation, then the classifier. Hyper-parameters are
searched with time-series folds inside the training part only (docs/methods.md §1); the spaces
follow §V (tree depth, leaf nodes and features per split for the tree; trees, depth and
leaf nodes for the forest; depth, child weight, gamma, alpha, lambda and column sampling
for XGBoost; var_smoothing for naive Bayes; penalty and C for logistic regression,
``max_iter=15000``), kept small by default. Without a search (``search_iter=0``, the
default) every model uses the defaults below; the binary decision cut is then tuned on a
validation slice instead (:func:`iosight.bursts.fit_candidates`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._registry import Registry

# name -> factory(seed) -> (estimator, parameter space)
MODELS: Registry[Callable[[int], tuple[Any, dict[str, list]]]] = Registry("model")


def signed_log1p(x: np.ndarray) -> np.ndarray:
    """``sign(x) * log(1 + |x|)``: compresses byte counts, keeps the sign of MACDs."""
    return np.sign(x) * np.log1p(np.abs(x))


@MODELS.register("logreg")
def _logreg(seed: int):
    # iosight's reading: the paper's saga solver (max_iter 15000) takes minutes per fit on a
    # year of 5-minute bins, the EMA features being collinear; lbfgs reaches the same L2
    # optimum in seconds. "logreg_saga" keeps the paper's configuration.
    from sklearn.linear_model import LogisticRegression

    est = LogisticRegression(solver="lbfgs", max_iter=15000, random_state=seed)
    return est, {"C": [0.01, 0.1, 1.0, 10.0], "class_weight": [None, "balanced"]}


@MODELS.register("logreg_saga")
def _logreg_saga(seed: int):
    from sklearn.linear_model import LogisticRegression

    est = LogisticRegression(solver="saga", max_iter=15000, random_state=seed)
    return est, {"C": [0.01, 0.1, 1.0, 10.0], "l1_ratio": [0.0, 1.0],
                 "class_weight": [None, "balanced"]}  # fmt: skip


@MODELS.register("naive_bayes")
def _naive_bayes(seed: int):
    from sklearn.naive_bayes import GaussianNB

    return GaussianNB(), {"var_smoothing": [1e-9, 1e-7, 1e-5, 1e-3]}


@MODELS.register("tree")
def _tree(seed: int):
    from sklearn.tree import DecisionTreeClassifier

    est = DecisionTreeClassifier(random_state=seed)
    return est, {"max_depth": [3, 5, 8, None], "max_leaf_nodes": [None, 32, 128],
                 "max_features": [None, "sqrt"], "class_weight": [None, "balanced"]}  # fmt: skip


@MODELS.register("forest")
def _forest(seed: int):
    from sklearn.ensemble import RandomForestClassifier

    # iosight's defaults for a year of 5-minute bins: 50 trees on 30% bootstrap samples with
    # leaves of 5 fit in seconds (100 full trees took 30 s per fit with feature set 4) and
    # scored the same on the validation slice of Summit (docs/bursts.md)
    est = RandomForestClassifier(n_estimators=50, min_samples_leaf=5, max_samples=0.3,
                                 random_state=seed, n_jobs=1)  # fmt: skip
    return est, {"n_estimators": [50, 100], "max_depth": [6, 10, None],
                 "max_leaf_nodes": [None, 256], "min_samples_leaf": [1, 5]}  # fmt: skip


@MODELS.register("xgboost")
def _xgboost(seed: int):
    from iosight.bursts._xgb import DenseLabelXGBClassifier

    est = DenseLabelXGBClassifier(n_estimators=150, learning_rate=0.1, tree_method="hist",
                        random_state=seed, n_jobs=1, verbosity=0)  # fmt: skip
    return est, {"max_depth": [3, 6], "min_child_weight": [1, 5], "gamma": [0.0, 1.0],
                 "reg_alpha": [0.0, 1.0], "reg_lambda": [1.0, 10.0],
                 "colsample_bytree": [0.7, 1.0]}  # fmt: skip


def model_names(spec: str | list[str]) -> list[str]:
    """``"all"``, a comma-separated string or a list -> registered model names."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names == ["all"]:
        return ["logreg", "naive_bayes", "tree", "forest", "xgboost"]
    for n in names:
        MODELS.get(n)
    if not names:
        raise IosightError("no model named; choose 'all' or some of: " + ", ".join(MODELS.names()))
    return names


def make_pipeline(name: str, seed: int, params: dict | None = None):
    """The model's pipeline (signed log1p, scaling, classifier) with ``params`` set.

    ``name``: the model (:data:`MODELS`); ``seed``: the random seed.
    """
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    est, _ = MODELS.get(name)(seed)
    pipe = Pipeline([("log", FunctionTransformer(signed_log1p)), ("scale", StandardScaler()),
                     ("model", est)])  # fmt: skip
    if params:
        pipe.set_params(**{f"model__{k}": v for k, v in params.items()})
    return pipe


def check_search(search_iter: int, cv_splits: int) -> None:
    """Refuse search settings scikit-learn cannot run: ``search_iter`` >= 0, and at least
    two time-series folds when a search runs (``search_iter`` > 0)."""
    check_param("search_iter", search_iter, search_iter >= 0, "0 (defaults) or more candidates")
    if search_iter > 0:
        check_param("cv_splits", cv_splits, cv_splits >= 2, "at least 2 when searching")


def search_params(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    *,
    seed: int,
    n_iter: int = 4,
    cv_splits: int = 3,
    scoring: str = "f1",
) -> dict:
    """Best hyper-parameters by randomized search over time-series folds of (X, y).

    ``n_iter=0`` returns ``{}`` (the library defaults). ``y`` holds dense class codes
    0..K-1. Folds whose training part has one class score NaN and are ranked last.
    """
    check_search(n_iter, cv_splits)
    if n_iter == 0:
        return {}
    from sklearn.model_selection import RandomizedSearchCV, TimeSeriesSplit

    _, space = MODELS.get(name)(seed)
    size = int(np.prod([len(v) for v in space.values()]))
    search = RandomizedSearchCV(
        make_pipeline(name, seed),
        {f"model__{k}": v for k, v in space.items()},
        n_iter=min(n_iter, size),
        cv=TimeSeriesSplit(n_splits=cv_splits),
        scoring=scoring,
        random_state=seed,
        error_score=np.nan,
        refit=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            search.fit(X, y)
        except ValueError:  # every candidate failed on some fold: keep the defaults
            return {}
    scores = np.nan_to_num(search.cv_results_["mean_test_score"], nan=-1.0)
    best = search.cv_results_["params"][int(np.argmax(scores))]
    return {k.removeprefix("model__"): v for k, v in best.items()}
