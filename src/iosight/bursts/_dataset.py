"""The data sets of burst forecasting: features, targets and the chronological split of
one task on one timeline (Saeedizade et al. 2023, §V, read as in docs/methods.md §1).

Two modes. ``interval`` (the paper's "prediction interval"): re-bin the timeline to
h-minute bins and predict whether the next h-minute bin is a burst. ``lead`` (what a
scheduler needs): on the base bins, predict whether bin t + L is a burst. Targets are
``binary`` (burst or not) or ``severity`` (classes 0-5, §V-A).

iosight's readings: the split is chronological (first ``train_fraction`` of the bins);
training rows are only those whose *target* lies in the training part, so no test label
is seen in training; burst thresholds (mean, stdev, k) come from the training part by
default (``threshold_from="all"`` reproduces the paper, which uses the whole series).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError
from iosight.bursts._features import make_features
from iosight.bursts._jobstate import bytes_by_start, started_by
from iosight.bursts._known import check_information, known_rows, known_share
from iosight.bursts._labels import BurstLabels, label_bursts, severity_classes
from iosight.bursts._nowcast import nowcast_accuracy
from iosight.bursts._task import TARGETS, BurstTask, check_choice

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Dataset:
    """Features, targets and the chronological split of one forecasting task.

    ``X``: features, one row per bin t; ``n_train``: rows of the training part (the rest tests);
    ``labels``: the thresholds and labels of the series; ``train_window``: first and last
    ``bin_start`` of the training part; ``nowcast``: the nowcast's accuracy on the test part
    (``logs``, set 4).
    """

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


def make_dataset(
    df: pd.DataFrame,
    task: BurstTask | None = None,
    *,
    target: str = "binary",
    jobs: pd.DataFrame | None = None,
    known: pd.DataFrame | None = None,
    **settings,
) -> Dataset:
    """Build one forecasting task's data set from a timeline.

    Parameters
    ----------
    df : DataFrame
        A timeline.
    task : BurstTask, optional
        The task; ``settings`` (its field names) change it. Without one, a task of
        ``settings`` in ``interval`` mode unless they name another (the paper's mode).
    target : {"binary", "severity"}
        The classes of ``y``.
    jobs : DataFrame, optional
        :func:`iosight.bursts.load_jobs`, needed by feature set 4.
    known : DataFrame, optional
        The known-at sums (:func:`iosight.bursts.load_known`), needed under ``logs``.
    """
    task = BurstTask(**{"mode": "interval", **settings}) if task is None else \
        task.replace(**settings)  # fmt: skip
    return DatasetBuilder(df, jobs, task.information, known).dataset(task, target)


@dataclass(frozen=True)
class _Series:
    """The series a task runs on and where its parts end: ``step`` bins from features to
    target, the training part's ``split`` and the validation slice's start ``n_fit``."""

    frame: pd.DataFrame
    step: int
    split: int
    n_fit: int
    rebinned: bool

    @property
    def width(self) -> float:
        return float(self.frame["bin_width"].iloc[0])

    @property
    def starts(self) -> np.ndarray:
        return self.frame["bin_start"].to_numpy(np.float64)


class DatasetBuilder:
    """Data sets of one timeline, sharing series, labels and feature matrices between
    tasks (lead-mode tasks differ only in how far the target is shifted). Under ``logs``
    the features are what the logs held (``known``: the known-at sums,
    :func:`iosight.bursts.load_known`); labels stay the complete timeline's.

    Parameters
    ----------
    df : DataFrame
        A timeline.
    jobs : DataFrame, optional
        :func:`iosight.bursts.load_jobs`, needed by feature set 4.
    information : {"live", "logs"}
        The regime of every task built here.
    known : DataFrame, optional
        The known-at sums, needed under ``logs``.
    """

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

    def dataset(self, task: BurstTask, target: str = "binary") -> Dataset:
        """The data set of ``task`` (of this builder's regime) with ``target`` classes."""
        check_choice("target", target, TARGETS)
        s = self._series(task)
        labels = self._labels(task, s)
        lab = labels.is_burst.astype(np.int64) if target == "binary" else labels.severity
        feats = self._features(task, s, labels)
        n, starts, step = len(s.frame), s.starts, s.step
        return Dataset(
            X=feats[: n - step],
            y=lab[step:],
            current=self._current(feats, labels, lab, target)[: n - step],
            target_start=starts[step:],
            n_train=s.split - step,
            n_fit=s.n_fit,
            labels=labels,
            bin_width=s.width,
            step=step,
            train_window=(float(starts[0]), float(starts[s.split - 1])),
            known=self._started_by(task, s),
            information=self.information,
            nowcast_column=feats.shape[1] - 1
            if self.known is not None and task.feature_set == 4
            else None,  # fmt: skip
            **self._known_scores(task, s, labels.threshold, feats),
        )

    def _series(self, task: BurstTask) -> _Series:
        """The task's series (re-binned in interval mode), its step and split; refuses a
        horizon that is no whole number of bins, and too short a series."""
        from iosight.timeline import bin_width_of, rebin

        width = bin_width_of(self.df)
        ratio = task.horizon_min * 60.0 / width
        if ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
            raise IosightError(
                f"a horizon of {task.horizon_min:g} min is not a whole number of {width:g} s bins"
            )
        rebinned = task.mode == "interval" and round(ratio) != 1
        if rebinned and self.known is not None:
            raise IosightError("the 'logs' regime forecasts in lead mode only (--mode lead)")
        if rebinned:
            frame = self._cached(("series", ratio),
                                 lambda: rebin(self.df, task.horizon_min * 60.0))  # fmt: skip
            step = 1
        else:
            frame, step = self.df, 1 if task.mode == "interval" else int(round(ratio))
        frame = frame.reset_index(drop=True)
        n = len(frame)
        split = int(task.train_fraction * n)
        n_fit = int((1 - task.val_fraction) * (split - step))
        s = _Series(frame, step, split, n_fit, rebinned)
        if n_fit < 10 or split - step - n_fit < 1 or n - split < 1:
            raise IosightError(
                f"too few {s.width:g} s bins ({n}) for horizon {task.horizon_min:g} min"
            )
        return s

    def _key(self, task: BurstTask, s: _Series) -> tuple:
        """What the labels (and with the feature set, the features) depend on."""
        return (len(s.frame), task.direction, task.k, task.target_fraction, s.split,
                task.threshold_from)  # fmt: skip

    def _bytes(self, task: BurstTask, s: _Series) -> np.ndarray:
        return s.frame[f"{task.direction}_bytes"].to_numpy(np.float64)

    def _labels(self, task: BurstTask, s: _Series) -> BurstLabels:
        """Burst labels of the series, thresholds from the training part or every bin."""
        x = self._bytes(task, s)
        return self._cached(("labels", *self._key(task, s)), lambda: label_bursts(
            x, k=task.k, target_fraction=task.target_fraction,
            reference=x[: s.split] if task.threshold_from == "train" else None,
            name=f"{task.direction} bytes per {s.width:g} s bin",
        ))  # fmt: skip

    def _features(self, task: BurstTask, s: _Series, labels: BurstLabels) -> np.ndarray:
        """The feature matrix of the series (one row per bin)."""
        if task.feature_set == 4 and self.jobs is None:
            raise IosightError("feature set 4 needs the warehouse's jobs (load_jobs)")
        return self._cached(("features", *self._key(task, s), task.feature_set),
                            lambda: make_features(
            s.frame, task.direction, task.feature_set, jobs=self.jobs,
            threshold=labels.threshold, known=self.known,
        ).to_numpy(np.float64))  # fmt: skip

    def _current(self, feats: np.ndarray, labels: BurstLabels, lab: np.ndarray,
                 target: str) -> np.ndarray:  # fmt: skip
        """The label of each bin at t as the features know it: under ``logs`` what the
        logs hold of it (the first feature), else its label."""
        if self.known is None:
            return lab
        sigma = labels.sigma(feats[:, 0])
        if target == "binary":
            return (sigma > labels.k).astype(np.int64)
        return severity_classes(sigma, labels.k)

    def _started_by(self, task: BurstTask, s: _Series) -> np.ndarray | None:
        """:attr:`Dataset.known`: bytes of each target bin from the jobs started by t."""
        from iosight.timeline import bin_width_of

        ratio = task.horizon_min * 60.0 / bin_width_of(self.df)
        triples = self._cached(
            ("jobs", ratio if s.rebinned else 1, task.direction),
            lambda: self._job_bytes(s.starts, s.width, self._bytes(task, s), task.direction),
        )
        if triples is None:
            return None
        return started_by(triples, s.starts, s.width, s.step)[s.step :]

    def _known_scores(self, task: BurstTask, s: _Series, threshold: float,
                      feats: np.ndarray) -> dict:  # fmt: skip
        """Under ``logs``: the share of the test part's bytes known ``step`` bins after
        their bin's end and, set 4, the nowcast's accuracy on the test part's feature
        bins (the nowcast is set 4's last column)."""
        if self.known is None:
            return {}
        from iosight.timeline import bin_width_of

        series, step, split = s.frame, s.step, s.split
        rows = self._cached(
            ("known_rows", len(series)),
            lambda: known_rows(
                self.known, series["bin_start"].to_numpy(np.float64), bin_width_of(series)
            ),
        )
        col, n = f"{task.direction}_bytes", len(series)
        te = slice(split - step, n - step)
        out = {"known_share": known_share(rows, col, step, slice(split, n))}
        if task.feature_set == 4:
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
