"""The candidate forecasts of a burst task: the fitted models, the baselines as models,
their decision cuts, and the choice among them on validation (Saeedizade et al. 2023, §V).

Every model is shown beside baselines: persistence (the target bin is what the current
bin is), time-of-day climatology (burst rate of the target bin's slot of the day in the
training part, thresholded for the best training F1) and, under ``logs`` with feature
set 4, persistence of the nowcast. A candidate is chosen on the validation slice at the
end of the training part; a model is chosen only where it beat the best baseline
robustly there (:func:`choose`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError
from iosight.bursts._labels import BurstLabels, severity_classes
from iosight.bursts._models import make_pipeline, search_params

if TYPE_CHECKING:
    from iosight.bursts._dataset import Dataset

BASELINES = ("persistence", "time_of_day", "nowcast")  # nowcast: logs, feature set 4


@dataclass
class FittedModel:
    """A fitted pipeline, the classes its dense codes stand for, and (binary) the cut on
    the burst probability tuned for F1 on the validation slice.

    ``pipeline``: the fitted scikit-learn or XGBoost pipeline; ``classes``: the classes its
    dense codes stand for; ``params``: its hyper-parameters; ``cut``: the burst-probability cut
    (binary; None: the pipeline's own).
    """

    pipeline: object
    classes: np.ndarray
    params: dict
    cut: float | None = None

    def predict(self, X: np.ndarray, starts=None) -> tuple[np.ndarray, np.ndarray]:
        """Predicted classes and the probability of a burst (any class above 0).

        ``X``: features, one row per bin; ``starts``: the rows' ``bin_start`` (not read: the
        signature every model shares).
        """
        proba = self.pipeline.predict_proba(X)
        p_burst = proba[:, self.classes > 0].sum(axis=1)
        if self.cut is not None and self.classes.size == 2:
            return np.where(p_burst >= self.cut, self.classes[1], self.classes[0]), p_burst
        return self.classes[np.argmax(proba, axis=1)], p_burst


@dataclass
class Persistence:
    """Persistence ("what is happening now") as a model: bin t + L is what bin t is.

    ``X[:, column]`` is the current bin's bytes (column 0 in every feature set; under
    ``logs`` the part the logs hold, or the nowcast's column); a burst when it exceeds
    ``mean + k * std`` (severity: the current bin's class, §V-A).

    ``mean``: the series' mean bytes per bin; ``std``: its standard deviation; ``k``: the
    threshold in standard deviations; ``severity``: predict severity classes (else burst or
    not); ``params``: its (empty) hyper-parameters, as a model has; ``column``: the feature
    column holding the current bin's bytes.
    """

    mean: float
    std: float
    k: float
    severity: bool = False
    params: dict = field(default_factory=dict)
    column: int = 0

    def predict(self, X: np.ndarray, starts=None) -> tuple[np.ndarray, np.ndarray]:
        """Classes of the rows of ``X`` (their current bins' classes) and 1.0 where the
        current bin is a burst; ``starts`` is not read."""
        sigma = (np.asarray(X, np.float64)[:, self.column] - self.mean) / self.std
        burst = sigma > self.k
        pred = severity_classes(sigma, self.k) if self.severity else burst.astype(np.int64)
        return pred, burst.astype(np.float64)

    @classmethod
    def of(cls, labels: BurstLabels, severity: bool = False, column: int = 0) -> Persistence:
        """Persistence under the thresholds of ``labels``, of severity classes (else
        burst or not), reading feature ``column``.

        ``severity``: predict severity classes.
        """
        return cls(labels.mean, labels.std, labels.k, severity, column=column)


@dataclass
class TimeOfDay:
    """Time-of-day climatology as a model: the burst rate of the target bin's slot of the
    day, a burst where it reaches ``cut``. It reads the clock, not the features:
    ``predict`` needs the start times of the features' bins."""

    rate: np.ndarray  # per slot of the day
    cut: float
    bin_width: float
    ahead: float  # seconds from a features' bin start to its target bin start
    params: dict = field(default_factory=dict)

    def slots(self, target_start: np.ndarray) -> np.ndarray:
        """The slot of the day of each bin starting at ``target_start`` (epoch s)."""
        t = np.asarray(target_start, np.float64)
        return ((t % 86400.0) // self.bin_width).astype(np.int64) % self.rate.size

    def predict(self, X: np.ndarray, starts=None) -> tuple[np.ndarray, np.ndarray]:
        """Burst or not, and the slot's burst rate, of the target bins of the features'
        bins starting at ``starts`` (epoch s; ``X`` is not read)."""
        if starts is None:
            raise IosightError("a time-of-day forecast needs the start times of its bins")
        prob = self.rate[self.slots(np.asarray(starts, np.float64) + self.ahead)]
        return (prob >= self.cut).astype(np.int64), prob

    @classmethod
    def fit(cls, ds: Dataset, rows: slice) -> TimeOfDay:
        """Rates of the slots over ``rows`` and the cut with the best F1 there."""
        n_slots = max(1, int(round(86400.0 / ds.bin_width)))
        model = cls(np.zeros(n_slots), float("inf"), ds.bin_width, ds.step * ds.bin_width)
        slot = model.slots(ds.target_start[rows])
        yb = ds.y[rows] > 0
        counts = np.bincount(slot, minlength=n_slots)
        model.rate = np.bincount(slot, weights=yb, minlength=n_slots) / np.maximum(counts, 1)
        model.cut = best_cut(yb, model.rate[slot])[0]
        return model


def best_cut(
    yb: np.ndarray, score: np.ndarray, *, tp0: float = 0, pred0: float = 0, pos0: float = 0
) -> tuple[float, float]:
    """The cut c for which ``score >= c`` has the best F1 against ``yb``, and that F1
    (``inf`` and 0 when no positive score or no positive label).

    ``tp0``, ``pred0`` and ``pos0`` are true positives, predicted and actual positives of
    other rows scored together with these (F1 over both); then predicting none of these
    rows (``inf``) is a candidate too.
    """
    yb = np.asarray(yb, bool)
    score = np.asarray(score, np.float64)
    pos = yb.sum() + pos0
    none = 2 * tp0 / (pos + pred0) if tp0 else 0.0
    if score.size == 0:
        return float("inf"), float(none)
    order = np.argsort(-score, kind="mergesort")
    srt, tp = score[order], np.cumsum(yb[order])
    ends = np.flatnonzero(np.append(srt[1:] != srt[:-1], True))
    f1 = 2 * (tp0 + tp[ends]) / (ends + 1 + pred0 + pos)
    ok = srt[ends] > 0
    if not pos or not ok.any() or np.max(f1[ok]) <= none:
        return float("inf"), float(none)
    i = int(np.argmax(np.where(ok, f1, -1.0)))
    return float(srt[ends][i]), float(f1[i])


@dataclass
class SplitModel:
    """One model kind fitted twice: for bins that are calm now (will a burst start by
    t + L?) and for bins that are bursts now (will it still be one?), each with its own
    decision cut. Splitting on the current state makes persistence the model's starting
    point: features whose levels drift over the year (Summit's write bursts are four times
    as frequent in the test part) cannot make it forget that a burst now is the best sign
    of a burst soon (docs/bursts.md, "Why the models lost")."""

    threshold: float  # X[:, column] (bytes of the current bin) above it: a burst now
    parts: tuple  # (calm-now, burst-now): FittedModel, or a constant burst probability
    cuts: tuple[float, float] = (0.5, 0.5)
    params: dict = field(default_factory=dict)
    column: int = 0  # under logs (set 4) the nowcast's

    classes = np.array([0, 1])

    def burst_probability(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether each row of ``X`` is a burst now, and its part's burst probability."""
        now = np.asarray(X, np.float64)[:, self.column] > self.threshold
        prob = np.empty(len(X))
        for state, part in enumerate(self.parts):
            rows = now == bool(state)
            if not rows.any():
                continue
            p = part if np.isscalar(part) else part.predict(X[rows])[1]
            prob[rows] = np.nan_to_num(p, nan=float(state))  # degenerate fit: persistence
        return now, prob

    def predict(self, X: np.ndarray, starts=None) -> tuple[np.ndarray, np.ndarray]:
        """Burst or not of each row of ``X`` (its part's probability against its part's
        cut) and the probability; ``starts`` is not read."""
        now, prob = self.burst_probability(X)
        return (prob >= np.where(now, self.cuts[1], self.cuts[0])).astype(np.int64), prob


def validation_halves(ds: Dataset) -> tuple[slice, slice]:
    """The validation slice's first half (decision cuts are tuned there) and second half
    (candidates are compared there): a cut tuned and scored on the same rows would
    flatter every model against persistence, which has no cut to tune."""
    mid = ds.n_fit + (ds.n_train - ds.n_fit) // 2
    return slice(ds.n_fit, mid), slice(mid, ds.n_train)


def fit_split(
    name: str, ds: Dataset, *, seed: int = 0, search_iter: int = 0, cv_splits: int = 3
) -> SplitModel:
    """A :class:`SplitModel` fitted on the rows before the validation slice, its two cuts
    tuned together for F1 on the slice's first half (calm part first, then the burst
    part given it). Under logs with a nowcast the state is the nowcast's (the part of the
    current bin the logs hold says little of it)."""
    fit, val = slice(0, ds.n_fit), validation_halves(ds)[0]
    parts, params = [], {}
    col = ds.nowcast_column
    current = ds.current if col is None else (ds.X[:, col] > ds.labels.threshold).astype(int)
    for state in (0, 1):
        rows = np.flatnonzero(current[fit] == state)
        y = ds.y[fit][rows]
        if rows.size == 0 or np.unique(y).size < 2:
            parts.append(float(y.mean()) if rows.size else float(state))
            continue
        m = fit_model(name, ds.X[fit][rows], y, seed=seed, search_iter=search_iter,
                      cv_splits=cv_splits)  # fmt: skip
        parts.append(m)
        params = m.params
    model = SplitModel(ds.labels.threshold, tuple(parts), params=params, column=col or 0)
    now, prob = model.burst_probability(ds.X[val])
    yv = ds.y[val] > 0
    # start from persistence (calm: never, burst: always), then tune calm, then burst
    cut_calm, _ = best_cut(yv[~now], prob[~now], tp0=np.sum(yv & now), pred0=now.sum(),
                           pos0=np.sum(yv & now))  # fmt: skip
    calm_pred = ~now & (prob >= cut_calm)
    cut_burst, _ = best_cut(yv[now], prob[now], tp0=np.sum(yv & calm_pred),
                            pred0=calm_pred.sum(), pos0=np.sum(yv & ~now))  # fmt: skip
    model.cuts = (cut_calm, cut_burst)
    return model


def fit_model(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    *,
    seed: int = 0,
    search_iter: int = 0,
    cv_splits: int = 3,
    params: dict | None = None,
) -> FittedModel:
    """Search hyper-parameters (``search_iter`` > 0, unless ``params`` given) and fit on
    all of (X, y).

    ``name``: the model (:data:`MODELS`); ``X``: features; ``y``: targets; ``seed``: the random
    seed; ``cv_splits``: time-series folds of the search.
    """
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


#: Windows the compare half of the validation slice is cut into, and the F1 margin over
#: persistence a model needs on the whole half, for :func:`choose` to prefer it.
CHOICE_WINDOWS = 3
CHOICE_MARGIN = 0.02


@dataclass
class Candidate:
    """One candidate forecast of a task: the model, its burst-class F1 on the compare half
    of the validation slice and on each of its :data:`CHOICE_WINDOWS` consecutive windows.

    ``model``: the fitted model or baseline; ``val_f1``: its burst-class F1 on the compare half;
    ``window_f1``: its F1 on each window of the half.
    """

    model: FittedModel | SplitModel | Persistence
    val_f1: float
    window_f1: tuple[float, ...]

    @classmethod
    def scored(cls, model, yv: np.ndarray, pv: np.ndarray) -> Candidate:
        """The candidate with its F1 of predictions ``pv`` against ``yv`` (booleans).

        ``model``: the fitted model or baseline.
        """
        windows = zip(np.array_split(yv, CHOICE_WINDOWS), np.array_split(pv, CHOICE_WINDOWS),
                      strict=True)  # fmt: skip
        return cls(model, burst_f1(yv, pv), tuple(burst_f1(y, p) for y, p in windows))


def fit_candidates(
    ds: Dataset,
    names: list[str],
    *,
    seed: int = 0,
    search_iter: int = 0,
    cv_splits: int = 3,
    params: dict[str, dict] | None = None,
    split: bool = True,
) -> dict[str, Candidate]:
    """Persistence, time of day (binary targets) and every model, fitted on the rows
    before the validation slice; the binary models' cuts tuned for F1 on its first half,
    every candidate scored on its second half (``val_f1``). Binary models are
    :class:`SplitModel` (calm now / burst now) unless ``split`` is false.

    The slice is the end of the training part, the period nearest the test part, so the
    cut and the choice are made on data like what follows (labels and burst shares drift
    over a year).
    """
    fit = slice(0, ds.n_fit)
    tune, val = validation_halves(ds)
    yv, yt = ds.y[val] > 0, ds.y[tune] > 0
    binary = ds.y.max(initial=0) <= 1
    out = {"persistence": Candidate.scored(Persistence.of(ds.labels, not binary), yv,
                                           ds.current[val] > 0)}  # fmt: skip
    if binary:
        tod = TimeOfDay.fit(ds, fit)
        pv = tod.predict(ds.X[val], ds.feature_start[val])[0] > 0
        out["time_of_day"] = Candidate.scored(tod, yv, pv)
    if ds.nowcast_column is not None:
        now = Persistence.of(ds.labels, not binary, ds.nowcast_column)
        out["nowcast"] = Candidate.scored(now, yv, now.predict(ds.X[val])[0] > 0)
    for name in names:
        if binary and split:
            m = fit_split(name, ds, seed=seed, search_iter=search_iter, cv_splits=cv_splits)
        else:
            m = fit_model(name, ds.X[fit], ds.y[fit], seed=seed, search_iter=search_iter,
                          cv_splits=cv_splits, params=(params or {}).get(name))  # fmt: skip
            if binary and m.classes.size == 2:
                cut = best_cut(yt, m.predict(ds.X[tune])[1])[0]
                m.cut = cut if np.isfinite(cut) else 0.5
        out[name] = Candidate.scored(m, yv, m.predict(ds.X[val])[0] > 0)
    return out


def choose(candidates: dict[str, Candidate], margin: float = CHOICE_MARGIN) -> str:
    """The baseline with the best F1 on the compare half of the validation slice
    (persistence where it ties), unless a model beats that baseline robustly: by at least
    ``margin`` F1 on the half *and* by no less than zero on each of its windows; then the
    best such model. So the choice is never worse on the half than the best baseline of
    its regime. A model that wins on the half by one lucky stretch of bursts lost on the
    test months (Summit, docs/bursts.md), so a small lead or one losing window keeps the
    baseline.

    ``candidates``: name to candidate, baselines among them.
    """
    base = max((n for n in BASELINES if n in candidates), key=lambda n: candidates[n].val_f1)
    ref = candidates[base]
    ok = [n for n, c in candidates.items() if n not in BASELINES
          and c.val_f1 >= ref.val_f1 + margin
          and all(w >= b for w, b in zip(c.window_f1, ref.window_f1, strict=True))]  # fmt: skip
    return max(ok, key=lambda n: candidates[n].val_f1) if ok else base


def burst_f1(yb: np.ndarray, pb: np.ndarray) -> float:
    """F1 of the burst class of predictions ``pb`` against labels ``yb`` (booleans); 0
    without a true positive."""
    tp = float(np.sum(yb & pb))
    return 2 * tp / (yb.sum() + pb.sum()) if tp else 0.0
