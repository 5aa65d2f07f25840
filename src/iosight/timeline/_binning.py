"""Spreading intervals over fixed-width time bins (Saeedizade et al. (2023), §IV, Fig. 2).

:func:`bin_intervals` is O(rows + bins): an interval's first and last bins take their
shares directly and the bins in between take equal shares through a difference array,
so nothing is expanded per (row, bin) pair; intervals inside one bin (most of them) take
one entry and nothing else. Shares are sparse (bins x rows) matrices applied to all
value columns in one product (up to ``SMALL_ROWS`` rows, ``np.add.at``: the same sums).
The difference array is summed in integers, exactly (a float cumulative sum leaves
``(a + b) - b != a`` rounding behind every interval), so a bin no interval touches is
exactly 0 and no bin is negative.
:func:`spread_fractions` gives the same split as explicit (row, bin, fraction) triples.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from iosight._errors import check_param

SPREADS = ("overlap", "equal")
BLOCK_ROWS = 1 << 17  # rows binned at once: 1 MB per float64 temporary
LIMB_BITS = 53 - BLOCK_ROWS.bit_length()  # a block's sums of limbs stay below 2**53 (_exact_runs)


def check_spread(spread: str) -> None:
    check_param("spread", spread, spread in SPREADS, "'overlap' or 'equal'")


def touched_bins(rel_start: np.ndarray, rel_end: np.ndarray, width: float, dtype=np.int64):
    """First and last bin index touched by each interval (times relative to the origin).

    An interval ``[s, e]`` with ``e > s`` touches bins ``floor(s/w)`` to ``ceil(e/w) - 1``
    (ending exactly on a bin edge does not touch the next bin); a zero-length
    interval touches the one bin containing ``s``.
    """
    b0 = np.floor(rel_start / width).astype(dtype)
    b1 = np.ceil(rel_end / width).astype(dtype)
    b1 -= 1  # <= b0 exactly when e == s
    return b0, np.maximum(b1, b0, out=b1)


def spread_fractions(
    rel_start: np.ndarray, rel_end: np.ndarray, width: float, spread: str = "overlap"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expand intervals into ``(row, bin, fraction)`` triples; each row's fractions sum to 1.

    Parameters
    ----------
    rel_start, rel_end : ndarray of float
        Interval ends in seconds relative to the timeline origin (``rel_end >= rel_start``).
    width : float
        Bin width in seconds.
    spread : {"overlap", "equal"}
        ``"equal"`` splits a value equally among the touched bins (the paper, §IV);
        ``"overlap"`` splits it in proportion to the time the interval spends in each
        bin (iosight's default, docs/methods.md §1). A zero-length interval puts everything in
        one bin in both modes.
    """
    check_spread(spread)
    b0, b1 = touched_bins(rel_start, rel_end, width)
    n = b1 - b0 + 1
    rows = np.repeat(np.arange(len(n), dtype=np.int64), n)
    first = np.cumsum(n) - n
    bins = b0[rows] + (np.arange(rows.size, dtype=np.int64) - first[rows])
    if spread == "equal":
        return rows, bins, 1.0 / n[rows]
    s, e = rel_start[rows], rel_end[rows]
    lo = bins * width
    overlap = np.minimum(e, lo + width) - np.maximum(s, lo)
    dur = e - s
    frac = np.where(dur > 0, np.clip(overlap, 0.0, None) / np.where(dur > 0, dur, 1.0), 1.0)
    # renormalise so each row sums to exactly 1 despite rounding at the bin edges
    total = np.bincount(rows, weights=frac, minlength=len(n))
    return rows, bins, frac / total[rows]


def bin_intervals(
    rel_start: np.ndarray,
    rel_end: np.ndarray,
    values: np.ndarray,
    *,
    width: float,
    n_bins: int,
    spread: str = "overlap",
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Sum ``values`` (shape ``(n_rows, n_cols)``) over ``n_bins`` bins of ``width`` seconds.

    Intervals must lie in ``[0, n_bins * width]`` relative to the origin. Returns (or adds
    into ``out``) an array of shape ``(n_bins, n_cols)``. The same bins as
    :func:`spread_fractions` in O(rows + bins) time and memory: an interval puts its first
    and last bins' shares directly and its equal share of every bin in between through a
    difference array, summed exactly (:func:`_exact_runs`). Bins no interval touches
    are exactly 0, and no bin is negative when no value is.

    ``rel_start``: interval starts, seconds from the origin; ``rel_end``: interval ends;
    ``spread``: ``overlap`` or ``equal`` (:func:`spread_fractions`).
    """
    rel_start = np.asarray(rel_start, dtype=np.float64)
    rel_end = np.asarray(rel_end, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    check_spread(spread)
    if out is None:
        out = np.zeros((n_bins, values.shape[1]))
    if not rel_start.size:
        return out
    # the touched bins grow with start and end, so the extremes bound them all: check
    # before any block is added into ``out``
    s_ext = np.array([rel_start.min(), rel_start.max()])
    b0, b1 = touched_bins(s_ext, np.maximum(s_ext, [rel_end.min(), rel_end.max()]), width)
    if b0[0] < 0 or b1[1] >= n_bins:
        raise ValueError("intervals fall outside the timeline range")
    # blocks of BLOCK_ROWS rows keep every temporary in cache and out of fresh pages
    # (docs/bursts.md, "Timeline benchmark": blocks against one pass)
    runs = _Runs(out)
    for lo in range(0, len(rel_start), BLOCK_ROWS):
        hi = lo + BLOCK_ROWS
        block = rel_start[lo:hi], rel_end[lo:hi], values[lo:hi]
        _bin_block(*block, width, n_bins, spread, out, runs)
    runs.flush()
    return out


def _bin_block(rel_start, rel_end, values, width, n_bins, spread, out, runs) -> None:
    """Add one block of intervals: first and last bins' shares into ``out``, the equal
    share of each bin in between into ``runs``.

    The first and last shares are sparse (bins x rows) matrices times the block's values,
    so one pass over the rows fills every value column (``csc_matvecs``; a ``bincount``
    per column reads the rows once per column). Intervals inside one bin have one entry.
    """
    x = np.ascontiguousarray(values)  # scipy's product copies a strided operand
    rel_end = np.maximum(rel_end, rel_start)
    index = np.int32 if n_bins < 2**31 - 1 else np.int64  # scipy's own: no conversion
    b0, b1 = touched_bins(rel_start, rel_end, width, index)
    multi = np.flatnonzero(b1 > b0)
    b0m, b1m = b0[multi], b1[multi]
    first, last, middle = interval_shares(rel_start[multi], rel_end[multi], b0m, b1m, width, spread)
    share0 = np.ones(len(b0))
    share0[multi] = first
    xm = np.take(x, multi, axis=0)  # np.take: much faster than x[multi] on 2-D rows
    _add_scattered(out, b0, share0, x)
    _add_scattered(out, b1m, last, xm)
    mid = np.flatnonzero(b1m - b0m > 1)
    if mid.size:
        runs.add(b0m[mid] + 1, b1m[mid], middle[mid, None] * np.take(xm, mid, axis=0))


class _Runs:
    """Rows of values to add into runs of bins of ``out``, gathered up to ``BLOCK_ROWS``
    rows and then summed by :func:`_exact_runs`: its work over the bins (a cumulative
    sum) is done once per ``BLOCK_ROWS`` intervals that span bins, not once per block."""

    def __init__(self, out: np.ndarray) -> None:
        self.out = out
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.rows = 0

    def add(self, first: np.ndarray, stop: np.ndarray, per_bin: np.ndarray) -> None:
        """Row ``i`` of ``per_bin`` goes into bins ``first[i] .. stop[i] - 1``."""
        if self.rows + len(first) > BLOCK_ROWS:
            self.flush()
        self.parts.append((first, stop, per_bin))
        self.rows += len(first)

    def flush(self) -> None:
        if self.parts:
            first, stop, per_bin = (np.concatenate(p) for p in zip(*self.parts, strict=True))
            self.parts, self.rows = [], 0
            _exact_runs(first, stop, per_bin, self.out)


def _exact_runs(first: np.ndarray, stop: np.ndarray, per_bin: np.ndarray, out: np.ndarray):
    """Add row ``i`` of ``per_bin`` into every bin ``first[i] .. stop[i] - 1`` of ``out``.

    A difference array (``+v`` at ``first``, ``-v`` at ``stop``, then a cumulative sum)
    in float64 leaves rounding leftovers wherever a run ends, tiny and of either sign,
    in bins no run covers. Here each value is cut into two integer limbs on a fixed
    point grid per column, ``2 * LIMB_BITS`` bits below the column's largest value
    (each value is kept to about 1e-21 of that largest one). With at most
    ``BLOCK_ROWS`` rows every sum of limbs is an integer below ``2**53``, so the
    difference array and its cumulative sum are exact in float64; only putting the
    limbs back together rounds, and a sum of non-negative limbs stays non-negative.
    """
    lo, hi = int(first.min()), int(stop.max())
    rows = np.empty(2 * len(first), dtype=first.dtype)
    rows[0::2], rows[1::2] = first - lo, stop - lo
    signs = np.tile(np.array([1.0, -1.0]), len(first))
    (hi_limb, hi_unit), (lo_limb, lo_unit) = _limbs(per_bin)
    # a column at a time: the difference array and its sums span the runs' bins (a whole
    # timeline's for a batch of jobs from all over it), 8 bytes a bin each
    for limb, unit in ((hi_limb, hi_unit), (lo_limb, lo_unit)):
        for c, diff in enumerate(_column_sums(rows, signs, limb, hi - lo + 1, per=2)):
            out[lo : hi + 1, c] += np.cumsum(diff) * unit[c]  # unit: a power of two


def _limbs(v: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """``v`` (rows x columns) as two integer-valued limbs, each with its power of two
    ``unit`` per column: ``v ~= hi * hi_unit + lo * lo_unit``, both limbs at most
    ``2**LIMB_BITS`` in magnitude."""
    # per column: numpy's max(axis=0) over a few columns is some 30 times slower, but
    # for a few rows (an update's new jobs) one call beats one a column
    if len(v) <= SMALL_ROWS:
        bound = np.abs(v).max(axis=0)
    else:
        bound = np.array([np.abs(v[:, c]).max() for c in range(v.shape[1])])
    scale = np.exp2(np.minimum(2 * LIMB_BITS - np.frexp(bound)[1], 1000))
    scaled = v * scale  # a power of two: exact, and below 2**(2 * LIMB_BITS)
    hi = np.trunc(scaled * 2.0**-LIMB_BITS)
    lo = np.rint(scaled - hi * 2.0**LIMB_BITS)
    return (hi, 2.0**LIMB_BITS / scale), (lo, 1.0 / scale)


SMALL_ROWS = 64  # rows up to which np.add.at sums faster than a sparse product is built


def _add_scattered(out: np.ndarray, rows: np.ndarray, data: np.ndarray, x: np.ndarray) -> None:
    """Add ``data[i] * x[i]`` into row ``rows[i]`` of ``out`` (:func:`_column_sums`)."""
    for c, sums in enumerate(_column_sums(rows, data, x, len(out))):
        out[:, c] += sums


def _column_sums(rows: np.ndarray, data: np.ndarray, x: np.ndarray, n_rows: int, per: int = 1):
    """Per column ``c`` of ``x``, the ``n_rows`` sums of ``data[i] * x[i // per, c]`` into
    row ``rows[i]``: the product of a sparse matrix (:func:`_per_column`, built once) and
    the column. A column at a time, so the temporaries are one column of bins (8 MB for a
    million), not all of them: a batch of job totals, 6 columns over a million bins, made
    333 MB of them (docs/warehouse.md, "`timeline build` at a million, looked into"). Up
    to :data:`SMALL_ROWS` rows of ``x`` (an update's new jobs), ``np.add.at`` instead,
    which adds the same products in the same order (scipy's ``csc_matvec`` adds each
    entry's product into its row, entry after entry, from 0), so the sums are the same
    to the bit, without the fixed cost of building a matrix."""
    if len(x) > SMALL_ROWS:
        spread = _per_column(rows, data, n_rows, per)
        for c in range(x.shape[1]):
            yield spread @ x[:, c]
        return
    for c in range(x.shape[1]):
        sums = np.zeros(n_rows)
        np.add.at(sums, rows, data * (np.repeat(x[:, c], per) if per > 1 else x[:, c]))
        yield sums


def _per_column(rows, data, n_rows: int, per: int = 1):
    """Sparse ``(n_rows, len(rows) // per)`` matrix with ``per`` consecutive entries a
    column (CSC built without sorting or copying)."""
    ptr = np.arange(0, len(rows) + 1, per, dtype=rows.dtype)
    shape = (n_rows, len(ptr) - 1)
    return sparse.csc_array((data, rows, ptr), shape=shape, copy=False)


def interval_shares(s, e, b0, b1, width, spread):
    """Shares of intervals touching several bins: first bin, last bin, each bin between.

    Overlaps are never negative; a bin edge rounded past ``e`` (a width that is no
    binary fraction) gives a last share of 0, not a negative one.
    """
    if spread == "equal":
        each = 1.0 / (b1 - b0 + 1)
        return each, each, each
    dur = e - s  # > 0: the interval touches several bins
    last = np.maximum(e - b1 * width, 0.0)
    return ((b0 + 1) * width - s) / dur, last / dur, width / dur


def count_active(
    rel_start: np.ndarray, rel_end: np.ndarray, *, width: float, n_bins: int
) -> np.ndarray:
    """How many intervals touch each bin (a difference array, O(rows + bins)).

    ``rel_start``: interval starts, seconds from the origin; ``rel_end``: interval ends;
    ``width``: the bin width (s); ``n_bins``: how many bins.
    """
    b0, b1 = touched_bins(
        np.asarray(rel_start, dtype=np.float64),
        np.maximum(np.asarray(rel_end, dtype=np.float64), rel_start),
        width,
    )
    b0 = np.clip(b0, 0, n_bins - 1)
    b1 = np.clip(b1, 0, n_bins - 1)
    diff = np.bincount(b0, minlength=n_bins + 1) - np.bincount(b1 + 1, minlength=n_bins + 1)
    return np.cumsum(diff[:n_bins]).astype(np.int64)
