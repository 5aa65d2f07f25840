"""The ``bursts train`` workflow: evaluate every model beside the baselines, keep the table,
and save the best deployable forecaster per direction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from iosight._errors import parse_list
from iosight._progress import Progress
from iosight.bursts._candidates import BASELINES
from iosight.bursts._evaluate import evaluate_tasks
from iosight.bursts._forecaster import Forecaster, load_forecaster
from iosight.bursts._task import DEFAULT_HORIZONS, BurstTask, check_shared, task_grid

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

EVALUATION_TABLE = "burst_evaluation"


@dataclass(frozen=True)
class TrainResult:
    """The evaluation table, the names of the forecasters saved and, per saved
    forecaster, the candidate chosen on validation for each lead.

    ``evaluation``: the evaluation rows appended; ``saved``: the forecasters saved; ``chosen``:
    per saved forecaster, lead to the candidate chosen.
    """

    evaluation: pd.DataFrame
    saved: list[str]
    chosen: dict[str, dict[str, str]] = field(default_factory=dict)


def _best_model(ev: pd.DataFrame, direction: str, mode: str, information: str) -> str | None:
    """The model with the best mean *validation* F1 over the tasks (test rows never pick)."""
    rows = ev[(ev["direction"] == direction) & (ev["mode"] == mode) & (ev["target"] == "binary")
              & (ev["information"] == information)]  # fmt: skip
    rows = rows[~rows["model"].isin((*BASELINES, "chosen"))]
    if rows.empty:
        return None
    return str(rows.groupby("model")["val_f1"].mean().sort_values(kind="mergesort").index[-1])


def train_bursts(
    warehouse: Warehouse,
    *,
    directions: str | list[str] = ("read", "write"),
    models: str | list[str] = "all",
    feature_sets: int | list[int] = 4,
    modes: str | list[str] = "lead",
    horizons: float | list[float] = DEFAULT_HORIZONS,
    targets: str | list[str] = "binary",
    k: dict[str, float] | None = None,
    information: str | list[str] = "live",
    save: bool = True,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
    **settings,
) -> TrainResult:
    """Evaluate the tasks of the warehouse's timeline (:func:`evaluate_tasks` on
    :func:`task_grid`), append the rows to the ``burst_evaluation`` table, and save per
    direction and information regime a forecaster whose candidates are the model with
    the best mean validation F1 and the baselines, chosen per lead on validation
    (:meth:`Forecaster.fit`): ``bursts-<direction>`` (leads 1..``max_lead``) when
    ``lead`` is among the modes, else ``bursts-<direction>-interval`` for the shortest
    horizon; ``-logs`` appended under the ``logs`` regime (its known-at sums computed
    from the warehouse's jobs, :func:`iosight.bursts.load_known`).

    Parameters
    ----------
    warehouse : Warehouse
        Opened for writing.
    directions, models, feature_sets, modes, horizons, targets, k, information
        As :func:`evaluate_forecasts`; the forecasters use the last feature set, and fit
        severity models when ``severity`` is among the targets.
    save : bool
        Save the forecasters (else only evaluate).
    workers : int
        Data sets (or leads) fitted at once (threads; 0: one per core).
    scheduler : str, optional
        Address of a Dask cluster to fit them on instead.
    progress : Progress, optional
        Advanced as models are fitted.
    **settings
        The other :class:`BurstTask` settings, of the evaluation and the forecasters
        alike: ``target_fraction``, ``train_fraction``, ``threshold_from`` (the
        evaluation's; a forecaster's thresholds come from its training part),
        ``val_fraction``, ``max_lead``, ``search_iter``, ``cv_splits``, ``seed``.
    """
    import pandas as pd

    from iosight.bursts._jobstate import load_jobs
    from iosight.bursts._known import load_known
    from iosight.timeline import load_timeline

    check_shared(settings, also=("name", "severity"))
    tasks = task_grid(BurstTask(model=models, **settings), information=information,
                      directions=directions, feature_sets=feature_sets, modes=modes,
                      horizons=horizons, k=k)  # fmt: skip
    df = load_timeline(warehouse)
    jobs = load_jobs(warehouse) if any(t.feature_set == 4 for t in tasks) else None
    known = load_known(warehouse) if any(t.information == "logs" for t in tasks) else None
    target_list = parse_list(targets, name="targets")
    where = {"workers": workers, "scheduler": scheduler}
    ev = evaluate_tasks(df, tasks, target_list, jobs=jobs, known=known, progress=progress,
                        **where)  # fmt: skip
    ev.insert(0, "trained_at", pd.Timestamp.now(tz="UTC").isoformat())
    _store_evaluation(warehouse, ev)
    chosen = {}
    for task in _forecaster_tasks(ev, tasks, "severity" in target_list) if save else []:
        fc = Forecaster.fit(df, task, jobs=jobs, known=known, progress=progress, **where)
        fc.save(warehouse)
        chosen[fc.name] = fc.metadata["chosen"]
    return TrainResult(ev, list(chosen), chosen)


def _store_evaluation(warehouse: Warehouse, ev: pd.DataFrame) -> None:
    """Append ``ev`` to the ``burst_evaluation`` table, its rows replacing the stored
    rows of the same tasks and models."""
    import pandas as pd
    import pyarrow as pa

    if warehouse.has_table(EVALUATION_TABLE):
        old = warehouse.table(EVALUATION_TABLE).to_pandas()
        if "information" not in old:  # rows kept before regimes existed
            old["information"] = "live"
        keys = ["information", "direction", "feature_set", "mode", "horizon_min", "target",
                "model"]  # fmt: skip
        old = old.merge(ev[keys], on=keys, how="left", indicator=True)
        old = old[old["_merge"] == "left_only"].drop(columns="_merge")
        ev_all = pd.concat([old, ev], ignore_index=True)
        for col in ev_all.select_dtypes("object").columns:  # e.g. a cut once a number
            ev_all[col] = [None if v is None or v != v else str(v) for v in ev_all[col]]
    else:
        ev_all = ev
    warehouse.write_table(EVALUATION_TABLE, pa.Table.from_pandas(ev_all, preserve_index=False))


def _forecaster_tasks(ev: pd.DataFrame, tasks: list[BurstTask], severity: bool) -> list[BurstTask]:
    """The task of each forecaster to save, per regime and direction: the last feature
    set, lead mode if evaluated (else the shortest interval), the model with the best mean
    validation F1 (no forecaster where none was evaluated), thresholds from the training
    part."""
    last = tasks[-1]
    mode = "lead" if any(t.mode == "lead" for t in tasks) else "interval"
    out = []
    for regime, d in dict.fromkeys((t.information, t.direction) for t in tasks):
        best = _best_model(ev[ev["feature_set"] == last.feature_set], d, mode, regime)
        if best is None:
            continue
        name = f"bursts-{d}" + ("" if mode == "lead" else "-interval")
        one = next(t for t in tasks if (t.information, t.direction) == (regime, d))
        out.append(last.replace(
            direction=d, model=best, mode=mode, horizon_min=min(t.horizon_min for t in tasks),
            name=name + ("-logs" if regime == "logs" else ""), k=one.k, information=regime,
            severity=severity, threshold_from="train",
        ))  # fmt: skip
    return out


def load_evaluation(warehouse: Warehouse) -> pd.DataFrame:
    """The stored ``burst_evaluation`` table (an error pointing to ``bursts train``)."""
    warehouse.require(EVALUATION_TABLE, "train first: 'iosight bursts train --warehouse WH'")
    return warehouse.table(EVALUATION_TABLE).to_pandas()


def refit_forecaster(
    warehouse: Warehouse, name: str, *, workers: int = 0, scheduler: str | None = None
) -> Forecaster:
    """The saved forecaster ``name`` trained again, with its own settings, on the timeline
    (and, under ``logs``, the known-at sums) the warehouse holds now, and saved in its
    place (an atomic save: a reader sees the old model or the new one). ``iosight live``
    refits on a schedule this way while it keeps answering.

    ``warehouse``: the warehouse holding the forecaster and the timeline; ``workers`` and
    ``scheduler`` are :meth:`Forecaster.fit`'s.
    """
    from iosight.bursts._jobstate import load_jobs
    from iosight.bursts._known import load_known
    from iosight.timeline import load_timeline

    task = load_forecaster(warehouse, name).settings
    jobs = load_jobs(warehouse) if task.feature_set == 4 else None
    known = load_known(warehouse) if task.information == "logs" else None
    fc = Forecaster.fit(load_timeline(warehouse), task, jobs=jobs, known=known,
                        workers=workers, scheduler=scheduler)  # fmt: skip
    fc.save(warehouse)
    return fc
