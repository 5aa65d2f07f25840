"""Burst statistics of a timeline: Fig. 3, 4 and 5 of Saeedizade et al. §IV."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight.bursts._labels import BurstLabels, label_bursts

if TYPE_CHECKING:
    import pandas as pd

DIRECTIONS = ("read", "write")


def check_direction(direction: str) -> None:
    from iosight._errors import check_param

    check_param("direction", direction, direction in DIRECTIONS, "'read' or 'write'")


def deviation_histogram(
    values: np.ndarray, labels: BurstLabels, *, step: float = 0.2, cap: float = 10.0
) -> pd.DataFrame:
    """Bins counted by distance from the mean in ``step``-stdev classes (Fig. 4).

    Class ``c`` holds bins with ``c <= sigma < c + step``; bins above ``cap`` stdevs are
    counted in the last class (the paper caps its x-axis at 10). Columns ``sigma_low``,
    ``count``.
    """
    import pandas as pd

    sigma = np.minimum(labels.sigma(values), cap)
    idx = np.floor(sigma / step + 1e-9).astype(np.int64)
    lo = int(idx.min())
    counts = np.bincount(idx - lo)
    return pd.DataFrame({"sigma_low": (lo + np.arange(counts.size)) * step, "count": counts})


def burst_runs(is_burst: np.ndarray) -> np.ndarray:
    """Lengths of the runs of consecutive burst bins, in time order (Fig. 5)."""
    b = np.asarray(is_burst, dtype=np.int8)
    edges = np.diff(np.concatenate([[0], b, [0]]))
    return np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)


def run_length_table(is_burst: np.ndarray) -> pd.DataFrame:
    """How many runs of each length, and the share of burst bins in such runs (Fig. 5)."""
    import pandas as pd

    runs = burst_runs(is_burst)
    if runs.size == 0:
        return pd.DataFrame({"length": [], "runs": [], "bursts": [], "share_of_bursts": []})
    lengths, counts = np.unique(runs, return_counts=True)
    bursts = lengths * counts
    return pd.DataFrame(
        {
            "length": lengths,
            "runs": counts,
            "bursts": bursts,
            "share_of_bursts": bursts / bursts.sum(),
        }
    )


@dataclass
class BurstAnalysis:
    """Thresholds and Fig. 3-5 statistics of both directions of one timeline.

    ``summary``: one row per direction: threshold, bursts, swings; ``labels``: direction to its
    :class:`BurstLabels`; ``histograms``: direction to its deviation histogram (Fig. 3);
    ``runs``: direction to its run-length table (Fig. 4); ``totals``: direction to its bytes per
    burst run (Fig. 5).
    """

    summary: pd.DataFrame
    labels: dict[str, BurstLabels]
    histograms: dict[str, pd.DataFrame] = field(default_factory=dict)
    runs: dict[str, pd.DataFrame] = field(default_factory=dict)
    totals: dict[str, pd.DataFrame] = field(default_factory=dict)


def _swing(x: np.ndarray) -> tuple[float, float]:
    """max/min and 99th/1st percentile ratio, over the bins with some I/O."""
    pos = x[x > 0]
    if pos.size == 0:
        return float("nan"), float("nan")
    p1, p99 = np.percentile(pos, [1, 99])
    return float(pos.max() / pos.min()), float(p99 / p1)


def analyze_bursts(
    df: pd.DataFrame,
    *,
    k_read: float | None = None,
    k_write: float | None = None,
    target_fraction: float = 0.01,
) -> BurstAnalysis:
    """Thresholds, burst fractions, Fig. 4 histograms, Fig. 5 runs and Fig. 3 totals.

    Parameters
    ----------
    df : DataFrame
        A timeline (:func:`iosight.timeline.load_timeline`).
    k_read, k_write : float, optional
        Given thresholds in stdevs; chosen for ``target_fraction`` when None.
    target_fraction : float, default 0.01
        Share of bins labelled bursts when k is chosen (§IV: about 1%).

    Returns
    -------
    BurstAnalysis
        ``summary`` has one row per direction: bins, mean, std, k, threshold (bytes per
        bin), bursts, fraction, largest sigma, share of stand-alone bursts, share of burst
        bins in runs of at most 2, hourly max/min and p99/p1 swings.
    """
    import pandas as pd

    from iosight.timeline import rebin

    hourly = rebin(df, 3600.0) if df["bin_width"].iloc[0] <= 3600 else df
    daily = rebin(df, 86400.0) if df["bin_width"].iloc[0] <= 86400 else df
    monthly = rebin(df, "month")
    ks = {"read": k_read, "write": k_write}
    rows, labels, hists, runs = [], {}, {}, {}
    for d in DIRECTIONS:
        x = df[f"{d}_bytes"].to_numpy(np.float64)
        lab = label_bursts(x, k=ks[d], target_fraction=target_fraction, name=f"{d} bytes per bin")
        labels[d] = lab
        hists[d] = deviation_histogram(x, lab)
        runs[d] = run_length_table(lab.is_burst)
        r = burst_runs(lab.is_burst)
        mx, p = _swing(hourly[f"{d}_bytes"].to_numpy(np.float64))
        rows.append(
            {
                "direction": d,
                "bins": x.size,
                "mean": lab.mean,
                "std": lab.std,
                "k": lab.k,
                "threshold": lab.threshold,
                "bursts": int(lab.is_burst.sum()),
                "fraction": lab.fraction,
                "max_sigma": float(lab.sigma(x).max()),
                "standalone_share": float((r == 1).sum() / max(r.sum(), 1)),
                "share_in_runs_le2": float(r[r <= 2].sum() / max(r.sum(), 1)),
                "hourly_max_over_min": mx,
                "hourly_p99_over_p1": p,
            }
        )
    totals = {"hourly": hourly, "daily": daily, "monthly": monthly}
    return BurstAnalysis(pd.DataFrame(rows), labels, hists, runs, totals)
