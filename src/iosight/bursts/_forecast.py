"""Burst forecasting and its evaluation against baselines.

Saeedizade et al. (2023), §V, read as in docs/methods.md §1.

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param, check_seed, parse_list
from iosight._progress import Progress, ensure_progress
from iosight.bursts._analysis import check_direction
from iosight.bursts._features import check_feature_set, make_features
from iosight.bursts._jobstate import bytes_by_start, started_by
from iosight.bursts._known import check_information, known_rows, known_share
from iosight.bursts._labels import BurstLabels, label_bursts, severity_classes
from iosight.bursts._models import check_search, make_pipeline, model_names, search_params
from iosight.bursts._nowcast import nowcast_accuracy

if TYPE_CHECKING:
    import pandas as pd

MODES = ("interval", "lead")
TARGETS = ("binary", "severity")
BASELINES = ("persistence", "time_of_day", "nowcast")  # nowcast: logs, feature set 4
DEFAULT_HORIZONS = (5, 15, 30, 60, 120)  # minutes
VAL_FRACTION = 0.2  # of the training part, at its end: decision thresholds and model choice


@dataclass(frozen=True)
class Dataset:
    """Features, targets and the chronological split of one forecasting task."""

    X: np.ndarray
    y: np.ndarray  # target class at t + step (0/1 or severity 0-5)
    current: np.ndarray  # the same label at t (persistence baseline)
    target_start: np.ndarray  # bin_start of the target bin
    n_train: int
    n_fit: int  # rows [n_fit, n_train) are the validation slice (end of the training part)
    labels: BurstLabels
    bin_width: float  # of the series the task runs on
    step: int  # bins between the features' bin and the target bin
    train_window: tuple[float, float]
    # bytes of the target bin from the jobs started by t, in hindsight (None: no jobs, or
    # a timeline that is not the jobs' totals spread over their runs; :func:`started_by`)
    known: np.ndarray | None = None
    information: str = "live"  # what the features know at t (:mod:`iosight.bursts._known`)
    # logs: share of a bin's bytes known `step` bins after its end, and (set 4) how good
    # the nowcast of the current bin is on the test part (:func:`nowcast_accuracy`)
    known_share: float = 1.0
    nowcast: dict = field(default_factory=dict)
    nowcast_column: int | None = None  # of X: logs, feature set 4

    @property
    def feature_start(self) -> np.ndarray:
        """bin_start of each row's features' bin (what a time-of-day forecast reads)."""
        return self.target_start - self.step * self.bin_width


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
    val_fraction: float = VAL_FRACTION,
    jobs: pd.DataFrame | None = None,
    information: str = "live",
    known: pd.DataFrame | None = None,
) -> Dataset:
    """Build one forecasting task from a timeline (parameters as :func:`evaluate_forecasts`)."""
    return _Builder(df, jobs, information, known).dataset(
        direction=direction, feature_set=feature_set, mode=mode, horizon_min=horizon_min,
        target=target, k=k, target_fraction=target_fraction, train_fraction=train_fraction,
        threshold_from=threshold_from, val_fraction=val_fraction,
    )  # fmt: skip


class _Builder:
    """Datasets of one timeline, sharing series, labels and feature matrices between tasks
    (lead-mode tasks differ only in how far the target is shifted). Under ``logs`` the
    features are what the logs held (``known``: the known-at sums,
    :func:`iosight.bursts.load_known`); labels stay the complete timeline's."""

    def __init__(self, df: pd.DataFrame, jobs: pd.DataFrame | None, information: str = "live",
                 known: pd.DataFrame | None = None) -> None:  # fmt: skip
        check_information(information)
        if information == "logs" and known is None:
            raise IosightError("the 'logs' regime needs the known-at sums (load_known)")
        self.df, self.jobs, self._cache = df, jobs, {}
        self.information, self.known = information, known if information == "logs" else None

    def _cached(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def dataset(self, *, direction: str, feature_set: int, mode: str, horizon_min: float,
                target: str, k: float | None, target_fraction: float, train_fraction: float,
                threshold_from: str, val_fraction: float) -> Dataset:  # fmt: skip
        from iosight.timeline import bin_width_of, rebin

        df = self.df
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
        check_param("val_fraction", val_fraction, 0 < val_fraction < 1, "in (0, 1)")
        rebinned = mode == "interval" and round(ratio) != 1
        if rebinned and self.known is not None:
            raise IosightError("the 'logs' regime forecasts in lead mode only (--mode lead)")
        if rebinned:
            series = self._cached(("series", ratio), lambda: rebin(df, horizon_min * 60.0))
            step = 1
        else:
            series, step = df, 1 if mode == "interval" else int(round(ratio))
        series = series.reset_index(drop=True)
        n = len(series)
        series_width = float(series["bin_width"].iloc[0])
        split = int(train_fraction * n)
        n_fit = int((1 - val_fraction) * (split - step))
        if n_fit < 10 or split - step - n_fit < 1 or n - split < 1:
            raise IosightError(
                f"too few {series_width:g} s bins ({n}) for horizon {horizon_min:g} min"
            )
        x = series[f"{direction}_bytes"].to_numpy(np.float64)
        key = (len(series), direction, k, target_fraction, split, threshold_from)
        labels = self._cached(("labels", *key), lambda: label_bursts(
            x, k=k, target_fraction=target_fraction,
            reference=x[:split] if threshold_from == "train" else None,
            name=f"{direction} bytes per {series_width:g} s bin",
        ))  # fmt: skip
        lab = labels.is_burst.astype(np.int64) if target == "binary" else labels.severity
        if feature_set == 4 and self.jobs is None:
            raise IosightError("feature set 4 needs the warehouse's jobs (load_jobs)")
        feats = self._cached(("features", *key, feature_set), lambda: make_features(
            series, direction, feature_set, jobs=self.jobs, threshold=labels.threshold,
            known=self.known,
        ).to_numpy(np.float64))  # fmt: skip
        if self.known is not None:  # the current state is what the logs hold
            sigma = labels.sigma(feats[:, 0])
            lab_now = (sigma > labels.k).astype(np.int64) if target == "binary" else \
                severity_classes(sigma, labels.k)  # fmt: skip
        else:
            lab_now = lab
        starts = series["bin_start"].to_numpy(np.float64)
        triples = self._cached(
            ("jobs", ratio if rebinned else 1, direction),
            lambda: self._job_bytes(starts, series_width, x, direction),
        )
        return Dataset(
            X=feats[: n - step],
            y=lab[step:],
            current=lab_now[: n - step],
            target_start=starts[step:],
            n_train=split - step,
            n_fit=n_fit,
            labels=labels,
            bin_width=series_width,
            step=step,
            train_window=(float(starts[0]), float(starts[split - 1])),
            known=None
            if triples is None
            else started_by(triples, starts, series_width, step)[step:],
            information=self.information,
            nowcast_column=feats.shape[1] - 1 if self.known is not None and feature_set == 4
            else None,  # fmt: skip
            **self._known_scores(series, direction, step, split, labels.threshold, feats,
                                 feature_set),  # fmt: skip
        )

    def _known_scores(self, series: pd.DataFrame, direction: str, step: int, split: int,
                      threshold: float, feats: np.ndarray, feature_set: int) -> dict:  # fmt: skip
        """Under ``logs``: the share of the test part's bytes known ``step`` bins after
        their bin's end and, set 4, the nowcast's accuracy on the test part's feature
        bins (the nowcast is set 4's last column)."""
        if self.known is None:
            return {}
        from iosight.timeline import bin_width_of

        rows = self._cached(("known_rows", len(series)), lambda: known_rows(
            self.known, series["bin_start"].to_numpy(np.float64), bin_width_of(series)))
        col, n = f"{direction}_bytes", len(series)
        te = slice(split - step, n - step)
        out = {"known_share": known_share(rows, col, step, slice(split, n))}
        if feature_set == 4:
            x = series[col].to_numpy(np.float64)
            out["nowcast"] = nowcast_accuracy(feats[te, -1], x[te], threshold)
        return out

    def _job_bytes(self, starts: np.ndarray, width: float, x: np.ndarray, direction: str):
        """:func:`bytes_by_start` of the jobs on bins ``starts``, or None without jobs or
        when the series' bytes ``x`` are not their totals spread over their runs (then what
        the running jobs bring to a bin cannot be told from the jobs frame)."""
        if self.jobs is None:
            return None
        triples = bytes_by_start(self.jobs, starts, width, direction)
        total = np.bincount(triples[0], weights=triples[2], minlength=len(x))
        scale = float(np.abs(x).max()) if len(x) else 0.0
        return triples if np.allclose(total, x, rtol=1e-6, atol=1e-9 * scale) else None


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
            # every class, weighted by its support: the paper's framing (§V; docs/methods.md §1)
            "f1_weighted": f1_score(y, pred, average="weighted", zero_division=0),
            "f1_macro": f1_score(y, pred, average="macro", zero_division=0),
        }
    return {k: float(v) for k, v in out.items()}


def no_new_bursts_f1(now: np.ndarray, later: np.ndarray) -> float:
    """Burst-class F1 of a forecast that knows exactly which bursts on now are still on
    at the target bin and foresees none that is not on now.

    No forecast that only tells how long what is happening lasts (persistence is one)
    scores higher: it misses every burst not on now and can at best hit every one that
    is. Gains beyond it need foreseeing new bursts (docs/bursts.md, issue 14).
    """
    on, nxt = np.asarray(now) > 0, np.asarray(later) > 0
    return _f1(nxt, on & nxt)


def running_jobs_share(known: np.ndarray, threshold: float, later: np.ndarray) -> float:
    """Share of the bursts at t + L (``later`` above 0) that the jobs running at t make
    on their own: the bytes those jobs put into bin t + L (``known``, in hindsight, with
    their whole futures: :attr:`Dataset.known`) pass the threshold without any job that
    starts after t. NaN without bursts.

    Not a forecast and not a bound on one: a measure of where bursts come from. Where it
    is near 0, the bursts at that lead are made by jobs not yet started at t, and a
    forecast of them is a forecast of job starts (docs/bursts.md, issue 14).
    """
    burst = np.asarray(later) > 0
    if not burst.any():
        return float("nan")
    return float(np.mean(np.asarray(known)[burst] > threshold))


@dataclass
class FittedModel:
    """A fitted pipeline, the classes its dense codes stand for, and (binary) the cut on
    the burst probability tuned for F1 on the validation slice."""

    pipeline: object
    classes: np.ndarray
    params: dict
    cut: float | None = None

    def predict(self, X: np.ndarray, starts=None) -> tuple[np.ndarray, np.ndarray]:
        """Predicted classes and the probability of a burst (any class above 0)."""
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
    """

    mean: float
    std: float
    k: float
    severity: bool = False
    params: dict = field(default_factory=dict)
    column: int = 0

    def predict(self, X: np.ndarray, starts=None) -> tuple[np.ndarray, np.ndarray]:
        sigma = (np.asarray(X, np.float64)[:, self.column] - self.mean) / self.std
        burst = sigma > self.k
        pred = severity_classes(sigma, self.k) if self.severity else burst.astype(np.int64)
        return pred, burst.astype(np.float64)

    @classmethod
    def of(cls, labels: BurstLabels, severity: bool = False, column: int = 0) -> Persistence:
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
        t = np.asarray(target_start, np.float64)
        return ((t % 86400.0) // self.bin_width).astype(np.int64) % self.rate.size

    def predict(self, X: np.ndarray, starts=None) -> tuple[np.ndarray, np.ndarray]:
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
    all of (X, y)."""
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
    of the validation slice and on each of its :data:`CHOICE_WINDOWS` consecutive windows."""

    model: FittedModel | SplitModel | Persistence
    val_f1: float
    window_f1: tuple[float, ...]

    @classmethod
    def scored(cls, model, yv: np.ndarray, pv: np.ndarray) -> Candidate:
        """The candidate with its F1 of predictions ``pv`` against ``yv`` (booleans)."""
        windows = zip(np.array_split(yv, CHOICE_WINDOWS), np.array_split(pv, CHOICE_WINDOWS),
                      strict=True)  # fmt: skip
        return cls(model, _f1(yv, pv), tuple(_f1(y, p) for y, p in windows))


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
    baseline."""
    base = max((n for n in BASELINES if n in candidates), key=lambda n: candidates[n].val_f1)
    ref = candidates[base]
    ok = [n for n, c in candidates.items() if n not in BASELINES
          and c.val_f1 >= ref.val_f1 + margin
          and all(w >= b for w, b in zip(c.window_f1, ref.window_f1, strict=True))]  # fmt: skip
    return max(ok, key=lambda n: candidates[n].val_f1) if ok else base


def _cut_text(model) -> str:
    """The decision cut(s) of a model: ``"0.31"`` or ``"calm 0.05, burst 0.6"``."""
    if isinstance(model, SplitModel):
        return f"calm {model.cuts[0]:.3g}, burst {model.cuts[1]:.3g}"
    cut = getattr(model, "cut", None)
    return "" if cut is None else f"{cut:.3g}"


def _f1(yb: np.ndarray, pb: np.ndarray) -> float:
    tp = float(np.sum(yb & pb))
    return 2 * tp / (yb.sum() + pb.sum()) if tp else 0.0


def _time_of_day(ds: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Climatology baseline: burst rate of the target's slot of the day in the training part,
    predicted a burst where the rate reaches the cut that maximises the training F1."""
    tr = slice(0, ds.n_train)
    model = TimeOfDay.fit(ds, tr)
    slot, n_slots = model.slots(ds.target_start), model.rate.size
    # the class predicted for a burst slot: the commonest burst class of the slot
    cls = np.ones(n_slots, np.int64)
    if ds.y.max() > 1:
        hit = ds.y[tr] > 0
        for s in np.unique(slot[tr][hit]):
            cls[s] = np.bincount(ds.y[tr][hit & (slot[tr] == s)]).argmax()
    prob = model.rate[slot]
    return np.where(prob >= model.cut, cls[slot], 0), prob


def parallel_map(func, items: list, n_jobs: int, progress: Progress, weight=lambda item: 1):
    """``[func(item) for item in items]`` on ``n_jobs`` threads (-1: every core), the
    progress advanced as each item finishes. Threads share the feature matrices without
    copies; scikit-learn's and XGBoost's fitting releases the GIL."""
    import os

    from joblib import Parallel, delayed

    n = (os.cpu_count() or 1) if n_jobs < 0 else max(1, n_jobs)
    out = [None] * len(items)
    run = Parallel(n_jobs=min(n, max(1, len(items))), prefer="threads",
                   return_as="generator_unordered")  # fmt: skip

    def job(i):
        return i, func(items[i])

    for i, result in run(delayed(job)(i) for i in range(len(items))):
        out[i] = result
        progress.advance(weight(items[i]), **_fields(items[i]))
    return out


def _fields(item) -> dict:
    spec = item[0] if isinstance(item, tuple) else item
    return (
        {k: v for k, v in spec.items() if k in ("direction", "horizon_min", "lead")}
        if isinstance(spec, dict)
        else {}
    )


def score_task(ds: Dataset, names: list[str], target: str, *, seed: int = 0,
               search_iter: int = 0, cv_splits: int = 3) -> list[dict]:  # fmt: skip
    """Rows of one task: baselines, every model and the candidate chosen on validation,
    each with its test scores, F1 gain and skill over persistence (§V, docs/methods.md §1)."""
    te = slice(ds.n_train, None)
    y = ds.y[te]
    cands = fit_candidates(ds, names, seed=seed, search_iter=search_iter, cv_splits=cv_splits)
    chosen = choose(cands)
    tod_pred, tod_prob = _time_of_day(ds)
    results = {"persistence": (ds.current[te], (ds.current[te] > 0).astype(float)),
               "time_of_day": (tod_pred[te], tod_prob[te])}  # fmt: skip
    for name in names:
        results[name] = cands[name].model.predict(ds.X[te])
    if "nowcast" in cands:
        results["nowcast"] = cands["nowcast"].model.predict(ds.X[te])
    results["chosen"] = results["persistence"] if chosen == "persistence" else \
        cands[chosen].model.predict(ds.X[te], ds.feature_start[te])  # fmt: skip
    scores = {name: _metrics(y, pred, prob, target) for name, (pred, prob) in results.items()}
    ref = scores["persistence"]["f1"]
    rows = []
    for name, sc in scores.items():
        cand = cands.get(chosen if name == "chosen" else name)
        model = cand.model if cand else None
        rows.append({
            "model": name, "f1": sc["f1"], "f1_gain": sc["f1"] - ref,
            "skill": (sc["f1"] - ref) / (1 - ref) if ref < 1 else 0.0,
            **{m: v for m, v in sc.items() if m != "f1"},
            "val_f1": cand.val_f1 if cand else float("nan"),
            "cut": _cut_text(model),
            "chosen": chosen if name == "chosen" else "",
            "params": json.dumps(getattr(model, "params", None) or {}, default=str),
        })  # fmt: skip
    return rows


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
    val_fraction: float = VAL_FRACTION,
    search_iter: int = 0,
    cv_splits: int = 3,
    seed: int = 0,
    jobs: pd.DataFrame | None = None,
    information: str | list[str] = "live",
    known: pd.DataFrame | None = None,
    n_jobs: int = -1,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Train and test every model on every task, beside the two baselines (§V, Fig. 6-7,
    Table I), under each information regime against the same labels.

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
    val_fraction : float
        Share of the training part, at its end, where binary decision cuts are tuned and
        the ``chosen`` candidate (persistence included) is picked.
    search_iter, cv_splits : int
        Randomized-search candidates (0: the registered defaults) and time-series folds.
    seed : int
        Seed of every model and search.
    jobs : DataFrame, optional
        :func:`iosight.bursts.load_jobs`, needed by feature set 4.
    information : {"live", "logs"} or a list of them
        What the features know at t: ``live``, the system's bytes up to t (server-side
        monitoring); ``logs``, only the logs landed by t and the scheduler's view of the
        running jobs (needs ``known``; lead mode only).
    known : DataFrame, optional
        The timeline's known-at sums (:func:`iosight.bursts.load_known`).
    n_jobs : int
        Tasks fitted at once (threads; -1: every core).

    Returns
    -------
    DataFrame
        One row per (direction, feature_set, mode, horizon_min, target, model) with
        f1, f1_gain and skill (over persistence: ``(F1 - F1_p) / (1 - F1_p)``),
        precision, recall, pr_auc (burst class), f1_weighted (support-weighted over every
        class: the paper's framing) and f1_macro, val_f1, the tuned cut, n_train, n_test,
        test_bursts, f1_no_new_bursts (:func:`no_new_bursts_f1` on the test part: the
        ceiling of forecasts that foresee no new burst), running_jobs_share
        (:func:`running_jobs_share`: the share of the test bursts that the jobs running
        at t make on their own; NaN without ``jobs`` or when the timeline is not their
        totals spread over their runs), k, the params (JSON), ``information``,
        ``known_share`` (1 under live; under logs the share of the test part's bytes known
        one lead after their bin's end) and under logs with set 4 the nowcast's
        ``nowcast_corr``, ``nowcast_error`` and ``nowcast_f1``
        (:func:`iosight.bursts._nowcast.nowcast_accuracy`). Under logs, persistence is the
        known part of the current bin and model ``nowcast`` (set 4) is persistence of the
        nowcast. Model
        ``chosen`` repeats the candidate picked on validation (its name in ``chosen``).
    """
    import pandas as pd

    check_seed(seed)
    check_search(search_iter, cv_splits)
    dirs = parse_list(directions, name="directions")
    fs_list = parse_list(feature_sets, int, "feature_sets")
    mode_list = parse_list(modes, name="modes")
    horizon_list = parse_list(horizons, float, "horizons")
    target_list = parse_list(targets, name="targets")
    names = model_names(models)
    builders = {i: _Builder(df, jobs, i, known)
                for i in parse_list(information, name="information")}  # fmt: skip
    specs = [
        {"information": i, "direction": d, "feature_set": fs, "mode": m, "horizon_min": h,
         "target": t}
        for i in builders
        for d in dirs
        for fs in fs_list
        for m in mode_list
        for h in horizon_list
        for t in target_list
    ]
    def task(information: str, **spec) -> Dataset:
        return builders[information].dataset(
            **spec, k=(k or {}).get(spec["direction"]), target_fraction=target_fraction,
            train_fraction=train_fraction, threshold_from=threshold_from,
            val_fraction=val_fraction)  # fmt: skip

    items = [(spec, task(**spec)) for spec in specs]
    prog = ensure_progress(progress)
    prog.start(len(items) * len(names), "burst models")

    def run(item):
        spec, ds = item
        return score_task(ds, names, spec["target"], seed=seed, search_iter=search_iter,
                          cv_splits=cv_splits)  # fmt: skip

    results = parallel_map(run, items, n_jobs, prog, weight=lambda _: len(names))
    prog.finish()
    rows = []
    for (spec, ds), task_rows in zip(items, results, strict=True):
        te = slice(ds.n_train, None)
        base = {**spec, "n_train": ds.n_train, "n_test": int(ds.y[te].size),
                "test_bursts": int((ds.y[te] > 0).sum()),
                "f1_no_new_bursts": no_new_bursts_f1(ds.current[te], ds.y[te]),
                "running_jobs_share": float("nan") if ds.known is None else
                    running_jobs_share(ds.known[te], ds.labels.threshold, ds.y[te]),
                "k": ds.labels.k, "known_share": ds.known_share, **ds.nowcast}  # fmt: skip
        rows += [{**base, **r} for r in task_rows]
    return pd.DataFrame(rows)
