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

import dataclasses
import math
import platform
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param, check_seed
from iosight._modelio import ModelKind, Prediction, load_model, save_model
from iosight._progress import Progress, ensure_progress
from iosight.bursts._analysis import check_direction
from iosight.bursts._features import check_feature_set, feature_names, make_features
from iosight.bursts._forecast import (
    BASELINES,
    VAL_FRACTION,
    Dataset,
    FittedModel,
    Persistence,
    SplitModel,
    TimeOfDay,
    _Builder,
    _metrics,
    choose,
    fit_candidates,
    fit_model,
    parallel_map,
)
from iosight.bursts._known import check_information
from iosight.bursts._labels import check_finite
from iosight.bursts._models import check_search, model_names

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

MAX_LEAD = 24  # two hours of 5-minute bins (§V-B)
_MODEL_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def check_model_name(name: str) -> None:
    """A name is one short path component (letters, digits, ``._-``), so no name escapes
    ``models/`` or makes the file system fail (too long)."""
    if not isinstance(name, str) or not _MODEL_NAME.fullmatch(name):
        shown = name if not isinstance(name, str) or len(name) <= 80 else name[:80] + "..."
        raise IosightError(
            f"invalid model name {shown!r}: up to 128 letters, digits, '.', '_' or '-', "
            "not starting with '.'"
        )


def model_dir(warehouse: Warehouse, name: str) -> Path:
    """``models/<name>/`` (a name checked by :func:`check_model_name`)."""
    check_model_name(name)
    return warehouse.path / "models" / name


def _fraction(name: str, value: float) -> None:
    ok = isinstance(value, (int, float)) and 0 < value < 1
    check_param(name, value, ok, "a fraction in (0, 1)")


@dataclass(frozen=True)
class ForecasterSettings:
    """What a forecaster is trained to do and how (§V), checked once when made.

    ``model`` names the candidates tried per lead (normalised to a tuple of registered
    names, ``"all"`` expanded); ``name`` defaults to ``bursts-<direction>``. See
    :func:`train_forecaster` for each setting's meaning.
    """

    direction: str = "write"
    model: tuple[str, ...] = ("xgboost",)
    feature_set: int = 3
    mode: str = "lead"
    horizon_min: float = 5
    max_lead: int = MAX_LEAD
    k: float | None = None
    target_fraction: float = 0.01
    train_fraction: float = 0.8
    val_fraction: float = VAL_FRACTION
    search_iter: int = 0
    cv_splits: int = 3
    seed: int = 0
    severity: bool = True
    name: str | None = None
    information: str = "live"

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", tuple(model_names(self.model)))
        object.__setattr__(self, "name", self.name or f"bursts-{self.direction}")
        check_direction(self.direction)
        check_feature_set(self.feature_set)
        check_param("mode", self.mode, self.mode in ("lead", "interval"), "'lead' or 'interval'")
        check_param("horizon_min", self.horizon_min,
                    isinstance(self.horizon_min, (int, float)) and 0 < self.horizon_min < math.inf,
                    "positive, finite minutes")  # fmt: skip
        check_param("max_lead", self.max_lead, 1 <= self.max_lead <= 288, "between 1 and 288")
        for name in ("target_fraction", "train_fraction", "val_fraction"):
            _fraction(name, getattr(self, name))
        check_seed(self.seed)
        check_search(self.search_iter, self.cv_splits)
        check_model_name(self.name)
        check_information(self.information)

    def options(self) -> dict:
        """The settings as :func:`train_forecaster`'s keyword arguments."""
        return dataclasses.asdict(self)


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
    """``"1-6: xgboost; 7-24: persistence"`` from ``{lead: candidate}``."""
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
    check and reproduce the predictions; ``binary[L]`` / ``severity[L]`` are the models of
    lead L (interval mode: L = 1, the next h-minute bin). The model contract:
    :meth:`fit` (a classmethod), :meth:`predict`, :meth:`save`, :meth:`load` (a
    classmethod), as :class:`iosight.perfmodel.WriteModel` has.
    """

    settings: ForecasterSettings
    metadata: dict
    binary: dict[int, FittedModel | SplitModel | Persistence] = field(default_factory=dict)
    severity: dict[int, FittedModel | Persistence] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.metadata["name"]

    @classmethod
    def fit(
        cls,
        timeline: pd.DataFrame,
        settings: ForecasterSettings | None = None,
        *,
        jobs: pd.DataFrame | None = None,
        n_jobs: int = -1,
        progress: Progress | None = None,
    ) -> Forecaster:
        """A forecaster trained on ``timeline`` (:func:`train_forecaster`)."""
        opts = (settings or ForecasterSettings()).options()
        return train_forecaster(timeline, **opts, jobs=jobs, n_jobs=n_jobs, progress=progress)

    def describe(self) -> str:
        """What predicts: per lead, the candidate chosen on validation (the best baseline
        unless a model beat it), not the candidates that were tried."""
        md = self.metadata
        if md["mode"] == "interval":
            return f"{md['chosen']['1']} (interval mode, the next {md['horizon_min']:g} min)"
        return f"{describe_choice(md['chosen'])} (lead mode, per lead)"

    def check_compatible(self, *, bin_width: float, feature_set: int | None = None) -> None:
        """Refuse a timeline of another bin width, or another expected feature set."""
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
        """The model's feature matrix of a timeline (one row per bin); set 4 needs the
        warehouse's jobs (:func:`iosight.bursts.load_jobs`), regime ``logs`` its
        known-at sums (:func:`iosight.bursts.load_known`)."""
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
        (:class:`BurstPrediction` says the columns)."""
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
        """Every lead's forecast from each feature row ``X[i]`` (of the bin starting
        ``at[i]``, bins of ``step_s`` seconds): columns ``at``, ``lead``, ``bin_start``,
        ``burst``, ``probability``, ``severity`` (0-5, 0 exactly when not a burst), by
        lead, then ``at``. Many rows at once: follow mode forecasts each bin it passed."""
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
        self, warehouse: Warehouse, at: float | None = None, *, feature_set: int | None = None
    ) -> BurstPrediction:
        """:meth:`predict` on the warehouse's timeline (and jobs, for feature set 4): the
        bins after ``at`` (epoch s; None = the timeline's last bin)."""
        from iosight.bursts._jobstate import load_jobs
        from iosight.bursts._known import load_known
        from iosight.timeline import load_timeline

        jobs = load_jobs(warehouse) if self.metadata["feature_set"] == 4 else None
        known = load_known(warehouse) if self.information == "logs" else None
        return self.predict(load_timeline(warehouse), at, feature_set=feature_set, jobs=jobs,
                            known=known)  # fmt: skip

    def save(self, warehouse: Warehouse) -> Path:
        """Write the model folder ``models/<name>/`` atomically (:mod:`iosight._modelio`:
        JSON, skops and XGBoost's UBJ; no pickle)."""
        metadata = {**self.metadata, "settings": self.settings.options()}
        fitted = {"binary": self.binary, "severity": self.severity}
        return save_model(model_dir(warehouse, self.name), _kind(), metadata, fitted)

    @classmethod
    def load(cls, warehouse: Warehouse, name: str = "bursts-write") -> Forecaster:
        """The forecaster saved as ``name`` (:func:`load_forecaster`)."""
        return load_forecaster(warehouse, name)


def list_forecasters(warehouse: Warehouse) -> list[str]:
    """Names of the forecasters saved in the warehouse (temporary folders of a save in
    progress start with '.' and are no model names)."""
    found = (warehouse.path / "models").glob("*/metadata.json")
    return sorted(p.parent.name for p in found if _MODEL_NAME.fullmatch(p.parent.name))


def load_forecaster(warehouse: Warehouse, name: str = "bursts-write") -> Forecaster:
    """Load a saved forecaster (see :meth:`Forecaster.save`): a folder of data only; a
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


def _settings(md: dict, path: Path) -> ForecasterSettings:
    """The saved settings, checked again (a hand-edited file gets one line)."""
    try:
        return ForecasterSettings(**md["settings"])
    except (KeyError, TypeError) as err:
        raise IosightError(f"{path / 'metadata.json'} has no valid settings ({err})") from None


def train_forecaster(
    df: pd.DataFrame,
    *,
    direction: str = "write",
    model: str | list[str] = "xgboost",
    feature_set: int = 3,
    mode: str = "lead",
    horizon_min: float = 5,
    max_lead: int = MAX_LEAD,
    k: float | None = None,
    target_fraction: float = 0.01,
    train_fraction: float = 0.8,
    val_fraction: float = VAL_FRACTION,
    search_iter: int = 0,
    cv_splits: int = 3,
    seed: int = 0,
    severity: bool = True,
    name: str | None = None,
    jobs: pd.DataFrame | None = None,
    information: str = "live",
    known: pd.DataFrame | None = None,
    n_jobs: int = -1,
    progress: Progress | None = None,
) -> Forecaster:
    """Train a deployable forecaster on a timeline (§V).

    Lead mode fits, for each lead 1..``max_lead`` on the base bins, every model in
    ``model`` (a name or a list) on the training part before its validation slice, tunes
    each binary model's cut on that slice and keeps, per lead, the baseline with the best
    F1 on the slice's compare half (persistence, time of day, under ``logs`` the nowcast)
    unless a model beat it robustly there (:func:`choose`: a margin on the compare half
    and no losing window), so the forecaster is never worse there than the best baseline
    of its regime (``metadata["chosen"]`` names it per lead).
    Interval mode does the same for the next ``horizon_min`` bin. ``severity=False``
    skips the severity models (the severity of a predicted burst is then the current
    bin's class, at least 1). Hyper-parameters are the
    registered defaults unless ``search_iter`` > 0 (then searched per lead). Test scores of
    the chosen candidate and of persistence are stored in the metadata. ``information``
    ``logs`` makes every feature (persistence's too) from what the logs held at t
    (``known``: the known-at sums, :func:`iosight.bursts.load_known`), recorded in
    ``metadata["information"]``.
    """
    from iosight.timeline import bin_width_of

    settings = ForecasterSettings(
        direction=direction, model=model, feature_set=feature_set, mode=mode,
        horizon_min=horizon_min, max_lead=max_lead, k=k, target_fraction=target_fraction,
        train_fraction=train_fraction, val_fraction=val_fraction, search_iter=search_iter,
        cv_splits=cv_splits, seed=seed, severity=severity, name=name, information=information,
    )  # fmt: skip
    names = list(settings.model)
    width = bin_width_of(df)
    leads = list(range(1, max_lead + 1)) if mode == "lead" else [1]
    builder = _Builder(df, jobs, information, known)

    def task(lead: int, target: str) -> Dataset:
        return builder.dataset(
            direction=direction, feature_set=feature_set, mode=mode,
            horizon_min=lead * width / 60.0 if mode == "lead" else horizon_min,
            target=target, k=k, target_fraction=target_fraction,
            train_fraction=train_fraction, threshold_from="train", val_fraction=val_fraction,
        )  # fmt: skip

    items = [{"lead": lead, "binary": task(lead, "binary"),
              "severity": task(lead, "severity") if severity else None}
             for lead in leads]  # fmt: skip

    def fit(item: dict) -> tuple:
        ds = item["binary"]
        cands = fit_candidates(ds, names, seed=seed, search_iter=search_iter,
                               cv_splits=cv_splits)  # fmt: skip
        best = choose(cands)
        te = slice(ds.n_train, None)
        scores = {n: _metrics(ds.y[te], *cands[n].model.predict(ds.X[te], ds.feature_start[te]),
                              "binary")
                  for n in {best, "persistence"}}  # fmt: skip
        sev = Persistence.of(ds.labels, severity=True, column=ds.nowcast_column or 0)
        sv = item["severity"]
        if sv is not None:
            fit_rows = slice(0, sv.n_fit)
            if best not in BASELINES and np.unique(sv.y[fit_rows]).size >= 2:
                sev = fit_model(best, sv.X[fit_rows], sv.y[fit_rows], seed=seed,
                                params=cands[best].model.params)  # fmt: skip
        return best, cands, scores, sev

    prog = ensure_progress(progress)
    prog.start(len(leads), f"training {','.join(names)} ({direction}, {mode})")
    results = parallel_map(fit, items, n_jobs, prog)
    prog.finish()
    fc = Forecaster(settings, {})
    chosen, metrics, val = {}, {}, {}
    for item, (best, cands, scores, sev) in zip(items, results, strict=True):
        lead = item["lead"]
        fc.binary[lead] = cands[best].model
        if sev is not None:
            fc.severity[lead] = sev
        chosen[str(lead)] = best
        val[str(lead)] = {n: c.val_f1 for n, c in cands.items()}
        metrics[str(lead)] = {
            **{m: (None if np.isnan(v) else v) for m, v in scores[best].items()},
            "persistence_f1": scores["persistence"]["f1"],
        }
    ds = items[-1]["binary"]
    labels = ds.labels
    starts = df["bin_start"].to_numpy(np.float64)
    fc.metadata = {
        "name": settings.name,
        "direction": direction,
        "model": ",".join(names),
        "chosen": chosen,
        "mode": mode,
        "feature_set": feature_set,
        "information": information,
        "features": feature_names(direction, feature_set, information),
        "bin_width": width,
        "horizon_min": horizon_min if mode == "interval" else width / 60.0,
        "leads": leads,
        "thresholds": {
            "mean": labels.mean,
            "std": labels.std,
            "k": labels.k,
            "threshold": labels.threshold,
            "severity_edges_sigma": [labels.k + i * (10 - labels.k) / 5 for i in range(6)],
        },  # fmt: skip
        "target_fraction": target_fraction,
        "train_fraction": train_fraction,
        "val_fraction": val_fraction,
        "training_window": [ds.train_window[0], ds.train_window[1]],
        "timeline_window": [float(starts[0]), float(starts[-1])],
        "params": {n: c.model.params for n, c in results[0][1].items()},
        "seed": seed,
        "val_f1": val,
        "test_metrics": metrics,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": _versions(),
    }
    return fc
