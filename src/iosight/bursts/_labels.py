"""Burst thresholds and severity classes (Saeedizade et al., 2023, §IV, §V-A).

Read as in docs/methods.md §1."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iosight._errors import IosightError, check_param

SEVERITY_CAP = 10.0  # stdevs above the mean where class 5 starts for good (§V-A)
N_SEVERITY = 5


@dataclass(frozen=True)
class BurstLabels:
    """Bursts of one series: ``value > mean + k * std``.

    Attributes
    ----------
    mean, std : float
        Mean and (population) standard deviation of the reference bins.
    k : float
        Threshold in standard deviations above the mean.
    threshold : float
        ``mean + k * std`` in the series' units.
    is_burst : ndarray of bool
    severity : ndarray of int
        0 = no burst, 1..5 as in :func:`severity_classes`.
    """

    mean: float
    std: float
    k: float
    threshold: float
    is_burst: np.ndarray
    severity: np.ndarray

    @property
    def fraction(self) -> float:
        """Share of bins that are bursts."""
        return float(self.is_burst.mean()) if self.is_burst.size else 0.0

    def sigma(self, values: np.ndarray) -> np.ndarray:
        """``(values - mean) / std``: distance from the mean in standard deviations.

        ``values``: bytes per bin.
        """
        return (np.asarray(values, dtype=np.float64) - self.mean) / self.std


def choose_k(values: np.ndarray, target_fraction: float = 0.01) -> float:
    """The k for which at most ``target_fraction`` of the bins exceed ``mean + k * std``.

    iosight's reading of §IV ("a threshold value that returns around 1% of all data
    points"): with ``m = floor(target_fraction * n)``, the threshold is the (m+1)-th
    largest value, so exactly m bins exceed it when values are distinct (fewer on ties).
    """
    v = _check_values(values)
    check_param("target_fraction", target_fraction, 0 < target_fraction < 1, "a fraction in (0, 1)")
    mean, std = float(v.mean()), float(v.std())
    if std == 0:
        raise IosightError("the series is constant; it has no bursts")
    m = int(np.floor(target_fraction * v.size))
    kth = float(np.partition(v, v.size - 1 - m)[v.size - 1 - m])
    return (kth - mean) / std


def severity_classes(sigma: np.ndarray, k: float, *, cap: float = SEVERITY_CAP) -> np.ndarray:
    """Severity 0..5 from distances to the mean in stdevs (§V-A).

    Class 0 is no burst (``sigma <= k``); ``(k, cap]`` is cut into five equal parts,
    classes 1-5; everything above ``cap`` stdevs is class 5. When ``k >= cap`` every
    burst is class 5.
    """
    sigma = np.asarray(sigma, dtype=np.float64)
    burst = sigma > k
    width = (cap - k) / N_SEVERITY
    if width <= 0:
        return np.where(burst, N_SEVERITY, 0).astype(np.int64)
    cls = np.ceil((sigma - k) / width)  # (k, k + w] is class 1, (k + w, k + 2w] class 2, ...
    return np.where(burst, np.clip(cls, 1, N_SEVERITY), 0).astype(np.int64)


def label_bursts(
    values: np.ndarray,
    *,
    k: float | None = None,
    target_fraction: float = 0.01,
    reference: np.ndarray | None = None,
    name: str = "the series",
) -> BurstLabels:
    """Label burst bins of one series (read or write bytes per bin), §IV.

    A burst lies above the mean, so a threshold at or below it (``k <= 0``, or a
    threshold <= 0) is refused with an error saying why: on a mostly empty timeline the
    ``target_fraction`` largest bins include empty ones, and every bin with any I/O
    would be a "burst".

    Parameters
    ----------
    values : ndarray
        One value per bin.
    k : float, optional
        Threshold in stdevs above the mean; chosen with :func:`choose_k` when None.
    target_fraction : float, default 0.01
        Share of bins that should be bursts when ``k`` is chosen.
    reference : ndarray, optional
        Bins that define mean, stdev and k (e.g. only the training part, so a test
        period does not leak into its own labels); default ``values`` (the paper).
    name : str
        What the series is, for the error messages (e.g. "write bytes per bin").
    """
    v = _check_values(values, allow_empty=reference is not None)
    ref = v if reference is None else _check_values(reference)
    mean, std = float(ref.mean()), float(ref.std())
    if std == 0:
        raise IosightError(f"{name} is constant; it has no bursts")
    chosen = k is None
    if chosen:
        k = choose_k(ref, target_fraction)
    else:
        ok = bool(np.isfinite(k)) and k > 0
        check_param("k", k, ok, "a positive, finite number of standard deviations")
    _check_threshold(ref, k, mean + k * std, target_fraction if chosen else None, name)
    sigma = (v - mean) / std
    return BurstLabels(
        mean=mean,
        std=std,
        k=float(k),
        threshold=mean + float(k) * std,
        is_burst=sigma > k,
        severity=severity_classes(sigma, float(k)),
    )


def _check_threshold(ref, k: float, threshold: float, fraction: float | None, name: str):
    """Refuse, in one line, a threshold at or below the mean (``k <= 0``, e.g. chosen for
    ``fraction`` bursts on mostly empty bins) or at or below 0."""
    if k > 0 and threshold > 0:
        return
    empty = int(np.count_nonzero(ref == 0))
    target = f" for {fraction:.0%} bursts" if fraction is not None else ""
    above = f"the mean (k = {k:.3g})" if k <= 0 else f"0 (mean + k * std = {threshold:.4g})"
    raise IosightError(
        f"{name} has no bursts to find: {empty:,} of its {ref.size:,} bins are empty and "
        f"the threshold{target} is not above {above}; build the timeline over the span "
        "the jobs ran (timeline build --since/--until) or with wider bins"
    )


def check_finite(values, what: str = "the series") -> np.ndarray:
    """``values`` as a flat float array; an error when any is NaN or infinite (a timeline
    with holes is repaired by rebuilding it, never guessed at)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(v)):
        raise IosightError(f"{what} has NaN or infinite values")
    return v


def _check_values(values: np.ndarray, *, allow_empty: bool = False) -> np.ndarray:
    v = check_finite(values)
    if not allow_empty and v.size < 2:
        raise IosightError(f"need at least 2 bins to find bursts, got {v.size}")
    return v
