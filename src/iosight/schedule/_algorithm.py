"""Algorithm 1 of Saeedizade et al. (§V-B): pick a start delay that dodges predicted bursts.

iosight's reading (``docs/methods.md`` §2): a job's work is ``min_time``; a clean bin
advances it by ``min_time / ceil(min_time / L)`` and a burst bin by
``min_time / ceil(max_time / L)``, so it needs ``ceil(min_time / L)`` clean bins or
``ceil(max_time / L)`` burst bins. For each of the ``N`` start options the bins are walked
until the work is done; bins past the known pattern are bursts (worst case). The score is
``alpha * delay + (1 - alpha) * run_time`` and the lowest score wins, the first on ties.

The walk is done in exact integer *work units* (a clean bin is worth ``ceil(max/L)`` units,
a burst bin ``ceil(min/L)``, the job needs their product), so a job of 850 s with
``L = 300`` s needs exactly 3 clean bins; the listing's floating-point subtraction would
leave a residue of 1e-13 s and charge a fourth bin. One vectorised kernel serves the
single-pattern call and the simulations over many windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param, is_integer

if TYPE_CHECKING:
    import pandas as pd

#: Named policies of §V-B and Fig. 10: MDT (alpha = 1), W1..W4, MRT (alpha = 0).
POLICIES: dict[str, float] = {
    "MDT": 1.0,
    "W1": 0.7,
    "W2": 0.6,
    "W3": 0.5,
    "W4": 0.4,
    "MRT": 0.0,
}
#: Estimators of a start option's run time: whole bins (the paper's) or fractional last bin.
ESTIMATORS = ("bins", "fractional")
#: Scores are compared after rounding to this many decimals of a second, so that
#: ``0.7 * 300`` and ``210`` tie as they do on paper; ties keep the earliest start.
_SCORE_DECIMALS = 6
#: Most cells of the (rows, options, bins) gather evaluated at once: start options x (bins
#: a job needs in bursts + 1) of one pattern may not exceed it, so memory stays near
#: 128 MB an array (2**24 int64) whatever the options or the job (checked before allocating).
MAX_WALK_CELLS = 1 << 24


def parse_pattern(pattern: str | Sequence[int] | Sequence[bool] | np.ndarray) -> np.ndarray:
    """A burst pattern as a 1-D boolean array.

    Parameters
    ----------
    pattern : str or sequence
        ``"000110..."`` (``0``/``1``, optional spaces, commas or underscores) or a
        sequence of 0/1 or booleans; ``1`` marks a predicted burst bin.
    """
    if isinstance(pattern, str):
        text = pattern.replace(",", "").replace(" ", "").replace("_", "")
        if not text or set(text) - {"0", "1"}:
            raise IosightError(
                "the 'pattern' parameter must be a string of 0s and 1s such as "
                f"'000110000000000000000000'. Got {pattern!r} instead."
            )
        return np.frombuffer(text.encode(), dtype=np.uint8) == ord("1")
    arr = np.asarray(pattern)
    if arr.ndim != 1 or arr.size == 0:
        raise IosightError(
            f"the 'pattern' parameter must be a non-empty 1-D sequence. Got shape {arr.shape}."
        )
    if arr.dtype != bool:
        if not np.isin(arr, (0, 1)).all():
            raise IosightError("the 'pattern' parameter must hold only 0 and 1 values.")
        arr = arr.astype(bool)
    return arr


def policy_alpha(policy: str | None = None, alpha: float | None = None) -> float:
    """The alpha of a named policy (MDT, W1..W4, MRT), or ``alpha`` itself when given.

    ``policy``: a policy's name.
    """
    if policy is not None and alpha is not None:
        raise IosightError("give either a policy or an alpha, not both")
    if policy is not None:
        key = policy.upper()
        if key not in POLICIES:
            raise IosightError(
                f"unknown policy {policy!r}; choose one of: {', '.join(POLICIES)} "
                "(or give an alpha between 0 and 1)"
            )
        return POLICIES[key]
    if alpha is None:
        raise IosightError("give a policy (MDT, W1..W4, MRT) or an alpha between 0 and 1")
    check_param("alpha", alpha, 0.0 <= float(alpha) <= 1.0, "a number between 0 and 1")
    return float(alpha)


@dataclass(frozen=True)
class JobBins:
    """How many bins a job needs, and its work in integer units (see module notes)."""

    clean_bins: int  # ceil(min_time / L)
    burst_bins: int  # ceil(max_time / L)

    @property
    def need(self) -> int:
        """Bins of clean I/O the job needs: its clean bins times its burst bins."""
        return self.clean_bins * self.burst_bins

    @classmethod
    def of(cls, min_time: float, max_time: float, bin_s: float) -> JobBins:
        """Validate the job's times and return its bin counts."""
        check_param("bin_s", bin_s, bin_s > 0 and math.isfinite(bin_s), "a positive number")
        check_param(
            "min_time", min_time, min_time > 0 and math.isfinite(min_time), "a positive number"
        )
        check_param(
            "max_time",
            max_time,
            math.isfinite(max_time) and max_time >= min_time,
            f"a number >= min_time ({min_time})",
        )
        most = MAX_WALK_CELLS - 1  # one start option of (most + 1) cells
        check_param(
            "max_time",
            max_time,
            max_time / bin_s <= most,  # before ceil: an infinite ratio would overflow
            f"at most {most:,} bins of {bin_s:g} s (a longer bin fits a longer job)",
        )
        return cls(math.ceil(min_time / bin_s), math.ceil(max_time / bin_s))

    def check_options(self, n_options: int) -> int:
        """``n_options`` as an int, refused unless positive and small enough that one
        pattern's walk, ``n_options * (burst_bins + 1)`` cells, fits MAX_WALK_CELLS."""
        ok = is_integer(n_options) and n_options >= 1
        check_param("n_options", n_options, ok, "a positive integer")
        most = MAX_WALK_CELLS // (self.burst_bins + 1)
        check_param(
            "n_options",
            n_options,
            n_options <= most,
            f"at most {most:,} for a job of {self.burst_bins:,} bins in bursts (start options"
            f" x (job bins + 1) <= {MAX_WALK_CELLS:,})",
        )
        return int(n_options)


def _extend(patterns: np.ndarray, length: int) -> np.ndarray:
    """Pad (with bursts: worst case) or cut boolean rows to ``length`` bins."""
    n, width = patterns.shape
    if width >= length:
        return patterns[:, :length]
    return np.concatenate([patterns, np.ones((n, length - width), dtype=bool)], axis=1)


def run_bins(
    patterns: np.ndarray, starts: np.ndarray, job: JobBins
) -> tuple[np.ndarray, np.ndarray]:
    """Bins a job runs when started at ``starts`` (bin indices) of each pattern row.

    Parameters
    ----------
    patterns : (n, width) bool
        Burst bins; bins at or past ``width`` count as bursts.
    starts : (n, k) int
        Start bins per row.
    job : JobBins

    Returns
    -------
    whole : (n, k) int
        Bins entered before the work is done: Algorithm 1's ``j - i``.
    fractional : (n, k) float
        The same with the last bin counted only up to the moment the work is done.
    """
    n = patterns.shape[0]
    starts = np.asarray(starts, dtype=np.int64)
    whole = np.empty(starts.shape, dtype=np.int64)
    frac = np.empty(starts.shape, dtype=np.float64)
    b = job.burst_bins
    length = int(starts.max(initial=0)) + b
    offsets = np.arange(b + 1)
    chunk = max(1, MAX_WALK_CELLS // (starts.shape[1] * (b + 1)))
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        ext = _extend(patterns[lo:hi], length)
        units = np.where(ext, job.clean_bins, job.burst_bins)  # progress per bin
        cum = np.zeros((hi - lo, length + 1), dtype=np.int64)
        np.cumsum(units, axis=1, out=cum[:, 1:])
        rows = np.arange(hi - lo)[:, None, None]
        gathered = cum[rows, starts[lo:hi, :, None] + offsets]  # (m, k, b + 1)
        done = gathered[..., 1:] - gathered[..., :1]  # work after 1..b bins
        r = (done < job.need).sum(axis=-1) + 1  # first bin count reaching the need
        before = np.where(r > 1, np.take_along_axis(done, (r - 2)[..., None], -1)[..., 0], 0)
        last_units = np.take_along_axis(units, starts[lo:hi] + r - 1, axis=1)
        whole[lo:hi] = r
        frac[lo:hi] = (r - 1) + (job.need - before) / last_units
    return whole, frac


def choose_among(run_time: np.ndarray, alpha: float, bin_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Index of the best start option per row and all scores (Algorithm 1, lines 17-20).

    ``run_time`` is (n, N) seconds for start options ``0..N-1``; the delay of option ``i``
    is ``i * bin_s``. Ties (to 1e-6 s) keep the first option.
    """
    delay = np.arange(run_time.shape[1]) * bin_s
    score = alpha * delay + (1.0 - alpha) * run_time
    best = np.argmin(np.round(score, _SCORE_DECIMALS), axis=1)
    return best, score


def option_run_times(
    patterns: np.ndarray,
    job: JobBins,
    *,
    n_options: int,
    bin_s: float,
    estimator: str,
) -> np.ndarray:
    """(n, n_options) estimated run time in seconds of every start option of every row."""
    if estimator not in ESTIMATORS:
        raise IosightError(
            f"the 'estimator' parameter must be one of {', '.join(ESTIMATORS)}. "
            f"Got {estimator!r} instead."
        )
    n_options = job.check_options(n_options)
    starts = np.broadcast_to(np.arange(n_options), (patterns.shape[0], n_options))
    whole, frac = run_bins(patterns, starts, job)
    return (whole if estimator == "bins" else frac) * bin_s


@dataclass(frozen=True)
class StartChoice:
    """Algorithm 1's answer for one pattern, with every start option's estimate.

    Attributes
    ----------
    alpha : float
        The policy's weight of delay against run time.
    bin_s : float
        The bin length L (s).
    estimator : str
        How run times were estimated: ``bins`` or ``fractional``.
    index : int
        Chosen start option (0 = start now).
    delay, run_time, total_time, score : float
        Of the chosen option, in seconds (``total_time = delay + run_time``).
    option_delay, option_run_time, option_score : ndarray
        Per start option ``0..N-1``.
    """

    alpha: float
    bin_s: float
    estimator: str
    index: int
    delay: float
    run_time: float
    score: float
    option_delay: np.ndarray
    option_run_time: np.ndarray
    option_score: np.ndarray

    @property
    def total_time(self) -> float:
        """Seconds from the earliest start to the end: the delay plus the run time."""
        return self.delay + self.run_time

    def options_frame(self) -> pd.DataFrame:
        """One row per start option: option, delay_s, run_time_s, total_time_s, score, chosen."""
        import pandas as pd

        return pd.DataFrame(self.options_columns())

    def options_columns(self) -> dict[str, np.ndarray]:
        """The columns of :meth:`options_frame` as arrays (no pandas to import)."""
        return {
            "option": np.arange(len(self.option_delay)),
            "delay_s": self.option_delay,
            "run_time_s": self.option_run_time,
            "total_time_s": self.option_delay + self.option_run_time,
            "score": self.option_score,
            "chosen": np.arange(len(self.option_delay)) == self.index,
        }


def choose_start(
    pattern: str | Sequence[int] | np.ndarray,
    min_time: float,
    max_time: float,
    *,
    alpha: float | None = None,
    policy: str | None = None,
    bin_s: float = 300.0,
    n_options: int = 24,
    estimator: str = "bins",
) -> StartChoice:
    """Pick the start delay minimising ``alpha * delay + (1 - alpha) * run_time``.

    Parameters
    ----------
    pattern : str or sequence of 0/1
        Predicted bursts of the next bins (24 five-minute bins in the paper).
    min_time, max_time : float
        Run time of the job alone and in bursts all along, in seconds.
    alpha : float, optional
        Weight of the delay; or give ``policy``.
    policy : {"MDT", "W1", "W2", "W3", "W4", "MRT"}, optional
        Named alpha (1, 0.7, 0.6, 0.5, 0.4, 0).
    bin_s : float, default 300
        Bin length ``L`` (the prediction interval).
    n_options : int, default 24
        Start options ``0, L, ..., (N-1) L``; ``N * (ceil(max_time / L) + 1)`` may not
        exceed ``MAX_WALK_CELLS`` (2**24), which bounds the memory of the walk.
    estimator : {"bins", "fractional"}, default "bins"
        ``"bins"`` charges whole bins as the paper does; ``"fractional"`` charges the
        last bin only up to the moment the work is done.

    Notes
    -----
    iosight's reading of Algorithm 1 (docs/methods.md §2): bins past the pattern are bursts;
    start option ``i`` (0-based) has delay ``i * L``; ties keep the earliest option.

    References
    ----------
    .. [1] Saeedizade, Taheri, Arslan, "I/O Burst Prediction for HPC Clusters using
       Darshan Logs", §V-B, Algorithm 1.
    """
    a = policy_alpha(policy, alpha)
    job = JobBins.of(min_time, max_time, bin_s)
    pat = parse_pattern(pattern)[None, :]
    run = option_run_times(pat, job, n_options=n_options, bin_s=bin_s, estimator=estimator)
    best, score = choose_among(run, a, bin_s)
    i = int(best[0])
    delays = np.arange(run.shape[1]) * float(bin_s)
    return StartChoice(
        alpha=a,
        bin_s=float(bin_s),
        estimator=estimator,
        index=i,
        delay=float(delays[i]),
        run_time=float(run[0, i]),
        score=float(score[0, i]),
        option_delay=delays,
        option_run_time=run[0],
        option_score=score[0],
    )
