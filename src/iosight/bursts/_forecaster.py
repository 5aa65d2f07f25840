"""Trained burst forecasters: training for deployment, saving, loading, predicting.

A forecaster lives in ``<warehouse>/models/<name>/`` as a model folder of
:mod:`iosight._modelio`: ``metadata.json`` (format version, settings, direction, mode,
feature set and names, base bin width, leads, thresholds, training window,
hyper-parameters, test metrics, library versions), ``model.json`` (the per-lead models as
data), ``estimators.skops`` (the scikit-learn pipelines) and ``xgboost-<i>.ubj`` (the
XGBoost models). Nothing in it is code: loading runs none, and a pickle is refused.
Loading checks the metadata; predicting refuses a timeline of another bin width, or a
caller expecting another feature set.
"""

from __future__ import annotations

import math
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError
from iosight._modelio import ModelKind, Prediction, load_model, save_model
from iosight._progress import Progress, ensure_progress
from iosight.bursts._candidates import (
    BASELINES,
    Candidate,
    FittedModel,
    Persistence,
    SplitModel,
    TimeOfDay,
    choose,
    fit_candidates,
    fit_model,
)
from iosight.bursts._dataset import Dataset, DatasetBuilder
from iosight.bursts._evaluate import scores_of
from iosight.bursts._features import feature_names, make_features
from iosight.bursts._labels import check_finite
from iosight.bursts._task import (
    MODEL_NAME,
    BurstTask,
    check_model_name,
    make_task,
    parallel_map,
)

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse


def model_dir(warehouse: Warehouse, name: str) -> Path:
    """``models/<name>/`` of ``warehouse`` (a ``name`` checked by :func:`check_model_name`)."""
    check_model_name(name)
    return warehouse.path / "models" / name


@dataclass(frozen=True)
class BurstPrediction(Prediction):
    """:meth:`Forecaster.predict`'s result: ``table`` has one row per lead with columns
    ``lead`` (1..24 in lead mode), ``bin_start`` (epoch s of the predicted bin), ``burst``
    (bool), ``probability`` (of a burst), ``severity`` (0-5, 0 exactly when ``burst`` is
    false) and ``time`` (UTC timestamp); ``last_bin`` is the start (epoch s) of the last
    bin the features used; ``model`` the forecaster's name."""

    last_bin: float = math.nan


def _kind() -> ModelKind:
    """What a forecaster's folder may hold (imports XGBoost only when saving/loading)."""
    from iosight.bursts._xgb import DenseLabelXGBClassifier

    return ModelKind(
        "burst forecaster",
        "iosight bursts train",
        types=(FittedModel, SplitModel, Persistence, TimeOfDay, DenseLabelXGBClassifier),
        trusted=("iosight.bursts._models.signed_log1p",),
    )


def _versions() -> dict[str, str]:
    import pandas
    import sklearn
    import xgboost

    import iosight

    return {"iosight": iosight.__version__, "scikit-learn": sklearn.__version__,
            "xgboost": xgboost.__version__, "numpy": np.__version__,
            "pandas": pandas.__version__, "python": platform.python_version()}  # fmt: skip


def describe_choice(chosen: dict[str, str]) -> str:
    """``"1-6: xgboost; 7-24: persistence"`` from ``chosen``: ``{lead: candidate}``, the
    lead as a string (as saved metadata holds it)."""
    parts, run = [], None
    for lead, name in sorted(((int(k), v) for k, v in chosen.items())):
        if run and run[2] == name and run[1] == lead - 1:
            run[1] = lead
        else:
            run = [lead, lead, name]
            parts.append(run)
    return "; ".join(f"{a}-{b}: {n}" if a != b else f"{a}: {n}" for a, b, n in parts)


@dataclass
class Forecaster:
    """Binary and severity models for each lead of one direction (or one interval horizon).

    ``settings`` say what was trained and how; ``metadata`` holds everything needed to
    check and reproduce the predictions; ``binary`` and ``severity`` map each lead L to
    its model (``binary[L]``: burst or not; ``severity[L]``: the 0-5 class; interval
    mode: L = 1, the next h-minute bin). The model contract:
    :meth:`fit` (a classmethod), :meth:`predict`, :meth:`save`, :meth:`load` (a
    classmethod), as :class:`iosight.perfmodel.WriteModel` has.
    """

    settings: BurstTask
    metadata: dict
    binary: dict[int, FittedModel | SplitModel | Persistence] = field(default_factory=dict)
    severity: dict[int, FittedModel | Persistence] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The forecaster's name (its folder under ``models/``)."""
        return self.metadata["name"]

    @classmethod
    def fit(
        cls,
        timeline: pd.DataFrame,
        settings: BurstTask | None = None,
        *,
        jobs: pd.DataFrame | None = None,
        known: pd.DataFrame | None = None,
        workers: int = 0,
        scheduler: str | None = None,
        progress: Progress | None = None,
    ) -> Forecaster:
        """A forecaster of the task ``settings`` (default: :class:`BurstTask`'s defaults)
        trained on ``timeline`` (§V).

        Lead mode fits, for each lead 1..``max_lead`` on the base bins, every candidate
        model on the training part before its validation slice, tunes each binary model's
        cut on that slice and keeps, per lead, the baseline with the best F1 on the
        slice's compare half (persistence, time of day, under ``logs`` the nowcast) unless
        a model beat it robustly there (:func:`iosight.bursts.choose`), so the forecaster
        is never worse there than the best baseline of its regime
        (``metadata["chosen"]`` names it per lead). Interval mode does the same for the
        next ``horizon_min`` bin. ``severity=False`` skips the severity models (the
        severity of a predicted burst is then the current bin's class, at least 1). Test
        scores of the chosen candidate and of persistence are stored in the metadata.

        Parameters
        ----------
        timeline : DataFrame
            A timeline (:func:`iosight.timeline.load_timeline`).
        settings : BurstTask, optional
            What to forecast and how.
        jobs : DataFrame, optional
            :func:`iosight.bursts.load_jobs`, needed by feature set 4.
        known : DataFrame, optional
            The known-at sums (:func:`iosight.bursts.load_known`), needed under ``logs``
            (every feature, persistence's too, is then what the logs held at t).
        workers : int
            Leads fitted at once (threads; 0: one per core).
        scheduler : str, optional
            Address of a Dask cluster to fit the leads on instead
            (:func:`iosight.parallel.map_items`).
        progress : Progress, optional
            Advanced as each lead is fitted.
        """
        from iosight.timeline import bin_width_of

        task = settings or BurstTask()
        width = bin_width_of(timeline)
        builder = DatasetBuilder(timeline, jobs, task.information, known)
        items = [_lead_data(builder, task.at_lead(lead, width), lead, task.severity)
                 for lead in task.leads]  # fmt: skip
        prog = ensure_progress(progress)
        prog.start(len(items), f"training {','.join(task.model)} ({task.direction}, {task.mode})")
        fits = parallel_map(lambda item: _fit_lead(item, task), items, prog, workers=workers,
                            scheduler=scheduler)  # fmt: skip
        prog.finish()
        fc = cls(task, _metadata(task, timeline, items, fits))
        for item, lead_fit in zip(items, fits, strict=True):
            fc.binary[item["lead"]] = lead_fit.candidates[lead_fit.best].model
            fc.severity[item["lead"]] = lead_fit.severity
        return fc

    def describe(self) -> str:
        """What predicts: per lead, the candidate chosen on validation (the best baseline
        unless a model beat it), not the candidates that were tried."""
        md = self.metadata
        if md["mode"] == "interval":
            return f"{md['chosen']['1']} (interval mode, the next {md['horizon_min']:g} min)"
        return f"{describe_choice(md['chosen'])} (lead mode, per lead)"

    def check_compatible(self, *, bin_width: float, feature_set: int | None = None) -> None:
        """Refuse a timeline of another bin width, or another expected feature set:
        ``bin_width`` is the timeline's (s); ``feature_set`` the set the caller expects
        (None: any)."""
        md = self.metadata
        if abs(bin_width - md["bin_width"]) > 1e-9:
            raise IosightError(
                f"model {md['name']!r} was trained on {md['bin_width']:g} s bins but the "
                f"timeline has {bin_width:g} s bins; rebuild the timeline with "
                f"--bin {md['bin_width']:g} or train a new model"
            )
        if feature_set is not None and feature_set != md["feature_set"]:
            raise IosightError(
                f"model {md['name']!r} uses feature set {md['feature_set']}, not {feature_set}; "
                "train a model with that feature set"
            )

    @property
    def information(self) -> str:
        """The regime its features were made under (``live`` for forecasters saved before
        regimes existed)."""
        return self.metadata.get("information", "live")

    def features(
        self, df: pd.DataFrame, jobs: pd.DataFrame | None = None, known: pd.DataFrame | None = None
    ) -> np.ndarray:
        """The model's feature matrix of the timeline frame ``df`` (one row per bin); set 4
        needs the warehouse's ``jobs`` (:func:`iosight.bursts.load_jobs`), regime ``logs``
        its ``known`` known-at sums (:func:`iosight.bursts.load_known`)."""
        md = self.metadata
        thr = md["thresholds"].get("threshold")  # set 4 only
        if self.information == "logs" and known is None:
            raise IosightError(f"model {md['name']!r} needs the known-at timeline (logs)")
        feats = make_features(df, md["direction"], md["feature_set"], jobs=jobs, threshold=thr,
                              known=known if self.information == "logs" else None)  # fmt: skip
        return feats.to_numpy(np.float64)

    def predict(
        self,
        df: pd.DataFrame,
        at: float | None = None,
        *,
        feature_set: int | None = None,
        jobs: pd.DataFrame | None = None,
        known: pd.DataFrame | None = None,
    ) -> BurstPrediction:
        """Forecast from a timeline frame using the bins up to ``at`` (default: all) and,
        for feature set 4, the jobs started before the end of the last bin used; under
        ``logs``, only the ``known`` rows known by the end of that bin
        (:class:`BurstPrediction` says the columns). ``df``: the timeline frame;
        ``feature_set``: as in :meth:`check_compatible`; ``jobs``: as in :meth:`features`."""
        import pandas as pd

        from iosight.timeline import VALUE_COLUMNS, bin_width_of, rebin

        md = self.metadata
        width = bin_width_of(df)
        self.check_compatible(bin_width=width, feature_set=feature_set)
        starts = df["bin_start"].to_numpy(np.float64)
        if at is not None:
            if at < starts[0] or at >= starts[-1] + width:
                raise IosightError(
                    f"time {at:.0f} is outside the timeline "
                    f"[{starts[0]:.0f}, {starts[-1] + width:.0f})"
                )
            df = df.iloc[: int(np.searchsorted(starts, at, side="right"))]
        cols = [c for c in (*VALUE_COLUMNS, "active_jobs") if c in df]
        check_finite(df[cols].to_numpy(np.float64), "the timeline")  # as analyze refuses it
        series, step_s = df, width
        if md["mode"] == "interval":
            step_s = md["horizon_min"] * 60.0
            series = rebin(df, step_s)
            last = float(df["bin_start"].iloc[-1])
            complete = np.isclose(last + width, (np.floor(last / step_s) + 1) * step_s)
            if not complete and len(series) > 1:
                series = series.iloc[:-1]  # the h-minute bin holding `at` is not over yet
        X = self.features(series, jobs, known)[-1:]
        t = float(series["bin_start"].iloc[-1])
        out = self.forecast(X, np.array([t]), step_s).drop(columns="at")
        out["time"] = pd.to_datetime(out["bin_start"], unit="s", utc=True)
        return BurstPrediction(self.name, out, t)

    def forecast(self, X: np.ndarray, at: np.ndarray, step_s: float) -> pd.DataFrame:
        """Every lead's forecast from each row of the feature matrix ``X`` (row i of the
        bin starting ``at[i]``, bins of ``step_s`` seconds): columns ``at``, ``lead``,
        ``bin_start``, ``burst``, ``probability``, ``severity`` (0-5, 0 exactly when not a
        burst), by lead, then ``at``. Many rows at once: follow mode forecasts each bin it
        passed."""
        import pandas as pd

        parts = []
        for lead in sorted(self.binary):
            pred, prob = self.binary[lead].predict(X, at)
            burst = np.asarray(pred) > 0
            sev = (np.asarray(self.severity[lead].predict(X)[0], np.int64)
                   if lead in self.severity else np.zeros(len(X), np.int64))  # fmt: skip
            parts.append(pd.DataFrame({
                "at": at, "lead": lead, "bin_start": at + lead * step_s, "burst": burst,
                "probability": np.asarray(prob, np.float64),
                "severity": np.where(burst, np.maximum(sev, 1), 0),
            }))  # fmt: skip
        return pd.concat(parts, ignore_index=True)

    def predict_next(
        self,
        warehouse: Warehouse,
        at: float | None = None,
        *,
        feature_set: int | None = None,
        running: str = "auto",
    ) -> BurstPrediction:
        """:meth:`predict` on the warehouse's timeline (and jobs, for feature set 4): the
        bins after ``at`` (epoch s; None = the timeline's last bin). Set 4: ``running``
        says where the running jobs come from (:func:`iosight.bursts.set4_jobs`: ``slurm``,
        ``logs``, or ``auto``, Slurm's snapshots where the warehouse has them), and the
        table's column ``running_jobs`` which was used. ``warehouse``: the warehouse read;
        ``feature_set``: as in :meth:`check_compatible`."""
        from iosight.bursts._known import load_known
        from iosight.bursts._scheduler import set4_jobs
        from iosight.timeline import load_timeline

        jobs, source = None, None
        if self.metadata["feature_set"] == 4:
            jobs, source = set4_jobs(warehouse, running)
        known = load_known(warehouse) if self.information == "logs" else None
        pred = self.predict(load_timeline(warehouse), at, feature_set=feature_set, jobs=jobs,
                            known=known)  # fmt: skip
        if source is not None:
            pred.table["running_jobs"] = source
        return pred

    def save(self, warehouse: Warehouse) -> Path:
        """Write the model folder ``models/<name>/`` of ``warehouse`` atomically
        (:mod:`iosight._modelio`: JSON, skops and XGBoost's UBJ; no pickle)."""
        metadata = {**self.metadata, "settings": self.settings.options()}
        fitted = {"binary": self.binary, "severity": self.severity}
        return save_model(model_dir(warehouse, self.name), _kind(), metadata, fitted)

    @classmethod
    def load(cls, warehouse: Warehouse, name: str = "bursts-write") -> Forecaster:
        """The forecaster saved as ``name`` in ``warehouse`` (:func:`load_forecaster`)."""
        return load_forecaster(warehouse, name)


def list_forecasters(warehouse: Warehouse) -> list[str]:
    """Names of the forecasters saved in ``warehouse`` (temporary folders of a save in
    progress start with '.' and are no model names)."""
    found = (warehouse.path / "models").glob("*/metadata.json")
    return sorted(p.parent.name for p in found if MODEL_NAME.fullmatch(p.parent.name))


def load_forecaster(warehouse: Warehouse, name: str = "bursts-write") -> Forecaster:
    """Load the forecaster saved as ``name`` in ``warehouse`` (see :meth:`Forecaster.save`):
    a folder of data only; a
    pickle (an older iosight's ``model.joblib``, or one placed there) is refused unread."""
    path = model_dir(warehouse, name)
    if not path.exists() and not (path.parent / f".{name}.old").is_dir():
        known = ", ".join(list_forecasters(warehouse)) or "none"
        raise IosightError(
            f"no model {name!r} in {warehouse.path / 'models'} (models: {known}); "
            "train one with 'iosight bursts train'"
        )
    md, fitted = load_model(path, _kind())
    settings = _settings(md, path)
    md = {k: v for k, v in md.items() if k != "settings"}
    return Forecaster(settings, md, fitted["binary"], fitted["severity"])


def _settings(md: dict, path: Path) -> BurstTask:
    """The saved settings, checked again (a hand-edited file gets one line)."""
    try:
        return BurstTask(**md["settings"])
    except (KeyError, TypeError) as err:
        raise IosightError(f"{path / 'metadata.json'} has no valid settings ({err})") from None


def train_forecaster(
    df: pd.DataFrame,
    task: BurstTask | None = None,
    *,
    jobs: pd.DataFrame | None = None,
    known: pd.DataFrame | None = None,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
    **settings,
) -> Forecaster:
    """Train a deployable forecaster on the timeline ``df``: :meth:`Forecaster.fit` of
    ``task`` with ``settings`` changed, or of a task of ``settings`` (:class:`BurstTask`
    fields as keywords: ``direction``, ``model``, ``max_lead``, ...). ``jobs``, ``known``,
    ``workers``, ``scheduler`` and ``progress`` are :meth:`Forecaster.fit`'s."""
    return Forecaster.fit(df, make_task(task, settings), jobs=jobs, known=known,
                          workers=workers, scheduler=scheduler, progress=progress)  # fmt: skip


def _lead_data(builder: DatasetBuilder, task: BurstTask, lead: int, severity: bool) -> dict:
    """The binary (and with ``severity``, the severity) data set of one ``lead``."""
    return {"lead": lead, "binary": builder.dataset(task, "binary"),
            "severity": builder.dataset(task, "severity") if severity else None}  # fmt: skip


@dataclass(frozen=True)
class _LeadFit:
    """One lead fitted: the candidate chosen on validation, every candidate, the test
    scores of the chosen one and of persistence, and the severity model."""

    best: str
    candidates: dict[str, Candidate]
    scores: dict[str, dict[str, float]]
    severity: FittedModel | Persistence


def _fit_lead(item: dict, task: BurstTask) -> _LeadFit:
    """Fit, choose and score the candidates of one lead (:func:`_lead_data`'s ``item``)."""
    ds = item["binary"]
    cands = fit_candidates(ds, list(task.model), seed=task.seed, search_iter=task.search_iter,
                           cv_splits=task.cv_splits)  # fmt: skip
    best = choose(cands)
    te = slice(ds.n_train, None)
    scores = {n: scores_of(ds.y[te], *cands[n].model.predict(ds.X[te], ds.feature_start[te]))
              for n in {best, "persistence"}}  # fmt: skip
    return _LeadFit(best, cands, scores, _severity_model(ds, item["severity"], best,
                                                         cands[best].model, task.seed))  # fmt: skip


def _severity_model(ds: Dataset, sv: Dataset | None, best: str, model, seed: int):
    """The severity model of a lead: the kind of the chosen binary ``model`` fitted on
    the severity data set ``sv`` where it is a model and ``sv`` has two classes or more,
    else persistence of the current bin's class."""
    if sv is not None:
        rows = slice(0, sv.n_fit)
        if best not in BASELINES and np.unique(sv.y[rows]).size >= 2:
            return fit_model(best, sv.X[rows], sv.y[rows], seed=seed, params=model.params)
    return Persistence.of(ds.labels, severity=True, column=ds.nowcast_column or 0)


def _lead_metadata(items: list[dict], fits: list[_LeadFit]) -> dict:
    """Per lead (a string): the candidate chosen, every candidate's validation F1, and
    the test scores of the chosen one beside persistence's F1."""
    chosen, val, metrics = {}, {}, {}
    for item, lf in zip(items, fits, strict=True):
        lead = str(item["lead"])
        chosen[lead] = lf.best
        val[lead] = {n: c.val_f1 for n, c in lf.candidates.items()}
        metrics[lead] = {
            **{m: (None if np.isnan(v) else v) for m, v in lf.scores[lf.best].items()},
            "persistence_f1": lf.scores["persistence"]["f1"],
        }
    return {"chosen": chosen, "val_f1": val, "test_metrics": metrics}


def _metadata(task: BurstTask, df: pd.DataFrame, items: list[dict], fits: list[_LeadFit]) -> dict:
    """What a forecaster of ``task`` trained on ``df`` saves beside its models."""
    from iosight.timeline import bin_width_of

    width = bin_width_of(df)
    ds = items[-1]["binary"]
    labels = ds.labels
    starts = df["bin_start"].to_numpy(np.float64)
    per_lead = _lead_metadata(items, fits)
    return {
        "name": task.name,
        "direction": task.direction,
        "model": ",".join(task.model),
        "chosen": per_lead["chosen"],
        "mode": task.mode,
        "feature_set": task.feature_set,
        "information": task.information,
        "features": feature_names(task.direction, task.feature_set, task.information),
        "bin_width": width,
        "horizon_min": task.horizon_min if task.mode == "interval" else width / 60.0,
        "leads": task.leads,
        "thresholds": {
            "mean": labels.mean,
            "std": labels.std,
            "k": labels.k,
            "threshold": labels.threshold,
            "severity_edges_sigma": [labels.k + i * (10 - labels.k) / 5 for i in range(6)],
        },
        "target_fraction": task.target_fraction,
        "train_fraction": task.train_fraction,
        "val_fraction": task.val_fraction,
        "training_window": [ds.train_window[0], ds.train_window[1]],
        "timeline_window": [float(starts[0]), float(starts[-1])],
        "params": {n: c.model.params for n, c in fits[0].candidates.items()},
        "seed": task.seed,
        "val_f1": per_lead["val_f1"],
        "test_metrics": per_lead["test_metrics"],
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": _versions(),
    }
