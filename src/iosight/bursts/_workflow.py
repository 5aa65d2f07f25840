"""The ``bursts train`` workflow: evaluate every model beside the baselines, keep the table,
and save the best deployable forecaster per direction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from iosight._errors import parse_list
from iosight._progress import Progress
from iosight.bursts._forecast import BASELINES, DEFAULT_HORIZONS, evaluate_forecasts
from iosight.bursts._forecaster import Forecaster, load_forecaster, train_forecaster

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

EVALUATION_TABLE = "burst_evaluation"


@dataclass(frozen=True)
class TrainResult:
    """The evaluation table, the names of the forecasters saved and, per saved
    forecaster, the candidate chosen on validation for each lead."""

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
    target_fraction: float = 0.01,
    threshold_from: str = "train",
    search_iter: int = 0,
    cv_splits: int = 3,
    seed: int = 0,
    information: str | list[str] = "live",
    save: bool = True,
    n_jobs: int = -1,
    progress: Progress | None = None,
) -> TrainResult:
    """Evaluate (:func:`evaluate_forecasts`), append the rows to the ``burst_evaluation``
    table, and save per direction and information regime a forecaster whose candidates
    are the model with the best mean validation F1 and the baselines, chosen per lead on
    validation (:func:`train_forecaster`): ``bursts-<direction>`` (leads 1-24) when
    ``lead`` is among the modes, else ``bursts-<direction>-interval`` for the shortest
    horizon; ``-logs`` appended under the ``logs`` regime (its known-at sums computed
    from the warehouse's jobs, :func:`iosight.bursts.load_known`).
    """
    import pandas as pd
    import pyarrow as pa

    from iosight.bursts._jobstate import load_jobs
    from iosight.bursts._known import load_known
    from iosight.timeline import load_timeline

    df = load_timeline(warehouse)
    fs_list = parse_list(feature_sets, int, "feature_sets")
    dirs, mode_list = parse_list(directions, name="directions"), parse_list(modes, name="modes")
    horizon_list = parse_list(horizons, float, "horizons")
    target_list = parse_list(targets, name="targets")
    regimes = parse_list(information, name="information")
    jobs = load_jobs(warehouse) if 4 in fs_list else None
    known = load_known(warehouse) if "logs" in regimes else None
    ev = evaluate_forecasts(
        df, directions=dirs, models=models, feature_sets=fs_list, modes=mode_list,
        horizons=horizon_list, targets=target_list, k=k, target_fraction=target_fraction,
        threshold_from=threshold_from, search_iter=search_iter, cv_splits=cv_splits,
        seed=seed, jobs=jobs, information=regimes, known=known, n_jobs=n_jobs,
        progress=progress,
    )  # fmt: skip
    ev.insert(0, "trained_at", pd.Timestamp.now(tz="UTC").isoformat())
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
    saved, chosen = [], {}
    fs = fs_list[-1]
    mode = "lead" if "lead" in mode_list else "interval"
    for regime, d in ((r, d) for r in regimes for d in dirs):
        best = _best_model(ev[ev["feature_set"] == fs], d, mode, regime)
        if not save or best is None:
            continue
        name = f"bursts-{d}" + ("" if mode == "lead" else "-interval")
        fc = train_forecaster(
            df, direction=d, model=best, feature_set=fs, mode=mode,
            horizon_min=min(horizon_list),
            name=name + ("-logs" if regime == "logs" else ""),
            k=(k or {}).get(d), target_fraction=target_fraction, search_iter=search_iter,
            cv_splits=cv_splits, seed=seed, jobs=jobs, information=regime, known=known,
            n_jobs=n_jobs, progress=progress, severity="severity" in target_list,
        )  # fmt: skip
        fc.save(warehouse)
        saved.append(fc.name)
        chosen[fc.name] = fc.metadata["chosen"]
    return TrainResult(ev, saved, chosen)


def load_evaluation(warehouse: Warehouse) -> pd.DataFrame:
    """The stored ``burst_evaluation`` table (an error pointing to ``bursts train``)."""
    warehouse.require(EVALUATION_TABLE, "train first: 'iosight bursts train --warehouse WH'")
    return warehouse.table(EVALUATION_TABLE).to_pandas()


def refit_forecaster(warehouse: Warehouse, name: str, *, n_jobs: int = -1) -> Forecaster:
    """The saved forecaster ``name`` trained again, with its own settings, on the timeline
    (and, under ``logs``, the known-at sums) the warehouse holds now, and saved in its
    place (an atomic save: a reader sees the old model or the new one). ``iosight live``
    refits on a schedule this way while it keeps answering."""
    from iosight.bursts._jobstate import load_jobs
    from iosight.bursts._known import load_known
    from iosight.timeline import load_timeline

    old = load_forecaster(warehouse, name)
    options = old.settings.options()
    jobs = load_jobs(warehouse) if options["feature_set"] == 4 else None
    known = load_known(warehouse) if options["information"] == "logs" else None
    fc = train_forecaster(load_timeline(warehouse), **options, jobs=jobs, known=known,
                          n_jobs=n_jobs)  # fmt: skip
    fc.save(warehouse)
    return fc
