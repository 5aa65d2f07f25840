"""Fit a write-time model on samples, save it, predict with it and plan checkpoints.

References
----------
.. [1] Xie et al., 2019, §II-A (write cost is tunable: choose the write frequency), §IV-A (train on
   <= 128 nodes, test on 200-512; converged/unconverged samples; writes > 5 s), §IV-B.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param, check_seed
from iosight._modelio import ModelKind, Prediction, load_model, save_model
from iosight._progress import Progress
from iosight.perfmodel._features import WritePattern, compute_features, feature_names
from iosight.perfmodel._platform import Platform, platform_from_dict
from iosight.perfmodel._search import SearchOutcome, linear_coefficients, search_models

if TYPE_CHECKING:
    import pandas as pd

FAMILIES = ("lasso", "linear", "gradient boosting", "random forest", "median")
SMALL_TEST, MEDIUM_TEST = (200, 256), (400, 512)  # §IV-C test sets


def split_samples(
    samples: pd.DataFrame, *, train_max_nodes: int = 128, min_time: float = 5.0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training samples (converged, <= ``train_max_nodes``) and test samples with their set.

    Test sets (§IV-C): ``small`` (converged, < 300 nodes), ``medium`` (converged, >= 300
    nodes) and ``unconverged``. Samples faster than ``min_time`` seconds are dropped (§IV-A
    studies writes > 5 s).

    ``samples``: the write samples.
    """
    need = {"nodes", "cores", "size", "mean_time", "converged"}
    if not need <= set(samples.columns):
        raise IosightError(f"samples need columns {sorted(need)}; run 'perfmodel samples' first")
    s = samples[samples["mean_time"] > min_time]
    train = s[(s["nodes"] <= train_max_nodes) & s["converged"].astype(bool)]
    test = s[s["nodes"] > train_max_nodes].copy()
    test["test_set"] = np.where(
        ~test["converged"].astype(bool),
        "unconverged",
        np.where(test["nodes"] < 300, "small", "medium"),
    )
    if train.empty or test.empty:
        raise IosightError(
            f"need converged samples on <= {train_max_nodes} nodes for training and samples on "
            f"more nodes for testing, all slower than {min_time} s; got {len(train)} and "
            f"{len(test)}"
        )
    return train, test


@dataclass(frozen=True)
class WriteModelSettings:
    """How a write-time model is searched and chosen (§IV-A, §IV-B), checked once.

    ``family`` is kept as the model (``best``: the lowest validation MSE among
    ``families``); training uses converged samples on at most ``train_max_nodes`` nodes
    slower than ``min_time`` seconds.

    ``seed``: the random seed of the search.
    """

    family: str = "lasso"
    families: tuple[str, ...] = FAMILIES
    train_max_nodes: int = 128
    min_time: float = 5.0
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "families", tuple(self.families))
        known = ", ".join(FAMILIES)
        check_param("families", self.families,
                    bool(self.families) and set(self.families) <= set(FAMILIES),
                    f"some of: {known}")  # fmt: skip
        allowed = (*self.families, "best")
        check_param("family", self.family, self.family in allowed, f"one of {', '.join(allowed)}")
        check_param("train_max_nodes", self.train_max_nodes,
                    isinstance(self.train_max_nodes, int) and self.train_max_nodes >= 1,
                    "a whole number of nodes, at least 1")  # fmt: skip
        check_param("min_time", self.min_time,
                    isinstance(self.min_time, (int, float)) and 0 <= self.min_time < math.inf,
                    "non-negative and finite seconds")  # fmt: skip
        check_seed(self.seed)


@dataclass(frozen=True)
class WritePrediction(Prediction):
    """:meth:`WriteModel.predict`'s result: ``table`` has the patterns' ``nodes``,
    ``cores``, ``size`` (and ``stripes``) and ``write_time_s``, the predicted mean write
    time in seconds; ``model`` is the model's family."""

    @property
    def seconds(self) -> np.ndarray:
        """The predicted mean write times (s), in the patterns' order."""
        return self.table["write_time_s"].to_numpy(np.float64)


#: What a write model's folder may hold (see :mod:`iosight._modelio`).
WRITE_MODEL = ModelKind("write model", "iosight perfmodel fit")
_TABLES = ("accuracy", "predictions", "coefficients")


@dataclass
class WriteModel:
    """A fitted write-time model with its settings, platform, search outcome and provenance.

    The model contract: :meth:`fit` (a classmethod), :meth:`predict`, :meth:`save`,
    :meth:`load` (a classmethod), as :class:`iosight.bursts.Forecaster` has.

    ``settings``: how it was searched and chosen; ``platform``: the write path it models;
    ``estimator``: the fitted scikit-learn or XGBoost estimator; ``features``: its input
    features, in column order; ``scales``: the write scales it was trained on; ``params``: the
    chosen hyperparameters; ``accuracy``: accuracy per family and test set; ``predictions``:
    test predictions per family; ``coefficients``: the Lasso's selected features and
    coefficients (raw units), when linear; ``meta``: provenance (versions, sample counts, when
    fitted).
    """

    settings: WriteModelSettings
    platform: Platform
    family: str  # the family kept (settings.family, or the best one)
    estimator: object = field(repr=False)
    features: list[str]
    scales: tuple[int, ...]
    params: dict
    accuracy: pd.DataFrame = field(repr=False)
    predictions: pd.DataFrame = field(repr=False)
    coefficients: pd.DataFrame | None = field(default=None, repr=False)
    meta: dict = field(default_factory=dict)

    @classmethod
    def fit(
        cls,
        samples: pd.DataFrame,
        platform: Platform,
        settings: WriteModelSettings | None = None,
        *,
        workers: int = 0,
        scheduler: str | None = None,
        progress: Progress | None = None,
    ) -> WriteModel:
        """Search ``settings.families`` on ``samples`` of ``platform`` and keep
        ``settings.family`` (§IV-B). The search runs on ``workers`` local threads (0:
        one per core) or on the Dask cluster at ``scheduler``, with the same model.

        ``settings``: how to search and choose (default: :class:`WriteModelSettings`);
        ``progress``: told of the search's steps (default: silent).
        """
        where = {"workers": workers, "scheduler": scheduler}
        return _fit(samples, platform, settings or WriteModelSettings(), where, progress)

    def predict(self, patterns: pd.DataFrame) -> WritePrediction:
        """Predicted mean write time (s) for rows ``nodes, cores, size[, stripes]``.

        ``patterns``: the write patterns, one per row.
        """
        x = compute_features(self.platform, patterns).to_numpy(float)
        cols = [c for c in ("nodes", "cores", "size", "stripes") if c in patterns]
        table = patterns[cols].reset_index(drop=True)
        table["write_time_s"] = np.asarray(self.estimator.predict(x), dtype=float)
        return WritePrediction(self.family, table)

    def save(self, out: str | Path) -> Path:
        """Write the model folder ``out`` atomically: ``metadata.json``, the estimator
        (:mod:`iosight._modelio`'s formats, no pickle) and the accuracy, prediction and
        coefficient tables as CSV."""

        def tables(folder: Path) -> None:
            for name in _TABLES:
                table = getattr(self, name)
                if table is not None:
                    table.to_csv(folder / f"{name}.csv", index=False)

        meta = {
            **self.meta,
            "settings": dataclasses.asdict(self.settings),
            "family": self.family,
            "features": self.features,
            "training_scales": list(self.scales),
            "params": self.params,
            "platform": self.platform.to_dict(),
        }
        return save_model(Path(out), WRITE_MODEL, meta, self.estimator, tables)

    @classmethod
    def load(cls, path: str | Path) -> WriteModel:
        """Read a model folder written by :meth:`save`; a pickle is refused, not loaded.

        ``path``: the model folder.
        """
        import pandas as pd

        d = Path(path)
        meta, est = load_model(d, WRITE_MODEL)
        tables = {n: pd.read_csv(d / f"{n}.csv") if (d / f"{n}.csv").exists() else None
                  for n in _TABLES}  # fmt: skip
        plat = platform_from_dict(meta["platform"], str(d / "metadata.json"))
        if meta["features"] != feature_names(plat):
            raise IosightError(f"{d} was fitted on other features than this iosight computes")
        return cls(
            _settings(meta, d),
            plat,
            meta["family"],
            est,
            meta["features"],
            tuple(meta["training_scales"]),
            meta["params"],
            tables["accuracy"],
            tables["predictions"],
            tables["coefficients"],
            {k: v for k, v in meta.items() if k != "settings"},
        )


def _settings(meta: dict, folder: Path) -> WriteModelSettings:
    """The saved settings, checked again (a hand-edited file gets one line)."""
    try:
        return WriteModelSettings(**meta["settings"])
    except (KeyError, TypeError) as err:
        raise IosightError(f"{folder / 'metadata.json'} has no valid settings ({err})") from None


def evaluate(
    samples: pd.DataFrame,
    platform: Platform,
    *,
    train_max_nodes: int = 128,
    min_time: float = 5.0,
    families: tuple[str, ...] = FAMILIES,
    seed: int = 0,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> SearchOutcome:
    """The paper's search and comparison on ``samples`` of ``platform`` (§IV-B, §IV-C),
    on ``workers`` local threads (0: one per core) or the Dask cluster at
    ``scheduler`` (:func:`search_models`).

    ``train_max_nodes``: training uses samples on at most this many nodes; ``min_time``: samples
    faster than this (s) are dropped; ``families``: the model families compared; ``seed``: the
    random seed of the search; ``progress``: told of the search's steps (default: silent).
    """
    train, test = split_samples(samples, train_max_nodes=train_max_nodes, min_time=min_time)
    names = feature_names(platform)
    x = compute_features(platform, train).to_numpy(float)
    tx = compute_features(platform, test).to_numpy(float)
    return search_models(
        x,
        train["mean_time"].to_numpy(float),
        train["nodes"].to_numpy(),
        tx,
        test["mean_time"].to_numpy(float),
        test["test_set"].to_numpy(),
        names,
        families=families,
        seed=seed,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
    )


def fit_model(
    samples: pd.DataFrame,
    platform: Platform,
    *,
    family: str = "lasso",
    families: tuple[str, ...] = FAMILIES,
    train_max_nodes: int = 128,
    min_time: float = 5.0,
    seed: int = 0,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> WriteModel:
    """Search ``families``, keep ``family`` (``best``: lowest validation MSE) as the model:
    :meth:`WriteModel.fit` with these :class:`WriteModelSettings`.

    ``samples``: the write samples (:func:`collect_samples`); ``platform``: the platform they
    ran on; ``train_max_nodes``: training uses samples on at most this many nodes; ``min_time``:
    samples faster than this (s) are dropped; ``seed``: the random seed of the search;
    ``workers`` and ``scheduler``: where the search runs (as :meth:`WriteModel.fit`);
    ``progress``: told of the search's steps (default: silent).
    """
    settings = WriteModelSettings(family, families, train_max_nodes, min_time, seed)
    return WriteModel.fit(samples, platform, settings, workers=workers, scheduler=scheduler,
                          progress=progress)  # fmt: skip


def _fit(
    samples: pd.DataFrame,
    platform: Platform,
    settings: WriteModelSettings,
    where: dict,
    progress: Progress | None,
) -> WriteModel:
    s = settings
    out = evaluate(samples, platform, train_max_nodes=s.train_max_nodes, min_time=s.min_time,
                   families=s.families, seed=s.seed, progress=progress, **where)  # fmt: skip
    family = s.family
    if family == "best":
        family = min(out.candidates, key=lambda f: out.candidates[f].val_mse)
    cand = out.candidates[family]
    coef = (
        linear_coefficients(cand.estimator, out.features) if family in ("lasso", "linear") else None
    )
    synthetic = bool(samples["synthetic"].any()) if "synthetic" in samples else False
    meta = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "iosight_version": _version(),
        "samples": int(len(samples)),
        "synthetic": synthetic,
        "train_max_nodes": s.train_max_nodes,
        "min_time": s.min_time,
        "seed": s.seed,
        "training_sets_searched": len(out.subsets),
        "shrinkage_grid": [float(a) for a in out.alphas],
        "validation_mse": {f: c.val_mse for f, c in out.candidates.items()},
        "chosen": {
            f: {"scales": list(c.scales), "params": c.params} for f, c in out.candidates.items()
        },
    }
    return WriteModel(
        settings,
        platform,
        family,
        cand.estimator,
        out.features,
        cand.scales,
        cand.params,
        out.accuracy,
        out.predictions,
        coef,
        meta,
    )


def _version() -> str:
    from iosight import __version__

    return __version__


@dataclass(frozen=True)
class CheckpointPlan:
    """How often to checkpoint so writes stay within a share of the run (§II-A).

    ``predicted_write_s``: the model's write time (s); ``checkpoints``: how many checkpoints the
    run takes; ``compute_time_s``: the run's compute time (s).
    """

    predicted_write_s: float
    planned_write_s: float  # with the safety margin
    min_interval_s: float  # the shortest interval within the budget
    interval_s: float  # compute seconds between checkpoints in this run
    checkpoints: int
    write_share: float  # planned write time / (compute + write time)
    compute_time_s: float
    feasible: bool  # False: even one checkpoint exceeds the budget

    def as_frame(self) -> pd.DataFrame:
        """The plan as a two-column table (quantity, value), for printing."""
        import pandas as pd

        return pd.DataFrame([{"quantity": k, "value": v} for k, v in self.__dict__.items()])


def check_prediction(predicted_write_s: float) -> None:
    """Refuse a predicted write time that is not a positive finite number of seconds.

    A linear model extrapolates: far outside its training data it can predict a negative
    time, which is no answer to show or plan with.
    """
    if not math.isfinite(predicted_write_s) or predicted_write_s <= 0:
        raise IosightError(
            f"the model predicts a write time of {predicted_write_s:.3g} s for this pattern, "
            "which cannot be used; the pattern is probably far outside the training data"
        )


MAX_COMPUTE_S = 10 * 365 * 86400.0  # a run longer than ten years is a typo


def plan_checkpoints(
    predicted_write_s: float,
    compute_time_s: float,
    io_budget: float = 0.1,
    margin: float = 0.3,
) -> CheckpointPlan:
    """The checkpoint interval that keeps write time under ``io_budget`` of the run time.

    With a write of ``w = predicted * (1 + margin)`` seconds every ``I`` compute seconds the
    write share is ``w / (I + w)``; it stays within ``b`` when ``I >= w (1 - b) / b``. The
    margin covers the model's error (the paper's 20-30%, §IV-C). The run is split into
    ``floor(C / I_min)`` equal intervals; when even one write breaks the budget the plan
    keeps one final checkpoint and says it is not feasible.

    ``predicted_write_s``: the model's write time for one checkpoint (s); ``compute_time_s``:
    the run's compute time (s); ``margin``: extra share of write time for the model's error.
    """
    check_param("io_budget", io_budget, 0 < io_budget < 1, "in (0, 1)")
    check_param("margin", margin, 0 <= margin < math.inf, "non-negative and finite")
    check_param(
        "compute_time",
        compute_time_s,
        0 < compute_time_s <= MAX_COMPUTE_S,
        f"positive seconds, at most {MAX_COMPUTE_S:.0f} (ten years)",
    )
    check_prediction(predicted_write_s)
    w = predicted_write_s * (1 + margin)
    needed = w * (1 - io_budget) / io_budget
    k = math.floor(compute_time_s / needed)
    feasible = k >= 1
    k = max(k, 1)  # at least the final checkpoint
    share = k * w / (compute_time_s + k * w)
    return CheckpointPlan(
        predicted_write_s, w, needed, compute_time_s / k, k, share, compute_time_s, feasible
    )


def predict_pattern(model: WriteModel, pattern: WritePattern) -> float:
    """Predicted mean write time (s) of one pattern; an error when it is not positive
    (:func:`check_prediction`).

    ``model``: the fitted write model; ``pattern``: the write pattern.
    """
    import pandas as pd

    pattern.check(model.platform)
    row = {
        "nodes": pattern.nodes,
        "cores": pattern.cores,
        "size": pattern.size,
        "stripes": pattern.stripes,
    }
    t = float(model.predict(pd.DataFrame([row])).seconds[0])
    check_prediction(t)
    return t
