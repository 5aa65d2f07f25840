"""Algorithm 1 over every burst window of a timeline (§V-B, Fig. 10 and 11).

A *window* is the 24 bins that follow a decision time; the paper slides it one bin at a
time over the whole Blue Waters timeline and keeps the windows with at least one burst
bin (17,269 windows, 2,751 distinct patterns). Algorithm 1 depends on the window only
through its pattern, so choices are computed once per distinct pattern and broadcast.

Beyond the paper, :func:`simulate_windows` takes a *predicted* matrix, which the
algorithm sees, and an *actual* matrix, which the job is charged for; the gap is the cost
of forecast errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._progress import Progress, ensure_progress
from iosight.schedule._algorithm import (
    POLICIES,
    JobBins,
    choose_among,
    option_run_times,
    policy_alpha,
    run_bins,
)

if TYPE_CHECKING:
    import pandas as pd

#: Metrics of Fig. 10 and 11, in seconds.
METRICS = ("delay", "run_time", "total_time")


@dataclass(frozen=True)
class App:
    """An application of Fig. 10: run time alone (``min_time``) and in bursts (``max_time``).

    ``name``: the application's name.
    """

    name: str
    min_time: float
    max_time: float

    @classmethod
    def parse(cls, spec: str) -> App:
        """``"name:min:max"``, e.g. ``"dlio:850:4250"``.

        ``spec``: the application as text.
        """
        parts = spec.split(":")
        try:
            name, mn, mx = parts[0], float(parts[1]), float(parts[2])
        except (IndexError, ValueError):
            raise IosightError(
                f"an app must be written name:min_time:max_time, e.g. dlio:850:4250. Got {spec!r}."
            ) from None
        if len(parts) != 3 or not name:
            raise IosightError(f"an app must be written name:min_time:max_time. Got {spec!r}.")
        return cls(name, mn, mx)


#: The three applications of Fig. 10 (docs/methods.md §2).
PAPER_APPS: tuple[App, ...] = (
    App("dlio", 850.0, 4250.0),
    App("b", 1260.0, 3780.0),
    App("c", 1830.0, 3660.0),
)


@dataclass(frozen=True)
class BurstWindows:
    """Sliding windows of a boolean burst series.

    Attributes
    ----------
    starts : (n,) int
        Index of each window's first bin in the series.
    patterns : (n, width + extra) bool
        The window's bins; bins past the end of the series are bursts (worst case).
    width : int
        Bins the window is selected on (24).
    """

    starts: np.ndarray
    patterns: np.ndarray
    width: int

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def n_patterns(self) -> int:
        """Distinct patterns among the first ``width`` bins."""
        if len(self) == 0:
            return 0
        return len(np.unique(_pattern_codes(self.patterns[:, : self.width])))


def burst_windows(
    is_burst: Sequence[bool] | np.ndarray,
    *,
    width: int = 24,
    extra: int = 0,
    require_burst: bool = True,
) -> BurstWindows:
    """Every ``width``-bin window of a burst series, one per start bin (stride 1).

    Parameters
    ----------
    is_burst : 1-D bool
        One flag per timeline bin.
    width : int, default 24
        Window length (the 2-hour horizon of §V-B).
    extra : int, default 0
        Further bins kept after each window (for charging actual run times past the
        horizon); past the end of the series they are bursts.
    require_burst : bool, default True
        Keep only windows with at least one burst in their first ``width`` bins, as the
        paper does.
    """
    flags = np.asarray(is_burst)
    check_param("is_burst", flags.shape, flags.ndim == 1, "a 1-D series of burst flags")
    flags = flags.astype(bool)
    check_param("width", width, width >= 1, "a positive integer")
    check_param("extra", extra, extra >= 0, "a non-negative integer")
    n = len(flags) - width + 1
    if n <= 0:
        raise IosightError(
            f"a timeline of {len(flags)} bins is shorter than one {width}-bin window"
        )
    padded = np.concatenate([flags, np.ones(extra, dtype=bool)])
    view = np.lib.stride_tricks.sliding_window_view(padded, width + extra)[:n]
    starts = np.arange(n)
    if require_burst:
        counts = np.convolve(flags.astype(np.int64), np.ones(width, dtype=np.int64), "valid")
        starts = starts[counts > 0]
    return BurstWindows(starts=starts, patterns=np.ascontiguousarray(view[starts]), width=width)


def _pattern_codes(patterns: np.ndarray) -> np.ndarray:
    """One hashable code per boolean row (packed bits viewed as a byte string)."""
    packed = np.packbits(patterns, axis=1)
    return np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1])))[:, 0]


@dataclass
class ScheduleSimulation:
    """Per-window results of Algorithm 1 for several applications and policies.

    Attributes
    ----------
    windows : DataFrame
        One row per (app, policy, window): ``app, policy, alpha, window, delay, run_time,
        total_time`` in seconds; with an actual matrix also ``est_run_time``, the run
        time the algorithm expected from the predicted pattern.
    n_windows, n_patterns : int
        Windows simulated and distinct predicted patterns among them.
    settings : dict
        What the simulation ran with: bin length, start options, estimator (and from a
        burst series its source and data kind).
    """

    windows: pd.DataFrame
    n_windows: int
    n_patterns: int
    settings: dict = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """Mean delay, run time and total time per app and policy (Fig. 10)."""
        cols = [*METRICS, *(["est_run_time"] if "est_run_time" in self.windows else [])]
        out = (
            self.windows.groupby(["app", "policy"], sort=False)[cols]
            .mean()
            .add_prefix("mean_")
            .reset_index()
        )
        out.insert(2, "windows", self.n_windows)
        return out

    def cdf(self, metric: str, app: str | None = None) -> pd.DataFrame:
        """Empirical CDF of a metric per app and policy (Fig. 11): value, fraction <= value.

        ``metric``: ``delay``, ``run_time`` or ``total_time``; ``app``: only this application
        (default: all).
        """
        import pandas as pd

        check_param("metric", metric, metric in self.windows, f"one of {', '.join(METRICS)}")
        df = self.windows if app is None else self.windows[self.windows["app"] == app]
        parts = []
        for (a, p), g in df.groupby(["app", "policy"], sort=False):
            values, counts = np.unique(g[metric].to_numpy(), return_counts=True)
            parts.append(
                pd.DataFrame(
                    {
                        "app": a,
                        "policy": p,
                        "value": values,
                        "fraction": np.cumsum(counts) / counts.sum(),
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)


def _resolve_policies(policies: Iterable[str | float]) -> list[tuple[str, float]]:
    out = []
    for p in policies:
        if isinstance(p, str) and p.upper() in POLICIES:
            out.append((p.upper(), policy_alpha(p)))
            continue
        try:
            alpha = float(p)
        except ValueError:
            policy_alpha(str(p))  # raises the unknown-policy error
        out.append((f"a={alpha:g}", policy_alpha(alpha=alpha)))
    if not out:
        raise IosightError("give at least one policy")
    return out


def simulate_windows(
    predicted: np.ndarray,
    apps: Sequence[App] = PAPER_APPS,
    policies: Iterable[str | float] = tuple(POLICIES),
    *,
    actual: np.ndarray | None = None,
    bin_s: float = 300.0,
    n_options: int = 24,
    estimator: str = "bins",
    progress: Progress | None = None,
) -> ScheduleSimulation:
    """Run Algorithm 1 on every row of a pattern matrix, for several apps and policies.

    Parameters
    ----------
    predicted : (n, w) bool
        The pattern the algorithm sees for each window (bins past ``w`` are bursts).
    apps : sequence of App
    policies : names (MDT, W1..W4, MRT) or alphas
    actual : (n, w') bool, optional
        The bursts that really happen after each decision time; the run time of the chosen
        start is charged on these (bins past ``w'`` are bursts). Default: ``predicted``,
        i.e. the paper's simulation.
    bin_s, n_options, estimator :
        As in :func:`choose_start`.
    progress : Progress, optional
        Told of the distinct patterns chosen on (default: silent).

    Notes
    -----
    Choices are computed once per distinct predicted pattern (the paper's 2,751 of
    17,269 windows) and broadcast to the windows.
    """
    import pandas as pd

    pred = np.asarray(predicted, dtype=bool)
    check_param("predicted", pred.shape, pred.ndim == 2 and pred.shape[1] >= 1, "a 2-D matrix")
    if actual is not None:
        act = np.asarray(actual, dtype=bool)
        check_param(
            "actual",
            act.shape,
            act.ndim == 2 and act.shape[0] == pred.shape[0],
            f"a 2-D matrix with {pred.shape[0]} rows like 'predicted'",
        )
    check_param("n_options", n_options, int(n_options) >= 1, "a positive integer")
    pols = _resolve_policies(policies)
    apps = list(apps)
    if not apps:
        raise IosightError("give at least one app (name:min_time:max_time)")
    n = pred.shape[0]
    codes = _pattern_codes(pred)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    distinct = pred[first]
    prog = ensure_progress(progress)
    prog.start(len(apps), "simulating burst-aware starts")
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("app", "policy", "alpha", "delay")}
    parts.update(run_time=[], est_run_time=[])
    for a, app in enumerate(apps):
        job = JobBins.of(app.min_time, app.max_time, bin_s)
        option_run = option_run_times(
            distinct, job, n_options=int(n_options), bin_s=bin_s, estimator=estimator
        )
        for p, (_, alpha) in enumerate(pols):
            best, _ = choose_among(option_run, alpha, bin_s)
            index = best[inverse]
            est = option_run[inverse, index]
            if actual is None:
                run = est
            else:
                whole, frac = run_bins(act, index[:, None], job)
                run = (whole if estimator == "bins" else frac)[:, 0] * bin_s
            parts["app"].append(np.full(n, a, dtype=np.int16))
            parts["policy"].append(np.full(n, p, dtype=np.int16))
            parts["alpha"].append(np.full(n, alpha))
            parts["delay"].append(index * float(bin_s))
            parts["run_time"].append(run)
            parts["est_run_time"].append(est)
        prog.advance(1)
    prog.finish()
    cols = {k: np.concatenate(v) for k, v in parts.items()}
    windows = pd.DataFrame(
        {
            "app": pd.Categorical.from_codes(cols["app"], [app.name for app in apps]),
            "policy": pd.Categorical.from_codes(cols["policy"], [name for name, _ in pols]),
            "alpha": cols["alpha"],
            "window": np.tile(np.arange(n), len(apps) * len(pols)),
            "delay": cols["delay"],
            "run_time": cols["run_time"],
            "total_time": cols["delay"] + cols["run_time"],
        }
    )
    if actual is not None:
        windows["est_run_time"] = cols["est_run_time"]
    settings = {"bin_s": float(bin_s), "n_options": int(n_options), "estimator": estimator}
    return ScheduleSimulation(windows, n_windows=n, n_patterns=len(first), settings=settings)


def simulate_series(
    is_burst: Sequence[bool] | np.ndarray,
    apps: Sequence[App] = PAPER_APPS,
    policies: Iterable[str | float] = tuple(POLICIES),
    *,
    bin_s: float = 300.0,
    n_options: int = 24,
    estimator: str = "bins",
    progress: Progress | None = None,
) -> ScheduleSimulation:
    """The paper's simulation: every ``n_options``-bin window with a burst of a series.

    Each window is both the prediction and what the job is charged for; bins past it are
    bursts (Algorithm 1's worst case), as in §V-B.

    ``is_burst``: burst flags per bin; ``apps``: the applications; ``policies``: names (MDT,
    W1..W4, MRT) or alphas; ``bin_s``: the bin length (s); ``estimator``: ``bins`` or
    ``fractional`` run-time estimates; ``progress``: told of each pattern (default: silent).
    """
    win = burst_windows(is_burst, width=int(n_options))
    if len(win) == 0:
        raise IosightError("the burst series has no burst bin: no window to simulate")
    sim = simulate_windows(
        win.patterns,
        apps,
        policies,
        bin_s=bin_s,
        n_options=n_options,
        estimator=estimator,
        progress=progress,
    )
    sim.windows["start_bin"] = win.starts[sim.windows["window"].to_numpy()]
    return sim
