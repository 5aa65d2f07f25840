"""The evaluation of burst forecasts: every model of every task trained, chosen among on
validation and scored on the test part beside the baselines (Saeedizade et al. 2023, §V,
Fig. 6-7, Table I; read as in docs/methods.md §1), with the F1 gain and skill of each
over persistence.
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import parse_list
from iosight._progress import Progress, ensure_progress
from iosight.bursts._candidates import SplitModel, TimeOfDay, burst_f1, choose, fit_candidates
from iosight.bursts._dataset import Dataset, DatasetBuilder
from iosight.bursts._task import (
    DEFAULT_HORIZONS,
    TARGETS,
    BurstTask,
    check_choice,
    check_shared,
    parallel_map,
    task_grid,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd


def scores_of(y: np.ndarray, pred: np.ndarray, prob: np.ndarray) -> dict[str, float]:
    """Test scores of predicted classes ``pred`` and burst probabilities ``prob`` against
    the classes ``y``: the burst class's F1, precision, recall and PR AUC, and F1 over
    every class (support-weighted and macro)."""
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

    ``now``: burst classes at t; ``later``: burst classes at the target bin.
    """
    on, nxt = np.asarray(now) > 0, np.asarray(later) > 0
    return burst_f1(nxt, on & nxt)


def running_jobs_share(known: np.ndarray, threshold: float, later: np.ndarray) -> float:
    """Share of the bursts at t + L (``later`` above 0) that the jobs running at t make
    on their own: the bytes those jobs put into bin t + L (``known``, in hindsight, with
    their whole futures: :attr:`Dataset.known`) pass the threshold without any job that
    starts after t. NaN without bursts.

    Not a forecast and not a bound on one: a measure of where bursts come from. Where it
    is near 0, the bursts at that lead are made by jobs not yet started at t, and a
    forecast of them is a forecast of job starts (docs/bursts.md, issue 14).

    ``threshold``: the burst threshold (bytes per bin).
    """
    burst = np.asarray(later) > 0
    if not burst.any():
        return float("nan")
    return float(np.mean(np.asarray(known)[burst] > threshold))


def _cut_text(model) -> str:
    """The decision cut(s) of a model: ``"0.31"`` or ``"calm 0.05, burst 0.6"``."""
    if isinstance(model, SplitModel):
        return f"calm {model.cuts[0]:.3g}, burst {model.cuts[1]:.3g}"
    cut = getattr(model, "cut", None)
    return "" if cut is None else f"{cut:.3g}"


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


def _test_predictions(ds: Dataset, cands: dict, chosen: str, names: Sequence[str]) -> dict:
    """(classes, burst probability) on the test part of the baselines, every model and
    the candidate ``chosen`` on validation (by name, ``chosen`` last)."""
    te = slice(ds.n_train, None)
    tod_pred, tod_prob = _time_of_day(ds)
    results = {"persistence": (ds.current[te], (ds.current[te] > 0).astype(float)),
               "time_of_day": (tod_pred[te], tod_prob[te])}  # fmt: skip
    for name in names:
        results[name] = cands[name].model.predict(ds.X[te])
    if "nowcast" in cands:
        results["nowcast"] = cands["nowcast"].model.predict(ds.X[te])
    results["chosen"] = results["persistence"] if chosen == "persistence" else \
        cands[chosen].model.predict(ds.X[te], ds.feature_start[te])  # fmt: skip
    return results


def score_task(ds: Dataset, task: BurstTask) -> list[dict]:
    """Rows of one data set ``ds`` of ``task``: baselines, every model of the task and the
    candidate chosen on validation, each with its test scores, F1 gain and skill over
    persistence (§V, docs/methods.md §1)."""
    cands = fit_candidates(ds, list(task.model), seed=task.seed, search_iter=task.search_iter,
                           cv_splits=task.cv_splits)  # fmt: skip
    chosen = choose(cands)
    y = ds.y[ds.n_train :]
    predictions = _test_predictions(ds, cands, chosen, task.model)
    scores = {name: scores_of(y, pred, prob) for name, (pred, prob) in predictions.items()}
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


def _task_columns(task: BurstTask, target: str) -> dict:
    """The columns naming a data set in the evaluation table."""
    return {"information": task.information, "direction": task.direction,
            "feature_set": task.feature_set, "mode": task.mode,
            "horizon_min": task.horizon_min, "target": target}  # fmt: skip


def _data_set_columns(ds: Dataset) -> dict:
    """The columns describing a data set's test part in the evaluation table."""
    te = slice(ds.n_train, None)
    share = float("nan") if ds.known is None else \
        running_jobs_share(ds.known[te], ds.labels.threshold, ds.y[te])  # fmt: skip
    return {"n_train": ds.n_train, "n_test": int(ds.y[te].size),
            "test_bursts": int((ds.y[te] > 0).sum()),
            "f1_no_new_bursts": no_new_bursts_f1(ds.current[te], ds.y[te]),
            "running_jobs_share": share, "k": ds.labels.k, "known_share": ds.known_share,
            **ds.nowcast}  # fmt: skip


def evaluate_tasks(
    df: pd.DataFrame,
    tasks: Sequence[BurstTask],
    targets: Sequence[str] = ("binary",),
    *,
    jobs: pd.DataFrame | None = None,
    known: pd.DataFrame | None = None,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Train and test every model of every task with each of ``targets``, beside the
    baselines (§V, Fig. 6-7, Table I), under each task's information regime against the
    same labels.

    Parameters
    ----------
    df : DataFrame
        A timeline.
    tasks : sequence of BurstTask
        The tasks (:func:`task_grid` crosses lists of settings into them).
    targets : sequence of {"binary", "severity"}
        The targets each task is evaluated for.
    jobs, known : DataFrame, optional
        :func:`iosight.bursts.load_jobs` (feature set 4) and the known-at sums
        (:func:`iosight.bursts.load_known`, the ``logs`` regime).
    workers : int
        Data sets fitted at once (threads; 0: one per core).
    scheduler : str, optional
        Address of a Dask cluster to fit the data sets on instead
        (:func:`iosight.parallel.map_items`).
    progress : Progress, optional
        Advanced by the task's models as each data set is done.

    Returns
    -------
    DataFrame
        One row per (task, target, model): the columns of :func:`evaluate_forecasts`.
    """
    import pandas as pd

    for target in targets:
        check_choice("target", target, TARGETS)
    regimes = dict.fromkeys(t.information for t in tasks)
    builders = {i: DatasetBuilder(df, jobs, i, known) for i in regimes}
    # (columns, task, data set): the columns first, as the progress reads them
    items = [(_task_columns(task, target), task, builders[task.information].dataset(task, target))
             for task in tasks for target in targets]  # fmt: skip
    prog = ensure_progress(progress)
    prog.start(sum(len(task.model) for _, task, _ in items), "burst models")
    results = parallel_map(lambda item: score_task(item[2], item[1]), items, prog,
                           workers=workers, scheduler=scheduler,
                           weight=lambda item: len(item[1].model))  # fmt: skip
    prog.finish()
    rows = []
    for (spec, _, ds), task_rows in zip(items, results, strict=True):
        base = {**spec, **_data_set_columns(ds)}
        rows += [{**base, **r} for r in task_rows]
    return pd.DataFrame(rows)


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
    information: str | list[str] = "live",
    jobs: pd.DataFrame | None = None,
    known: pd.DataFrame | None = None,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
    **settings,
) -> pd.DataFrame:
    """Train and test every model on every task of the lists crossed, beside the baselines
    (:func:`evaluate_tasks` on :func:`task_grid`).

    Parameters
    ----------
    df : DataFrame
        A timeline.
    directions, models, feature_sets, modes, horizons, targets, information
        Lists (or comma-separated strings) to cross: ``models`` ``"all"`` is logreg,
        naive_bayes, tree, forest, xgboost; horizons in minutes (multiples of the bin
        width); modes ``interval`` and/or ``lead``; targets ``binary`` and/or
        ``severity``; information ``live`` (the system's bytes up to t) and/or ``logs``
        (only the logs landed by t and the scheduler's view of the running jobs; needs
        ``known``, lead mode only).
    k : dict, optional
        Fixed thresholds per direction (stdevs); else chosen for ``target_fraction``.
    jobs, known, workers, scheduler, progress
        As :func:`evaluate_tasks`.
    **settings
        The tasks' other settings (:class:`BurstTask` fields: ``target_fraction``,
        ``train_fraction``, ``threshold_from``, ``val_fraction``, ``search_iter``,
        ``cv_splits``, ``seed``).

    Returns
    -------
    DataFrame
        One row per (information, direction, feature_set, mode, horizon_min, target,
        model) with f1, f1_gain and skill (over persistence: ``(F1 - F1_p) / (1 - F1_p)``),
        precision, recall, pr_auc (burst class), f1_weighted (support-weighted over every
        class: the paper's framing) and f1_macro, val_f1, the tuned cut, n_train, n_test,
        test_bursts, f1_no_new_bursts (:func:`no_new_bursts_f1` on the test part),
        running_jobs_share (:func:`running_jobs_share`; NaN without ``jobs`` or when the
        timeline is not their totals spread over their runs), k, the params (JSON),
        ``known_share`` (1 under live; under logs the share of the test part's bytes known
        one lead after their bin's end) and under logs with set 4 the nowcast's
        ``nowcast_corr``, ``nowcast_error`` and ``nowcast_f1``. Under logs, persistence is
        the known part of the current bin and model ``nowcast`` (set 4) is persistence of
        the nowcast. Model ``chosen`` repeats the candidate picked on validation (its
        name in ``chosen``).
    """
    check_shared(settings)
    tasks = task_grid(BurstTask(model=models, **settings), information=information,
                      directions=directions, feature_sets=feature_sets, modes=modes,
                      horizons=horizons, k=k)  # fmt: skip
    return evaluate_tasks(df, tasks, parse_list(targets, name="targets"), jobs=jobs,
                          known=known, workers=workers, scheduler=scheduler,
                          progress=progress)  # fmt: skip
