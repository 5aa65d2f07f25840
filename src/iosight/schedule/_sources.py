"""Where burst patterns come from: the warehouse timeline (labelled as §IV does), a file, or a
saved burst model's forecasts (one recommendation, or a study over every decision time)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._progress import Progress
from iosight.schedule._algorithm import POLICIES, StartChoice, choose_start, parse_pattern
from iosight.schedule._simulation import (
    PAPER_APPS,
    App,
    ScheduleSimulation,
    simulate_series,
    simulate_windows,
)

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

_SERIES_COLUMNS = ("is_burst", "burst")


@dataclass(frozen=True)
class BurstSeries:
    """A burst flag per timeline bin, and how it was labelled.

    Attributes
    ----------
    bin_start : (n,) float
        Epoch seconds of each bin (empty for series read from a file).
    is_burst : (n,) bool
    bin_s : float
    source : str
        ``"timeline:<direction>"`` or the file path.
    threshold : float
        Bytes per bin above which a bin is a burst (NaN for files).
    data : str
        Which data are behind it (:func:`iosight.warehouse.data_kind`: real, SYNTHETIC or
        mixed); empty for a series read from a file.
    """

    bin_start: np.ndarray
    is_burst: np.ndarray
    bin_s: float
    source: str
    threshold: float = float("nan")
    data: str = ""


def burst_series(
    warehouse: Warehouse,
    *,
    direction: str = "write",
    bin_s: float = 300.0,
    k: float | None = None,
    target_fraction: float = 0.01,
) -> BurstSeries:
    """Label the warehouse ``timeline`` into bursts (mean + k std of bytes per bin, §IV).

    The timeline is coarsened to ``bin_s`` when its bins are finer; ``k`` defaults to the
    value that marks ``target_fraction`` of the bins (the paper's 1%).

    ``warehouse``: the warehouse holding the timeline; ``direction``: ``read`` or ``write``.
    """
    from iosight.bursts import label_bursts
    from iosight.timeline import bin_width_of, load_timeline, rebin
    from iosight.warehouse import data_kind

    check_param("direction", direction, direction in ("read", "write"), "'read' or 'write'")
    warehouse.require("timeline", "run 'iosight timeline build' first")
    df = load_timeline(warehouse)
    if df.empty:
        raise IosightError("the 'timeline' table is empty; rebuild it: 'iosight timeline build'")
    width = bin_width_of(df)
    if width > bin_s + 1e-9:
        raise IosightError(
            f"the timeline's bins ({width:g} s) are wider than the scheduling bin ({bin_s:g} s);"
            " rebuild the timeline with finer bins or pass a larger bin"
        )
    if abs(width - bin_s) > 1e-9:
        df = rebin(df, bin_s)
    labels = label_bursts(
        df[f"{direction}_bytes"].to_numpy(dtype=float), k=k, target_fraction=target_fraction,
        name=f"the timeline's {direction} bytes per {bin_s:g} s bin",
    )  # fmt: skip
    return BurstSeries(
        bin_start=df["bin_start"].to_numpy(dtype=float),
        is_burst=np.asarray(labels.is_burst, dtype=bool),
        bin_s=float(bin_s),
        source=f"timeline:{direction}",
        threshold=float(labels.threshold),
        data=data_kind(warehouse),
    )


def read_burst_series(path: str | Path, *, bin_s: float = 300.0) -> BurstSeries:
    """A burst series from a file: ``.parquet``/``.csv`` with an ``is_burst`` or ``burst``
    column (or a single column) of 0/1 or true/false, or text of 0s and 1s (one per line or
    one string). Anything else (a gap, 0.6, an unreadable file) is an error naming the file:
    a flag is never guessed.

    ``path``: the file; ``bin_s``: the bin length (s).
    """
    p = Path(path)
    if not p.is_file():
        raise IosightError(f"no burst series file at {p}")
    kind = p.suffix.lower()
    try:
        if kind in (".parquet", ".csv"):
            flags = _table_flags(p, kind)
        else:
            flags = _text_flags(p.read_text())
    except (ValueError, OSError) as err:  # pandas/pyarrow read errors, undecodable text
        msg = " ".join(str(err).split())
        raise IosightError(f"{p}: cannot be read as a burst series ({msg})") from None
    except IosightError as err:
        raise IosightError(f"{p}: {err}") from None
    return BurstSeries(bin_start=np.empty(0), is_burst=flags, bin_s=float(bin_s), source=str(p))


def _table_flags(p: Path, kind: str) -> np.ndarray:
    """The burst column of a CSV or Parquet file, each value exactly 0/1 or a boolean."""
    import pandas as pd

    # a blank line is a bin without a flag, not a line to drop (the bins after would shift)
    df = pd.read_parquet(p) if kind == ".parquet" else pd.read_csv(p, skip_blank_lines=False)
    cols = [c for c in _SERIES_COLUMNS if c in df.columns]
    if not cols and len(df.columns) != 1:
        raise IosightError(
            "needs an 'is_burst' or 'burst' column (or exactly one column); "
            f"it has {', '.join(map(str, df.columns))}"
        )
    col = cols[0] if cols else df.columns[0]
    values = df[col]
    if values.empty:
        raise IosightError(f"column {col!r} holds no rows")
    numbers = pd.to_numeric(values, errors="coerce")  # true/false stay booleans
    ok = numbers.isin([0, 1]).to_numpy(dtype=bool)
    if not ok.all():
        row = int(np.argmin(ok))
        first = values.iloc[row]
        first = first.item() if isinstance(first, np.generic) else first
        raise IosightError(
            f"column {col!r} must hold only 0/1 or true/false; {int((~ok).sum())} value(s) do"
            f" not, the first {first!r} at data row {row + 1}"
        )
    return numbers.to_numpy(dtype=float) == 1


def _text_flags(text: str) -> np.ndarray:
    """0s and 1s of a text file (separators as :func:`parse_pattern` allows)."""
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        stray = set(line) - set("01, _")
        if stray:
            raise IosightError(
                f"a burst series text holds only 0s and 1s; line {number} has {min(stray)!r}"
            )
    if not set("".join(lines)) & {"0", "1"}:
        raise IosightError("holds no 0/1 values")
    return parse_pattern("".join(lines))


def simulate_source(
    series: BurstSeries,
    apps: Sequence[App] = PAPER_APPS,
    policies: Iterable[str | float] = tuple(POLICIES),
    *,
    n_options: int = 24,
    estimator: str = "bins",
    progress: Progress | None = None,
) -> ScheduleSimulation:
    """The paper's simulation (§V-B, Fig. 10-11) on a labelled burst series.

    ``series``: the labelled burst series; ``apps``: the applications; ``policies``: names (MDT,
    W1..W4, MRT) or alphas; ``n_options``: start options per window; ``estimator``: ``bins`` or
    ``fractional`` run-time estimates; ``progress``: told of each pattern (default: silent).
    """
    sim = simulate_series(
        series.is_burst,
        apps,
        policies,
        bin_s=series.bin_s,
        n_options=n_options,
        estimator=estimator,
        progress=progress,
    )
    sim.settings.update(
        source=series.source,
        data=series.data,
        bins=int(len(series.is_burst)),
        burst_bins=int(series.is_burst.sum()),
        threshold=series.threshold,
    )
    return sim


@dataclass(frozen=True)
class Recommendation:
    """A start recommendation from a burst forecast: the forecast and Algorithm 1's choice.

    ``forecast``: the lead-mode forecast it was made on; ``choice``: Algorithm 1's choice.
    """

    forecast: pd.DataFrame
    choice: StartChoice
    decided_at: float  # epoch s of the first forecast bin

    @property
    def start_at(self) -> float:
        """Epoch seconds of the recommended start."""
        return self.decided_at + self.choice.delay


def recommend_start(
    warehouse: Warehouse,
    model: str,
    min_time: float,
    max_time: float,
    *,
    at: float | None = None,
    alpha: float | None = None,
    policy: str | None = None,
    n_options: int = 24,
    estimator: str = "bins",
) -> Recommendation:
    """Predict the next bins with a trained burst model and run Algorithm 1 on them.

    ``at`` (epoch s) is the decision time; ``None`` is right after the last timeline bin.
    The model's lead-mode forecast (``lead, bin_start, burst, ...``) gives the pattern;
    the bin length ``L`` is the spacing of its bins.

    ``warehouse``: the warehouse holding the model and the timeline; ``model``: the saved
    lead-mode forecaster's name; ``min_time``: the job's run time alone (s); ``max_time``: its
    run time in bursts (s); ``alpha``: the policy's weight of delay against run time;
    ``policy``: a named policy instead (MDT, W1..W4, MRT); ``n_options``: start options;
    ``estimator``: ``bins`` or ``fractional`` run-time estimates.
    """
    try:
        from iosight.bursts import load_forecaster
    except ImportError:
        raise IosightError(
            "this iosight has no burst forecaster; pass --pattern instead of --model"
        ) from None
    forecast = load_forecaster(warehouse, model).predict_next(warehouse, at=at).table
    if forecast.empty:
        raise IosightError(f"burst model {model!r} returned no forecast")
    return start_on_forecast(forecast, min_time, max_time, alpha=alpha, policy=policy,
                             n_options=n_options, estimator=estimator)  # fmt: skip


def start_on_forecast(
    forecast: pd.DataFrame,
    min_time: float,
    max_time: float,
    *,
    alpha: float | None = None,
    policy: str | None = None,
    n_options: int = 24,
    estimator: str = "bins",
) -> Recommendation:
    """Algorithm 1 (§V-B) on a lead-mode forecast (``lead``, ``bin_start``, ``burst``, ...):
    the one a model just made (:func:`recommend_start`) or one stored by follow mode
    (``iosight serve``'s ``/api/start``). The bin length ``L`` is the spacing of its bins.

    ``forecast``: the lead-mode forecast; ``min_time``: the job's run time alone (s);
    ``max_time``: its run time in bursts (s); ``alpha``: the policy's weight of delay against
    run time; ``policy``: a named policy instead (MDT, W1..W4, MRT); ``n_options``: start
    options; ``estimator``: ``bins`` or ``fractional`` run-time estimates.
    """
    if forecast.empty:
        raise IosightError("the forecast holds no bins")
    forecast = forecast.sort_values("lead", kind="mergesort").reset_index(drop=True)
    starts = forecast["bin_start"].to_numpy(dtype=float)
    bin_s = float(np.median(np.diff(starts))) if len(starts) > 1 else 300.0
    choice = choose_start(
        forecast["burst"].to_numpy().astype(bool),
        min_time,
        max_time,
        alpha=alpha,
        policy=policy,
        bin_s=bin_s,
        n_options=n_options,
        estimator=estimator,
    )
    return Recommendation(forecast=forecast, choice=choice, decided_at=float(starts[0]))


@dataclass
class ForecastStudy:
    """Algorithm 1 choosing on a model's forecasts vs on the actual bursts (beyond §V-B).

    Attributes
    ----------
    forecast : ScheduleSimulation
        Start chosen on the predicted 24 bins, run time charged on the actual bins
        (``est_run_time``: what the algorithm expected).
    oracle : ScheduleSimulation
        Start chosen on the actual 24 bins (the paper's simulation), charged the same way.
    """

    forecast: ScheduleSimulation
    oracle: ScheduleSimulation

    def summary(self) -> pd.DataFrame:
        """Per app and policy: means under the forecast and under perfect foresight."""
        f = self.forecast.summary()
        o = self.oracle.summary()[["app", "policy", "mean_run_time", "mean_total_time"]]
        o = o.rename(
            columns=lambda c: c.replace("mean_", "oracle_") if c.startswith("mean_") else c
        )
        out = f.merge(o, on=["app", "policy"], how="left", sort=False)
        out["extra_total_time"] = out["mean_total_time"] - out["oracle_total_time"]
        return out


def forecast_study(
    warehouse: Warehouse,
    model: str,
    apps: Sequence[App] = PAPER_APPS,
    policies: Iterable[str | float] = tuple(POLICIES),
    *,
    test_only: bool = True,
    n_options: int = 24,
    estimator: str = "bins",
    progress: Progress | None = None,
) -> ForecastStudy:
    """The simulation with a trained lead-mode burst model's forecasts (beyond §V-B).

    At the end of every timeline bin ``t`` the model predicts bins ``t+1 .. t+24`` (one
    classifier per lead, features up to ``t``); the actual bursts are the timeline's,
    labelled with the model's own thresholds. Windows are the decision times whose
    predicted or actual next 24 bins hold a burst, and (``test_only``) that come after
    the model's training window, so no window was seen in training. Run times are
    charged on the actual bins, also past the 24 (bursts past the timeline's end).

    ``warehouse``: the warehouse holding the model and the timeline; ``model``: the saved
    lead-mode forecaster's name; ``apps``: the applications; ``policies``: names (MDT, W1..W4,
    MRT) or alphas; ``n_options``: start options per window; ``estimator``: ``bins`` or
    ``fractional`` run-time estimates; ``progress``: told of each window (default: silent).
    """
    from iosight.bursts import load_forecaster, load_jobs, load_known
    from iosight.timeline import bin_width_of, load_timeline
    from iosight.warehouse import data_kind

    fc = load_forecaster(warehouse, model)
    md = fc.metadata
    if md.get("mode") != "lead":
        raise IosightError(
            f"model {model!r} is an interval-mode model; the schedule needs a lead-mode one "
            "('iosight bursts train --mode lead')"
        )
    warehouse.require("timeline", "run 'iosight timeline build' first")
    df = load_timeline(warehouse)
    bin_s = bin_width_of(df)
    fc.check_compatible(bin_width=bin_s)
    x = df[f"{md['direction']}_bytes"].to_numpy(dtype=float)
    th = md["thresholds"]
    is_burst = (x - th["mean"]) / th["std"] > th["k"]
    leads = sorted(fc.binary)[:n_options]
    n = len(df)
    starts = df["bin_start"].to_numpy()
    decisions = np.arange(n - n_options)  # the next n_options bins are all known
    if test_only:
        decisions = decisions[starts[decisions] > md["training_window"][1]]
    if len(decisions) == 0:
        raise IosightError("no decision time after the model's training window to simulate")
    jobs = load_jobs(warehouse) if md["feature_set"] == 4 else None
    known = load_known(warehouse) if fc.information == "logs" else None
    X = fc.features(df, jobs, known)[decisions]
    predicted = np.ones((len(decisions), n_options), dtype=bool)  # leads past the model: bursts
    for lead in leads:
        predicted[:, lead - 1] = fc.binary[lead].predict(X, starts[decisions])[0] > 0
    extra = max(math.ceil(a.max_time / bin_s) for a in apps)
    padded = np.concatenate([is_burst, np.ones(n_options + extra, dtype=bool)])
    actual = padded[decisions[:, None] + 1 + np.arange(n_options + extra)]
    keep = predicted.any(axis=1) | actual[:, :n_options].any(axis=1)
    if not keep.any():
        raise IosightError("neither the forecasts nor the timeline hold a burst to schedule around")
    predicted, actual, decisions = predicted[keep], actual[keep], decisions[keep]
    kw = {"bin_s": bin_s, "n_options": n_options, "estimator": estimator}
    sims = {
        "forecast": simulate_windows(
            predicted, apps, policies, actual=actual, progress=progress, **kw
        ),
        "oracle": simulate_windows(actual[:, :n_options], apps, policies, actual=actual, **kw),
    }
    data = data_kind(warehouse)
    for sim in sims.values():
        sim.windows["decision_bin"] = decisions[sim.windows["window"].to_numpy()]
        sim.settings.update(
            source=f"model:{model}", data=data, test_only=test_only,
            predicted_burst_windows=int(predicted.any(axis=1).sum()),
            actual_burst_windows=int(actual[:, :n_options].any(axis=1).sum()),
        )  # fmt: skip
    return ForecastStudy(**sims)
