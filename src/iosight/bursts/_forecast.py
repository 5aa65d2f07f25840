"""Burst forecasting and its evaluation against baselines (Saeedizade et al. §V, NOTES §1).

Two modes. ``interval`` (the paper's "prediction interval"): re-bin the timeline to
h-minute bins and predict whether the next h-minute bin is a burst. ``lead`` (what a
scheduler needs): on the base bins, predict whether bin t + L is a burst, one model per
lead L. Targets are ``binary`` (burst or not) or ``severity`` (classes 0-5, §V-A).

iosight's readings: the split is chronological (first ``train_fraction`` of the bins);
training rows are only those whose *target* lies in the training part, so no test label
is seen in training; burst thresholds (mean, stdev, k) come from the training part by
default (``threshold_from="all"`` reproduces the paper, which uses the whole series).
Every model is shown beside two baselines: persistence (the target bin is what the
current bin is) and time-of-day climatology (burst rate of the target bin's slot of the
day in the training part, thresholded for the best training F1).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._progress import Progress, ensure_progress
from iosight.bursts._analysis import check_direction
from iosight.bursts._features import check_feature_set, make_features
from iosight.bursts._labels import BurstLabels, label_bursts
from iosight.bursts._models import make_pipeline, model_names, search_params

if TYPE_CHECKING:
    import pandas as pd

MODES = ("interval", "lead")
TARGETS = ("binary", "severity")
BASELINES = ("persistence", "time_of_day")
DEFAULT_HORIZONS = (5, 15, 30, 60, 120)  # minutes


@dataclass(frozen=True)
class Dataset:
    """Features, targets and the chronological split of one forecasting task."""

    X: np.ndarray
    y: np.ndarray  # target class at t + step (0/1 or severity 0-5)
    current: np.ndarray  # the same label at t (persistence baseline)
    target_start: np.ndarray  # bin_start of the target bin
    n_train: int
    labels: BurstLabels
    bin_width: float  # of the series the task runs on
    step: int  # bins between the features' bin and the target bin
    train_window: tuple[float, float]


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    check_param(name, value, value in allowed, " or ".join(repr(a) for a in allowed))


def make_dataset(
    df: pd.DataFrame,
    *,
    direction: str,
    feature_set: int = 3,
    mode: str = "interval",
    horizon_min: float = 5,
    target: str = "binary",
    k: float | None = None,
    target_fraction: float = 0.01,
    train_fraction: float = 0.8,
    threshold_from: str = "train",
) -> Dataset:
    """Build one forecasting task from a timeline (parameters as :func:`evaluate_forecasts`)."""
    from iosight.timeline import bin_width_of, rebin

    check_direction(direction)
    check_feature_set(feature_set)
    _check_choice("mode", mode, MODES)
    _check_choice("target", target, TARGETS)
    _check_choice("threshold_from", threshold_from, ("train", "all"))
    check_param("train_fraction", train_fraction, 0 < train_fraction < 1, "in (0, 1)")
    width = bin_width_of(df)
    ratio = horizon_min * 60.0 / width
    if ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
        raise IosightError(
            f"a horizon of {horizon_min:g} min is not a whole number of {width:g} s bins"
        )
    if mode == "interval":
        series = df if round(ratio) == 1 else rebin(df, horizon_min * 60.0)
        step = 1
    else:
        series, step = df, int(round(ratio))
    series = series.reset_index(drop=True)
    n = len(series)
    split = int(train_fraction * n)
    if split - step < 10 or n - split < 1:
        raise IosightError(
            f"too few {series['bin_width'].iloc[0]:g} s bins ({n}) for horizon {horizon_min:g} min"
        )
    x = series[f"{direction}_bytes"].to_numpy(np.float64)
    labels = label_bursts(
        x,
        k=k,
        target_fraction=target_fraction,
        reference=x[:split] if threshold_from == "train" else None,
    )
    lab = labels.is_burst.astype(np.int64) if target == "binary" else labels.severity
    feats = make_features(series, direction, feature_set).to_numpy(np.float64)
    starts = series["bin_start"].to_numpy(np.float64)
    return Dataset(
        X=feats[: n - step],
        y=lab[step:],
        current=lab[: n - step],
        target_start=starts[step:],
        n_train=split - step,
        labels=labels,
        bin_width=float(series["bin_width"].iloc[0]),
        step=step,
        train_window=(float(starts[0]), float(starts[split - 1])),
    )


def _metrics(y: np.ndarray, pred: np.ndarray, prob: np.ndarray, target: str) -> dict:
    from sklearn.metrics import average_precision_score, f1_score, precision_score, recall_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yb, pb = y > 0, pred > 0
        out = {
            "f1": f1_score(yb, pb, zero_division=0),
            "precision": precision_score(yb, pb, zero_division=0),
            "recall": recall_score(yb, pb, zero_division=0),
            "pr_auc": average_precision_score(yb, prob) if yb.any() else float("nan"),
            "f1_macro": float("nan"),
            "f1_weighted": float("nan"),
        }
        if target == "severity":
            out["f1_macro"] = f1_score(y, pred, average="macro", zero_division=0)
            out["f1_weighted"] = f1_score(y, pred, average="weighted", zero_division=0)
    return {k: float(v) for k, v in out.items()}


@dataclass
class FittedModel:
    """A fitted pipeline and the classes its dense codes stand for."""

    pipeline: object
    classes: np.ndarray
    params: dict

    def predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predicted classes and the probability of a burst (any class above 0)."""
        proba = self.pipeline.predict_proba(X)
        pred = self.classes[np.argmax(proba, axis=1)]
        p_burst = proba[:, self.classes > 0].sum(axis=1)
        return pred, p_burst


def fit_model(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    *,
    seed: int = 0,
    search_iter: int = 4,
    cv_splits: int = 3,
    params: dict | None = None,
) -> FittedModel:
    """Search hyper-parameters (unless ``params`` given) and fit on all of (X, y)."""
    classes = np.unique(y)
    if classes.size < 2:
        raise IosightError(
            "the training part has no bursts to learn from; use a longer timeline, "
            "a lower k or a larger target fraction"
        )
    code = np.searchsorted(classes, y)
    if params is None:
        scoring = "f1" if classes.size == 2 else "f1_macro"
        params = search_params(
            name, X, code, seed=seed, n_iter=search_iter, cv_splits=cv_splits, scoring=scoring
        )
    pipe = make_pipeline(name, seed, params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, code)
    return FittedModel(pipe, classes, dict(params))


def _time_of_day(ds: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Climatology baseline: burst rate of the target's slot of the day in the training part,
    predicted a burst where the rate reaches the cut that maximises the training F1."""
    n_slots = max(1, int(round(86400.0 / ds.bin_width)))
    slot = ((ds.target_start % 86400.0) // ds.bin_width).astype(np.int64) % n_slots
    tr = slice(0, ds.n_train)
    yb = ds.y[tr] > 0
    counts = np.bincount(slot[tr], minlength=n_slots)
    rate = np.bincount(slot[tr], weights=yb, minlength=n_slots) / np.maximum(counts, 1)
    # F1 of every cut at once: rows by decreasing rate, cumulative true positives
    r = rate[slot[tr]]
    order = np.argsort(-r, kind="mergesort")
    rs, tp = r[order], np.cumsum(yb[order])
    ends = np.flatnonzero(np.append(rs[1:] != rs[:-1], True))
    f1 = 2 * tp[ends] / (ends + 1 + yb.sum())
    ok = rs[ends] > 0
    thr = rs[ends][ok][int(np.argmax(f1[ok]))] if ok.any() else np.inf
    # the class predicted for a burst slot: the commonest burst class of the slot
    cls = np.ones(n_slots, np.int64)
    if ds.y.max() > 1:
        hit = ds.y[tr] > 0
        for s in np.unique(slot[tr][hit]):
            cls[s] = np.bincount(ds.y[tr][hit & (slot[tr] == s)]).argmax()
    prob = rate[slot]
    return np.where(prob >= thr, cls[slot], 0), prob


def _baselines(ds: Dataset) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    te = slice(ds.n_train, None)
    tod_pred, tod_prob = _time_of_day(ds)
    cur = ds.current[te]
    return {
        "persistence": (cur, (cur > 0).astype(float)),
        "time_of_day": (tod_pred[te], tod_prob[te]),
    }


def _as_list(value, cast=str) -> list:
    if isinstance(value, str):
        return [cast(v.strip()) for v in value.split(",") if v.strip()]
    if np.isscalar(value):
        return [cast(value)]
    return [cast(v) for v in value]


def evaluate_forecasts(
    df: pd.DataFrame,
    *,
    directions: str | list[str] = ("read", "write"),
    models: str | list[str] = "all",
    feature_sets: int | list[int] = 3,
    modes: str | list[str] = "interval",
    horizons: float | list[float] = DEFAULT_HORIZONS,
    targets: str | list[str] = "binary",
    k: dict[str, float] | None = None,
    target_fraction: float = 0.01,
    train_fraction: float = 0.8,
    threshold_from: str = "train",
    search_iter: int = 4,
    cv_splits: int = 3,
    seed: int = 0,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Train and test every model on every task, beside the two baselines (§V, Fig. 6-7,
    Table I).

    Parameters
    ----------
    df : DataFrame
        A timeline.
    directions, models, feature_sets, modes, horizons, targets
        Lists (or comma-separated strings) to cross: ``models`` ``"all"`` is logreg,
        naive_bayes, tree, forest, xgboost; horizons in minutes (multiples of the bin
        width); modes ``interval`` and/or ``lead``; targets ``binary`` and/or ``severity``.
    k : dict, optional
        Fixed thresholds per direction (stdevs); else chosen for ``target_fraction``.
    search_iter, cv_splits : int
        Randomized-search candidates and time-series folds inside the training part.
    seed : int
        Seed of every model and search.

    Returns
    -------
    DataFrame
        One row per (direction, feature_set, mode, horizon_min, target, model) with
        f1, precision, recall, pr_auc (burst class), f1_macro and f1_weighted (severity),
        n_train, n_test, test_bursts, k and the chosen params (JSON).
    """
    import pandas as pd

    dirs = _as_list(directions)
    names = model_names(models)
    tasks = [
        (d, fs, m, h, t)
        for d in dirs
        for fs in _as_list(feature_sets, int)
        for m in _as_list(modes)
        for h in _as_list(horizons, float)
        for t in _as_list(targets)
    ]
    prog = ensure_progress(progress)
    prog.start(len(tasks) * len(names), "burst models")
    rows = []
    for d, fs, m, h, t in tasks:
        ds = make_dataset(
            df, direction=d, feature_set=fs, mode=m, horizon_min=h, target=t,
            k=(k or {}).get(d), target_fraction=target_fraction,
            train_fraction=train_fraction, threshold_from=threshold_from,
        )  # fmt: skip
        tr, te = slice(0, ds.n_train), slice(ds.n_train, None)
        base = {"direction": d, "feature_set": fs, "mode": m, "horizon_min": h, "target": t,
                "n_train": ds.n_train, "n_test": int(ds.y[te].size),
                "test_bursts": int((ds.y[te] > 0).sum()), "k": ds.labels.k}  # fmt: skip
        results = dict(_baselines(ds))
        params = {}
        for name in names:
            fitted = fit_model(
                name, ds.X[tr], ds.y[tr], seed=seed, search_iter=search_iter, cv_splits=cv_splits
            )
            results[name] = fitted.predict(ds.X[te])
            params[name] = fitted.params
            prog.advance(1, model=name)
        for name, (pred, prob) in results.items():
            rows.append({**base, "model": name, **_metrics(ds.y[te], pred, prob, t),
                         "params": json.dumps(params.get(name, {}), default=str)})  # fmt: skip
    prog.finish()
    return pd.DataFrame(rows)
