"""The timeline's sums kept apart by when their jobs became known, on demand (issue #27).

A Darshan log is written when its job ends, so a forecast made at time T may use only
the I/O of the jobs known by T (``jobs.known_at``, else the end time). :func:`known_sums`
streams the stored timeline's jobs again, with the options it was built with, and sums
each contribution by its bin and by the bin its job's known-at time falls in
(``known_start = floor(known_at / width) * width``, known at the end of that bin): one
row per (``bin_start``, ``known_start``) that a job touches. Summed over
``known_start`` the rows are the ``timeline``. Nothing is stored: a full timeline
build does none of this work, and the regime ``logs`` of ``iosight bursts train``
computes it when it is asked for (docs/bursts.md says what it costs).

The sums are built in O(records + rows), as :func:`~iosight.timeline.bin_intervals`
builds the timeline: an interval's first and last bins take their shares directly and
the bins in between an equal share through a difference array, here keyed by (known
bin, bin); every share is an integer limb (:func:`_limbs`), so the sums are exact and
do not depend on the order the records stream in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError
from iosight.timeline._binning import interval_shares, touched_bins
from iosight.timeline._build import VALUE_COLUMNS, accumulate_as_built

if TYPE_CHECKING:
    import pandas as pd

    from iosight._progress import Progress
    from iosight.warehouse import Warehouse

KNOWN_COLUMNS = ("bin_start", "bin_width", "known_start", *VALUE_COLUMNS, "active_jobs")
_FRAC = 2.0**-32  # the unit of the fraction limb: each contribution is kept to 2**-33
_REDUCE_ROWS = 1 << 22  # partial rows held before they are summed together
_SUMS = 2 * len(VALUE_COLUMNS)  # a whole and a fraction limb per value

Part = tuple[np.ndarray, np.ndarray, np.ndarray]  # k, b, sums (rows x columns, int64)


def known_sums(
    warehouse: Warehouse,
    progress: Progress | None = None,
    *,
    known: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """The stored timeline's sums per (bin, known-at bin): ``KNOWN_COLUMNS`` rows sorted
    by ``known_start``, then ``bin_start``, of the jobs and with the options the stored
    ``timeline`` was built with (rebuild the timeline after adding jobs). ``known=(lo,
    hi)``: only the jobs known in ``[lo, hi)`` (follow mode's forecasts take the jobs
    known since their last forecast; no job there: no rows).

    ``warehouse``: the warehouse holding the timeline and its jobs; ``progress``: told of the
    jobs streamed (default: silent).
    """
    acc = accumulate_as_built(warehouse, KnownBins, progress, known)
    if not acc.parts["active"] and known is None:
        raise IosightError("no jobs with start times to build a timeline from")
    return acc.frame()


class KnownBins:
    """Sums per (known bin ``k``, bin ``b``) on the lattice ``index * width``.

    An interval puts its first and last bins' shares into ``points`` and its equal
    share of each bin in between into ``runs``, a difference array (``+share`` at the
    first of them, ``-share`` past the last) keyed by ``(k, b)``; a job counts in
    ``active`` the same way. All are integer limbs (:func:`_limbs`), summed per key as
    they grow; :meth:`frame` runs the differences (exact: a run ends at exactly 0) and
    adds the points."""

    known = True  # the timeline's streams give each row its job's known-at time

    def __init__(self, width: float, spread: str) -> None:
        self.width, self.spread = width, spread
        self.parts: dict[str, list[Part]] = {"points": [], "runs": [], "active": []}
        self.rows = 0

    def add(
        self, t0: np.ndarray, t1: np.ndarray, values: np.ndarray, cols: list[int], known
    ) -> None:
        """Spread ``values`` (columns ``cols`` of VALUE_COLUMNS) over ``[t0, t1]`` (epoch s),
        each row known at ``known`` (epoch s)."""
        if not len(t0):
            return
        t1 = np.maximum(t1, t0)
        k = self._index(known)
        b0, b1 = touched_bins(t0, t1, self.width)
        multi = np.flatnonzero(b1 > b0)
        first, last, middle = interval_shares(
            t0[multi], t1[multi], b0[multi], b1[multi], self.width, self.spread
        )
        share0 = np.ones(len(t0))
        share0[multi] = first
        keys = (np.concatenate([k, k[multi]]), np.concatenate([b0, b1[multi]]))
        shares = np.concatenate([share0, last])[:, None] * values[np.r_[: len(t0), multi]]
        self._keep("points", (*keys, _limb_columns(shares, cols)))
        mid = np.flatnonzero(b1[multi] - b0[multi] > 1)
        rows = multi[mid]
        run = _limb_columns(middle[mid, None] * values[rows], cols)
        starts = (np.concatenate([k[rows], k[rows]]), np.concatenate([b0[rows] + 1, b1[rows]]))
        self._keep("runs", (*starts, np.concatenate([run, -run])))

    def add_jobs(self, start: np.ndarray, end: np.ndarray, known) -> None:
        """Count each job once in every bin its ``[start, end]`` touches."""
        end = np.maximum(end, start)
        k = self._index(known)
        b0, b1 = touched_bins(start, end, self.width)
        ones = np.ones((len(k), 1), dtype=np.int64)
        self._keep("active", (np.r_[k, k], np.r_[b0, b1 + 1], np.concatenate([ones, -ones])))

    def frame(self) -> pd.DataFrame:
        """The sums as ``KNOWN_COLUMNS`` rows sorted by ``known_start``, ``bin_start``."""
        import pandas as pd

        runs = _run(_reduce(self.parts["runs"], _SUMS))
        values = _reduce([*self.parts["points"], runs], _SUMS)
        k, b, sums = _joined(values, _run(_reduce(self.parts["active"], 1)))
        w = self.width
        out = {"bin_start": b * w, "bin_width": np.full(len(b), w), "known_start": k * w}
        for j, c in enumerate(VALUE_COLUMNS):
            whole, frac = sums[:, 2 * j].astype(np.float64), sums[:, 2 * j + 1]
            out[c] = whole + frac.astype(np.float64) * _FRAC
        out["active_jobs"] = sums[:, -1]
        return pd.DataFrame(out, columns=list(KNOWN_COLUMNS))

    def _index(self, known) -> np.ndarray:
        return np.floor(np.asarray(known, dtype=np.float64) / self.width).astype(np.int64)

    def _keep(self, name: str, part: Part) -> None:
        if not len(part[0]):
            return
        self.parts[name].append(part)
        self.rows += len(part[0])
        if self.rows > _REDUCE_ROWS:
            for key, kept in self.parts.items():
                self.parts[key] = [_reduce(kept, kept[0][2].shape[1])] if kept else []
            self.rows = sum(len(p[0]) for kept in self.parts.values() for p in kept)


def _limb_columns(shares: np.ndarray, cols: list[int]) -> np.ndarray:
    """``shares`` (columns ``cols`` of VALUE_COLUMNS) as the ``_SUMS`` limb columns."""
    out = np.zeros((len(shares), _SUMS), dtype=np.int64)
    for i, j in enumerate(cols):
        out[:, 2 * j], out[:, 2 * j + 1] = _limbs(shares[:, i])
    return out


def _limbs(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative ``v`` as integers ``whole + frac * 2**-32``: sums of these are exact
    and do not depend on their order (``whole`` holds 2**63 bytes, ``frac`` 2**31 terms)."""
    whole = np.floor(v)
    return whole.astype(np.int64), np.rint((v - whole) / _FRAC).astype(np.int64)


def _run(diff: Part) -> Part:
    """Every (``k``, ``b``) a difference array ``diff`` (sorted, summed per key) covers
    with a non-zero running sum, and that sum: the runs of each ``k`` expanded."""
    k, b, d = diff
    if not len(k):
        return diff
    total = np.cumsum(d, axis=0)
    first = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    before = np.zeros_like(total[:1])
    base = np.concatenate([before, total[first[1:] - 1]])  # the sum before each k
    level = total - np.repeat(base, np.diff(np.r_[first, len(k)]), axis=0)
    same_k = np.r_[k[1:] == k[:-1], False]
    keep = np.flatnonzero(same_k & (level != 0).any(axis=1))
    length = b[keep + 1] - b[keep]
    rows = np.repeat(keep, length)
    step = np.arange(len(rows)) - np.repeat(np.cumsum(length) - length, length)
    return k[rows], b[rows] + step, level[rows]


def _reduce(parts: list[Part], width: int) -> Part:
    """The parts (``width`` columns) summed per (``k``, ``b``), sorted by ``k`` then
    ``b`` (integer sums: exact, whatever the order of the parts)."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros((0, width), dtype=np.int64)
    k, b, sums = (np.concatenate(x) for x in zip(*parts, strict=True))
    order = np.argsort(_codes(k, b), kind="stable")
    k, b = k[order], b[order]
    first = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (b[1:] != b[:-1])])
    return k[first], b[first], np.add.reduceat(sums[order], first, axis=0)


def _joined(values: Part, active: Part) -> Part:
    """Value sums and active-job counts on the union of their (``k``, ``b``), sorted,
    the counts as the last column."""
    k = np.concatenate([values[0], active[0]])
    b = np.concatenate([values[1], active[1]])
    codes = _codes(k, b)
    keys, first = np.unique(codes, return_index=True)
    out = np.zeros((len(keys), _SUMS + 1), dtype=np.int64)
    n = len(values[0])
    out[np.searchsorted(keys, codes[:n]), :_SUMS] = values[2]
    out[np.searchsorted(keys, codes[n:]), _SUMS] = active[2][:, 0]
    return k[first], b[first], out


def _codes(k: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One int64 per (``k``, ``b``) that sorts as the pair does."""
    if not len(k):
        return k
    k0, b0 = int(k.min()), int(b.min())
    span = int(b.max()) - b0 + 1
    if (int(k.max()) - k0 + 1) * span >= 2**62:
        raise IosightError("the timeline spans too many bins: use wider bins")
    return (k - k0) * span + (b - b0)
