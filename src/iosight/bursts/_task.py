"""The burst forecasting task: one frozen object, checked once when made, that the data
sets, the candidates, the evaluation and the forecaster all read (Saeedizade et al. 2023,
§V: what to forecast, on which split of the series, with which candidate models).

One :class:`BurstTask` is one task: one direction, feature set, mode, horizon and
information regime. An evaluation crosses many (:func:`task_grid`); a forecaster keeps
its own in its saved metadata (:attr:`iosight.bursts.Forecaster.settings`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from iosight._errors import IosightError, check_param, check_seed, parse_list
from iosight.bursts._analysis import check_direction
from iosight.bursts._features import check_feature_set
from iosight.bursts._known import check_information
from iosight.bursts._models import check_search, model_names

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from iosight._progress import Progress

MODES = ("interval", "lead")
TARGETS = ("binary", "severity")
THRESHOLD_FROM = ("train", "all")
DEFAULT_HORIZONS = (5, 15, 30, 60, 120)  # minutes
VAL_FRACTION = 0.2  # of the training part, at its end: decision thresholds and model choice
MAX_LEAD = 24  # two hours of 5-minute bins (§V-B)
#: A model name: one short path component, so no name escapes ``models/``.
MODEL_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
#: The fields an evaluation crosses (its list options), not settings shared by its tasks.
GRID_FIELDS = ("direction", "model", "feature_set", "mode", "horizon_min", "k", "information")


def check_model_name(name: str) -> None:
    """Refuse a ``name`` that is not one short path component (letters, digits, ``._-``),
    so no name escapes ``models/`` or makes the file system fail (too long)."""
    if not isinstance(name, str) or not MODEL_NAME.fullmatch(name):
        shown = name if not isinstance(name, str) or len(name) <= 80 else name[:80] + "..."
        raise IosightError(
            f"invalid model name {shown!r}: up to 128 letters, digits, '.', '_' or '-', "
            "not starting with '.'"
        )


def check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    """Refuse a ``value`` of parameter ``name`` that is not one of ``allowed``."""
    check_param(name, value, value in allowed, " or ".join(repr(a) for a in allowed))


def _check_fraction(name: str, value: float) -> None:
    ok = isinstance(value, (int, float)) and 0 < value < 1
    check_param(name, value, ok, "a fraction in (0, 1)")


@dataclass(frozen=True)
class BurstTask:
    """One burst forecasting task and how it is trained (§V), checked once when made.

    Parameters
    ----------
    direction : {"read", "write"}
        Which bytes are forecast.
    model : str or sequence of str
        The candidate models (registered names of :data:`iosight.bursts.MODELS`, a
        comma-separated string, or ``"all"``); normalised to a tuple.
    feature_set : int
        1, 2, 3 (the paper's) or 4 (3 with the current bin and the jobs' state).
    mode : {"lead", "interval"}
        ``interval``: the next ``horizon_min`` bin (the series re-binned); ``lead``: the
        base bin ``horizon_min`` ahead (a forecaster: every lead 1..``max_lead``).
    horizon_min : float
        Minutes ahead, a whole number of the timeline's bins.
    max_lead : int
        Leads a lead-mode forecaster predicts (1..288 bins).
    k : float, optional
        The burst threshold in stdevs; None: chosen so ``target_fraction`` of the bins
        are bursts.
    target_fraction : float
        Share of bins that are bursts when ``k`` is None.
    train_fraction : float
        The chronological training part's share of the bins (the rest is the test part).
    threshold_from : {"train", "all"}
        Burst thresholds from the training part, or from every bin (the paper).
    val_fraction : float
        Share of the training part, at its end, where decision cuts are tuned and the
        candidates compared.
    search_iter, cv_splits : int
        Randomized-search candidates (0: the registered defaults) and time-series folds.
    seed : int
        Seed of every model and search.
    severity : bool
        Whether a forecaster fits severity models too.
    name : str, optional
        A forecaster's name (default ``bursts-<direction>``).
    information : {"live", "logs"}
        What the features know at t (:mod:`iosight.bursts._known`).
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
    threshold_from: str = "train"
    val_fraction: float = VAL_FRACTION
    search_iter: int = 0
    cv_splits: int = 3
    seed: int = 0
    severity: bool = True
    name: str | None = None
    information: str = "live"

    def __post_init__(self) -> None:
        """Check every setting, so that no fit stops on one half-way."""
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
            _check_fraction(name, getattr(self, name))
        check_choice("threshold_from", self.threshold_from, THRESHOLD_FROM)
        check_seed(self.seed)
        check_search(self.search_iter, self.cv_splits)
        check_model_name(self.name)
        check_information(self.information)

    def options(self) -> dict:
        """The settings as keyword arguments (of :func:`iosight.bursts.train_forecaster`)."""
        return dataclasses.asdict(self)

    def replace(self, **changes) -> BurstTask:
        """This task with ``changes`` (field names), checked again; a default name
        follows a changed direction."""
        if "name" not in changes and self.name == f"bursts-{self.direction}":
            changes["name"] = None
        return dataclasses.replace(self, **changes)

    @property
    def leads(self) -> list[int]:
        """The leads a forecaster of this task predicts (interval mode: 1, the next bin)."""
        return list(range(1, self.max_lead + 1)) if self.mode == "lead" else [1]

    def at_lead(self, lead: int, bin_width: float) -> BurstTask:
        """The task of one ``lead`` of a forecaster on bins of ``bin_width`` seconds (lead
        mode: the horizon is the lead; interval mode: the task itself)."""
        return self.replace(horizon_min=lead * bin_width / 60.0) if self.mode == "lead" else self


#: The settings' name in the model contract (:class:`iosight.bursts.Forecaster`).
ForecasterSettings = BurstTask


def make_task(task: BurstTask | None, settings: dict) -> BurstTask:
    """``task`` with ``settings`` (its field names) changed, or a task of ``settings``."""
    return BurstTask(**settings) if task is None else task.replace(**settings)


def check_shared(settings: dict, also: Sequence[str] = ()) -> None:
    """Refuse, among the settings shared by an evaluation's tasks, a field it crosses
    (given there by its list option, e.g. ``directions``) or one of ``also``."""
    crossed = sorted(set(settings) & {*GRID_FIELDS, *also})
    check_param("settings", crossed, not crossed,
                "free of fields set per task (give directions, models, feature_sets, "
                "modes, horizons, k, information as lists; targets for severity)")  # fmt: skip


def task_grid(
    base: BurstTask,
    *,
    information: str | Sequence[str] = "live",
    directions: str | Sequence[str] = ("read", "write"),
    feature_sets: int | Sequence[int] = 3,
    modes: str | Sequence[str] = "interval",
    horizons: float | Sequence[float] = DEFAULT_HORIZONS,
    k: dict[str, float] | None = None,
) -> list[BurstTask]:
    """Every task of ``base`` crossed over the lists (or comma-separated strings), regime
    first and horizon last (the evaluation table's order); ``k`` holds fixed thresholds
    per direction (else ``base``'s ``target_fraction`` chooses them).

    ``information``: ``live`` and/or ``logs``; ``directions``: ``read`` and/or ``write``;
    ``feature_sets``: feature sets 1 to 4; ``modes``: ``interval`` and/or ``lead``;
    ``horizons``: horizons in minutes.
    """
    lists = (parse_list(information, name="information"),
             parse_list(directions, name="directions"),
             parse_list(feature_sets, int, "feature_sets"), parse_list(modes, name="modes"),
             parse_list(horizons, float, "horizons"))  # fmt: skip
    return [
        base.replace(
            information=i, direction=d, feature_set=fs, mode=m, horizon_min=h, k=(k or {}).get(d)
        )  # fmt: skip
        for i, d, fs, m, h in itertools.product(*lists)
    ]


def parallel_map(
    func: Callable,
    items: list,
    progress: Progress,
    *,
    workers: int = 0,
    scheduler: str | None = None,
    weight: Callable = lambda _: 1,
) -> list:
    """``[func(item) for item in items]`` through :func:`iosight.parallel.map_items`: on
    ``workers`` threads (0: one per core; threads share the feature matrices without
    copies, and scikit-learn's and XGBoost's fitting releases the GIL) or on the Dask
    cluster at ``scheduler``, the ``progress`` advanced by ``weight(item)`` as each item
    finishes. The models fit on one thread each (``n_jobs=1``), so ``workers`` bounds
    the cores in use."""
    from iosight.parallel import map_items

    def done(i: int, _) -> None:
        progress.advance(weight(items[i]), **_fields(items[i]))

    return map_items(func, items, workers=workers, scheduler=scheduler, threads=True,
                     on_done=done)  # fmt: skip


def _fields(item) -> dict:
    """The progress fields of an item: a dict's (or a tuple's first dict's) direction,
    horizon and lead."""
    spec = item[0] if isinstance(item, tuple) else item
    return (
        {k: v for k, v in spec.items() if k in ("direction", "horizon_min", "lead")}
        if isinstance(spec, dict)
        else {}
    )
