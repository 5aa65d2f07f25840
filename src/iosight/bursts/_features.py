"""Feature sets 1-3 of Saeedizade et al. (2023), §V (docs/methods.md §1).

Set 1: bytes of the current bin. Set 2: bytes, operations and I/O time. Set 3: set 2 plus
EMAs of bytes over 60, 130, 500 and 1000 minutes, ``MACD_short = EMA60 - EMA130`` and
``MACD_long = EMA500 - EMA1000`` (iosight's reading of the garbled Eq. 3: the standard
MACD the paper cites). ``E_t = a x_t + (1 - a) E_{t-1}`` with ``a = 2 / (n + 1)`` and n the
window in bins. Set 4 (beyond the paper): set 3, the current state relative to the burst
threshold (is bin t a burst, the signed length of the current burst (+) or calm (-) run,
bytes / threshold) and the state of running jobs (:mod:`iosight.bursts._jobstate`):
running jobs, their elapsed time against their application's run lengths, and the
expected I/O of running jobs in each of the next 24 bins, alone and as a share of the
current bytes (``carry_L = bytes_t * expected_L / expected_0``). Features at bin t use
only bins up to and including t and jobs started before its end; under the ``logs``
regime, only the bins' parts the logs held at its end (:mod:`iosight.bursts._known`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param
from iosight.bursts._analysis import check_direction
from iosight.bursts._jobstate import N_AHEAD, job_state
from iosight.bursts._known import check_information, known_ema, known_now, known_rows
from iosight.bursts._nowcast import nowcast, unseen_bytes

if TYPE_CHECKING:
    import pandas as pd

FEATURE_SETS = (1, 2, 3, 4)
EMA_MINUTES = (60, 130, 500, 1000)


def check_feature_set(feature_set: int) -> None:
    check_param("feature_set", feature_set, feature_set in FEATURE_SETS, "1, 2, 3 or 4")


def ema_span_bins(minutes: float, bin_width: float) -> int:
    """The EMA window n in bins of ``bin_width`` seconds (at least 1)."""
    return max(1, int(round(minutes * 60.0 / bin_width)))


def ema(x: np.ndarray, n: int) -> np.ndarray:
    """``E_t = a x_t + (1 - a) E_{t-1}``, ``a = 2/(n+1)``, ``E_0 = x_0`` (Eq. 1-2); causal."""
    import pandas as pd

    return pd.Series(np.asarray(x, dtype=np.float64)).ewm(alpha=2.0 / (n + 1), adjust=False).mean()


def feature_names(direction: str, feature_set: int, information: str = "live") -> list[str]:
    """Column names of a feature set, in the order models see them (``logs``, set 4: and
    the nowcast of the current bin, :mod:`iosight.bursts._nowcast`).

    ``direction``: ``read`` or ``write``; ``feature_set``: 1 to 4; ``information``: ``live`` or
    ``logs``.
    """
    check_direction(direction)
    check_feature_set(feature_set)
    check_information(information)
    names = [f"{direction}_bytes"]
    if feature_set >= 2:
        names += [f"{direction}_ops", f"{direction}_time"]
    if feature_set >= 3:
        names += [f"ema{m}" for m in EMA_MINUTES] + ["macd_short", "macd_long"]
    if feature_set == 4:
        names += ["burst_now", "run_length", "over_threshold", "running_jobs", "elapsed_ratio"]
        names += ["expected_0"] + [f"share_{lead}" for lead in range(1, N_AHEAD + 1)]
        names += [f"carry_{lead}" for lead in range(1, N_AHEAD + 1)]
        names += ["nowcast"] if information == "logs" else []
    return names


def run_length(flags: np.ndarray, before: float = 0.0) -> np.ndarray:
    """Signed length of the run holding each bin so far: +n in the n-th bin of a run of
    True, -n in the n-th bin of a run of False (causal); ``before``: the signed length at
    the bin before the first (a series continued bin by bin, as follow mode makes it).

    ``flags``: burst flags per bin.
    """
    f = np.asarray(flags, dtype=bool)
    if f.size == 0:
        return np.zeros(0)
    new = np.flatnonzero(np.r_[True, f[1:] != f[:-1]])
    lengths = np.arange(f.size) - np.repeat(new, np.diff(np.r_[new, f.size])) + 1
    if before and (before > 0) == f[0]:
        lengths[: new[1] if new.size > 1 else f.size] += int(abs(before))
    return np.where(f, lengths, -lengths).astype(np.float64)


def burst_runs(
    level: np.ndarray, threshold: float, restart: int, before: float = 0.0
) -> np.ndarray:
    """Set 4's ``run_length`` of the bursts of ``level``, counted afresh from index
    ``restart`` (under ``logs``: the bin the first job became known in, before which the
    logs knew nothing), continued from ``before`` at the bin before the first."""
    burst = np.asarray(level) > threshold
    if restart <= 0:
        return run_length(burst, before)
    return np.r_[run_length(burst[:restart], before), run_length(burst[restart:])]


def first_known_bin(jobs: pd.DataFrame, bin_start: np.ndarray, width: float) -> int:
    """Index in ``bin_start`` of the bin in which the first job of ``jobs`` became known
    (its log landed: ``known_at``); the number of bins when none is known in them."""
    known = jobs["known_at"].to_numpy(np.float64) if "known_at" in jobs else np.zeros(0)
    known = known[np.isfinite(known)]
    if not known.size:
        return len(bin_start)
    ends = np.asarray(bin_start, np.float64) + width
    return int(np.searchsorted(ends, known.min(), side="right"))


def make_features(
    df: pd.DataFrame,
    direction: str,
    feature_set: int,
    *,
    jobs: pd.DataFrame | None = None,
    threshold: float | None = None,
    known: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The feature matrix of a timeline (one row per bin, same index as ``df``).

    Parameters
    ----------
    df : DataFrame
        A timeline with one bin width (:func:`iosight.timeline.load_timeline` or ``rebin``).
    direction : {"read", "write"}
        Read and write models are separate (§V).
    feature_set : {1, 2, 3, 4}
    jobs : DataFrame, optional
        Set 4 only: :func:`iosight.bursts.load_jobs` of the warehouse.
    threshold : float, optional
        Set 4 only: the burst threshold (bytes per bin) the current state is measured
        against.
    known : DataFrame, optional
        The known-at sums (regime ``logs``, :func:`iosight.bursts.load_known`): every
        feature at bin t is then computed from what the logs held at its end
        (:mod:`iosight.bursts._known`), and set 4 measures the current state on the
        nowcast (known part plus the unseen jobs' bytes at their analogs' rates,
        :mod:`iosight.bursts._nowcast`).
    """
    import pandas as pd

    from iosight.timeline import bin_width_of

    names = feature_names(direction, feature_set, "live" if known is None else "logs")
    width = bin_width_of(df)
    starts = df["bin_start"].to_numpy(np.float64)
    rows = None if known is None else known_rows(known, starts, width)
    out = pd.DataFrame(index=df.index)
    for col in names[: 3 if feature_set >= 2 else 1]:
        out[col] = df[col].to_numpy(np.float64) if rows is None else known_now(rows, col)
    x = out[f"{direction}_bytes"].to_numpy()
    if feature_set >= 3:
        for m in EMA_MINUTES:
            n = ema_span_bins(m, width)
            col = f"{direction}_bytes"
            out[f"ema{m}"] = ema(x, n).to_numpy() if rows is None else known_ema(rows, col, n)
        out["macd_short"] = out["ema60"] - out["ema130"]
        out["macd_long"] = out["ema500"] - out["ema1000"]
    if feature_set == 4:
        if jobs is None or threshold is None:
            raise IosightError("feature set 4 needs the jobs (load_jobs) and a burst threshold")
        st = job_state(jobs, starts, width, direction)
        level = x if rows is None else nowcast(x, unseen_bytes(jobs, starts, width, direction))
        restart = 0 if rows is None else first_known_bin(jobs, starts, width)
        cols = state_features(level, st, threshold, burst_runs(level, threshold, restart))
        if rows is not None:
            cols["nowcast"] = level
        out = pd.concat([out, pd.DataFrame(cols, index=df.index)], axis=1)
    return out[names]


def state_features(
    level: np.ndarray, st, threshold: float, runs: np.ndarray
) -> dict[str, np.ndarray]:
    """Set 4's state columns from the current bin's bytes ``level`` (complete, or the
    nowcast), the running jobs' state ``st`` and the burst runs (:func:`burst_runs`)."""
    burst = level > threshold
    cols = {"burst_now": burst.astype(np.float64), "run_length": runs,
            "over_threshold": level / threshold if threshold > 0 else level,
            "running_jobs": st.running, "elapsed_ratio": st.elapsed_ratio}  # fmt: skip
    now = st.expected[:, 0]
    share = np.divide(st.expected, now[:, None], out=np.zeros_like(st.expected),
                      where=now[:, None] > 0)  # fmt: skip
    cols["expected_0"] = now
    for lead in range(1, N_AHEAD + 1):
        cols[f"share_{lead}"] = share[:, lead]
    for lead in range(1, N_AHEAD + 1):
        cols[f"carry_{lead}"] = level * share[:, lead]
    return cols
