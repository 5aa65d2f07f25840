"""The timeline as its logs made it known: what a facility that has only Darshan logs
knows at the end of each bin (regime ``logs``).

A Darshan log, or a job-total row, is written when its job ends, so at the end ``T`` of
bin t the bytes of bin b are known only from the jobs whose logs had landed by ``T``.
The known-at sums (:func:`iosight.timeline.known_sums`, computed when asked for, never
stored) hold the contributions of the jobs known in bin k to bin b (``known_start`` the
start of k); a contribution is known at the end of k. A job is
known only after it ends, so its contributions to bins up to k are final: the series
known at t, ``x^(t)_b``, only grows with t by whole rows. Every level and EMA feature of
:mod:`iosight.bursts._features` is computed on it exactly, in one pass over the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

INFORMATION = ("live", "logs")
_KNOWN_COLUMNS = ("bin_start", "bin_width", "known_start")


def check_information(information: str) -> None:
    check_param("information", information, information in INFORMATION, "'live' or 'logs'")


def load_known(warehouse: Warehouse) -> pd.DataFrame:
    """The stored timeline's known-at sums (:func:`iosight.timeline.known_sums`): its
    jobs streamed again, about as long as a timeline build.

    ``warehouse``: the warehouse read.
    """
    from iosight.timeline import known_sums

    return known_sums(warehouse)


@dataclass(frozen=True)
class KnownRows:
    """Known-at sums on the bins of one series: ``bin`` (index of the bin
    contributed to) and ``known`` (index of the bin at whose end the row is known, never
    before ``bin``; ``n_bins`` or more: known only after the series' last bin)."""

    bin: np.ndarray
    known: np.ndarray
    frame: pd.DataFrame
    n_bins: int

    def values(self, column: str) -> np.ndarray:
        return self.frame[column].to_numpy(np.float64)


def known_rows(
    known: pd.DataFrame, bin_start: np.ndarray, width: float, *, earlier: bool = False
) -> KnownRows:
    """Map known-at sums (``KNOWN_COLUMNS`` rows) onto bins ``bin_start`` (equally
    spaced by ``width``); ``earlier``: keep the rows of bins before the first (negative
    ``bin``), for an EMA continued from earlier bins (:func:`known_ema_sums`)."""
    missing = [c for c in _KNOWN_COLUMNS if c not in known.columns]
    if missing:
        raise IosightError(f"the known-at timeline lacks {missing}")
    if len(known) and not np.allclose(known["bin_width"].to_numpy(np.float64), width):
        raise IosightError(
            f"the known-at timeline's bins are not the timeline's {width:g} s bins; rebuild it"
        )
    starts = np.asarray(bin_start, np.float64)
    n = len(starts)
    origin = float(starts[0]) if n else 0.0
    b = np.rint((known["bin_start"].to_numpy(np.float64) - origin) / width).astype(np.int64)
    k = np.rint((known["known_start"].to_numpy(np.float64) - origin) / width).astype(np.int64)
    k = np.maximum(k, b)  # nothing is known before it happens
    keep = ((b >= 0) | earlier) & (b < n)
    return KnownRows(b[keep], k[keep], known.loc[keep].reset_index(drop=True), n)


def known_now(rows: KnownRows, column: str) -> np.ndarray:
    """Per bin t, the part of bin t's ``column`` known at its end."""
    now = rows.known == rows.bin
    return np.bincount(rows.bin[now], weights=rows.values(column)[now], minlength=rows.n_bins)


def known_ema(rows: KnownRows, column: str, n: int) -> np.ndarray:
    """Per bin t, ``a * sum_{b <= t} (1 - a)^(t - b) x^(t)_b`` with ``a = 2/(n+1)``: the
    EMA (Saeedizade et al. Eq. 1-2, started from 0) of the series as known at the end of
    t. With ``w = 1 - a`` its sum ``S_t = w S_{t-1} + sum_{rows known at t} w^(t-b) v``,
    because rows known at t never change later."""
    return 2.0 / (n + 1) * known_ema_sums(rows, column, n)


def known_ema_sums(rows: KnownRows, column: str, n: int, before: float = 0.0) -> np.ndarray:
    """The sums ``S_t`` of :func:`known_ema` (unscaled by ``a``), continued from ``S`` =
    ``before`` at the bin before the first (follow mode forecasts bin by bin: the same
    sums, operation for operation, as one pass over all bins)."""
    from scipy.signal import lfilter

    w = 1.0 - 2.0 / (n + 1)
    gain = np.power(w, (rows.known - rows.bin).astype(np.float64)) * rows.values(column)
    arriving = np.bincount(rows.known, weights=gain, minlength=rows.n_bins)[: rows.n_bins]
    return lfilter([1.0], [1.0, -w], arriving, zi=[w * before])[0]


def known_share(rows: KnownRows, column: str, lag: int, bins: slice = slice(None)) -> float:
    """Share of the ``column`` total of the bins in ``bins`` that is known ``lag`` bins
    after the end of its bin (0: at its end). NaN without any."""
    sel = np.zeros(rows.n_bins, bool)
    sel[bins] = True
    v = rows.values(column) * sel[rows.bin]
    total = float(v.sum())
    return float(v[rows.known - rows.bin <= lag].sum()) / total if total > 0 else float("nan")
