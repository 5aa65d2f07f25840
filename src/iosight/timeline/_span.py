"""The dense span of a warehouse's jobs, which a timeline covers by default.

A few jobs with start times far from all the others (Darshan 2.x logs whose clock
read 1970, a test log from another decade) stretch a timeline over decades of empty
bins: 5.9 million 5-minute bins for the shared example logs, nearly all of them 0. A
job is left out when its start lies beyond Tukey's outer fences of the jobs' starts,
three interquartile ranges past the quartiles (Tukey, *Exploratory Data Analysis*,
1977: "far out" values), and never when it starts within ``MIN_MARGIN_S`` of the
quartiles, so a burst of jobs on one day cannot make its neighbours outliers.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

SPANS = ("dense", "all")
FAR_OUT = 3.0  # interquartile ranges past the quartiles (Tukey's outer fences)
MIN_MARGIN_S = 30 * 86400.0  # a job within 30 days of the middle half is never left out
MIN_JOBS = 4  # fewer jobs have no quartiles to speak of: all are kept
_METADATA_KEY = b"iosight.left_out"


def fences(q1: float, q3: float) -> tuple[float, float]:
    """The range of job starts kept, from the quartiles ``q1`` and ``q3`` of the starts."""
    margin = max(FAR_OUT * (q3 - q1), MIN_MARGIN_S)
    return q1 - margin, q3 + margin


def quantile_cont(values: np.ndarray, q: float) -> float:
    """The ``q`` quantile of ``values`` interpolated as DuckDB's ``quantile_cont`` does
    (``lo + (hi - lo) * d`` between the order statistics around ``(n - 1) q``), so that
    fences found in numpy equal those a full build finds in SQL, bit for bit."""
    f, c = _around(len(values), q)
    part = np.partition(values, [f, c])
    return _interpolate(float(part[f]), float(part[c]), len(values), q)


def _around(n: int, q: float) -> tuple[int, int]:
    """The ranks of the order statistics the ``q`` quantile of ``n`` values lies between."""
    rn = (n - 1) * q
    return int(np.floor(rn)), int(np.ceil(rn))


def _interpolate(lo: float, hi: float, n: int, q: float) -> float:
    f, c = _around(n, q)
    return lo if f == c else lo + (hi - lo) * ((n - 1) * q - f)


def fences_of(starts: np.ndarray) -> tuple[float, float] | None:
    """The fences of the job starts ``starts`` (numpy); None when too few jobs."""
    if len(starts) < MIN_JOBS:
        return None
    return fences(quantile_cont(starts, 0.25), quantile_cont(starts, 0.75))


def outside(starts: np.ndarray, bounds: tuple[float, float] | None) -> np.ndarray:
    """Which of the job starts ``starts`` lie outside the fences ``bounds`` (None: none)."""
    if bounds is None:
        return np.zeros(len(starts), dtype=bool)
    return (starts < bounds[0]) | (starts > bounds[1])


QUARTILES = (0.25, 0.75)
WINDOW = 1024  # starts kept on each side of a quartile (8 kB each)


def window_ranks(n: int, q: float, window: int = WINDOW) -> tuple[int, int]:
    """The first and last rank (of ``n`` sorted starts) that :class:`Quartiles` keeps
    around the ``q`` quantile."""
    f, c = _around(n, q)
    return max(0, f - window), min(n - 1, c + window)


@dataclass(frozen=True)
class Quartiles:
    """Enough of the counted jobs' starts to find the dense span's fences again when new
    jobs come, without the old jobs: around each quartile, the sorted starts of ranks
    ``first .. first + len(starts) - 1`` (``windows``), and the starts nearest the
    fences (``near``: the latest before the low fence, the earliest from it, the latest
    up to the high fence, the earliest after it; None: no such job), which say whether
    moving a fence moves any job to the other side of it."""

    n: int
    windows: tuple[tuple[int, np.ndarray], ...]
    near: tuple[float | None, float | None, float | None, float | None]

    def to_bytes(self) -> bytes:
        """This as the bytes a timeline keeps: little-endian float64s, ``n``, each
        window's first rank and length, ``near`` (NaN: None), then the windows' starts.
        Read back without parsing or decoding (as JSON with base64, 44 kB of it on
        Summit, the windows were parsed, decoded and encoded again at every update)."""
        head = [self.n, *(x for first, v in self.windows for x in (first, len(v)))]
        head += [np.nan if v is None else v for v in self.near]
        parts = [np.asarray(head, dtype="<f8"), *(v.astype("<f8") for _, v in self.windows)]
        return np.concatenate(parts).tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> Quartiles:
        """The :class:`Quartiles` that :meth:`to_bytes` wrote."""
        values = np.frombuffer(raw, "<f8")
        at = 1 + 2 * len(QUARTILES)  # after n and the windows' ranks and lengths
        near = tuple(None if np.isnan(v) else v for v in values[at : at + 4].tolist())
        at, wins = at + 4, []
        for first, size in values[1 : 1 + 2 * len(QUARTILES)].astype(np.int64).reshape(-1, 2):
            wins.append((int(first), values[at : at + size]))
            at += size
        return cls(int(values[0]), tuple(wins), near)

    def fences(self) -> tuple[float, float] | None:
        """The fences of the jobs' starts; None where a quartile lies outside its window."""
        qs = []
        for q, (first, starts) in zip(QUARTILES, self.windows, strict=True):
            f, c = (r - first for r in _around(self.n, q))
            if f < 0 or c >= len(starts):
                return None
            qs.append(_interpolate(float(starts[f]), float(starts[c]), self.n, q))
        return fences(*qs)

    def add(self, starts: np.ndarray, window: int = WINDOW) -> Quartiles:
        """With the counted starts ``starts`` of new jobs (``near`` as to the old fences)."""
        wins = []
        for q, (first, kept) in zip(QUARTILES, self.windows, strict=True):
            first += int(np.count_nonzero(starts < kept[0]))
            merged = _merged(kept, starts[(starts >= kept[0]) & (starts <= kept[-1])])
            lo, hi = window_ranks(self.n + len(starts), q, window)
            a, b = max(lo - first, 0), min(hi - first + 1, len(merged))
            wins.append((first + a, merged[a:b]))
        return Quartiles(self.n + len(starts), tuple(wins), self.near)

    def moved(self, old: tuple[float, float], new: tuple[float, float]) -> bool:
        """Whether moving the fences from ``old`` to ``new`` may move a job to the other
        side of one (``near`` as to ``old``)."""
        below_lo, from_lo, to_hi, above_hi = (
            v if v is not None else inf for v, inf in zip(self.near, _UNBOUNDED, strict=True)
        )
        return not (below_lo < new[0] <= from_lo and to_hi <= new[1] < above_hi)

    def near_to(self, bounds: tuple[float, float], starts: np.ndarray) -> Quartiles:
        """``near`` as to the fences ``bounds`` (no old job between them and the old
        ones: :meth:`moved`), with the new jobs' ``starts``."""
        lo, hi = bounds
        pick = ((starts < lo, max), (starts >= lo, min), (starts <= hi, max), (starts > hi, min))
        near = tuple(
            _pick(best, [*([] if old is None else [old]), *starts[mask].tolist()])
            for old, (mask, best) in zip(self.near, pick, strict=True)
        )
        return Quartiles(self.n, self.windows, near)


_UNBOUNDED = (-np.inf, np.inf, -np.inf, np.inf)


def _merged(kept: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """The sorted starts ``kept`` with ``inside`` (a few, within them) in their places:
    the sort of both, without sorting the window again (none inside, the usual case as
    jobs land at the end of the year: ``kept`` itself)."""
    if not inside.size:
        return kept
    inside = np.sort(inside)
    return np.insert(kept, np.searchsorted(kept, inside), inside)


def _pick(best, values: list[float]) -> float | None:
    return best(values) if values else None


def quartiles_of(
    starts: np.ndarray, bounds: tuple[float, float], window: int = WINDOW
) -> Quartiles:
    """The :class:`Quartiles` of the counted jobs' ``starts`` (fences ``bounds``)."""
    wins = []
    for q in QUARTILES:
        lo, hi = window_ranks(len(starts), q, window)
        part = np.partition(starts, [lo, hi])
        wins.append((lo, np.sort(part[lo : hi + 1])))
    empty = Quartiles(len(starts), tuple(wins), (None, None, None, None))
    return empty.near_to(bounds, starts)


@dataclass(frozen=True)
class LeftOut:
    """Jobs a timeline left out because they started far outside the others.

    Attributes
    ----------
    jobs : int
        How many.
    bytes : float
        Their POSIX + STDIO bytes, read and written (what their bins would have held).
    first, last : float
        The earliest and latest of their start times (epoch s).
    kept : tuple of float
        The earliest and latest start times of the jobs kept (epoch s).
    """

    jobs: int
    bytes: float
    first: float
    last: float
    kept: tuple[float, float]

    def metadata(self) -> dict[bytes, bytes]:
        """This as Arrow schema metadata of the timeline table."""
        return {_METADATA_KEY: json.dumps(asdict(self)).encode()}


def left_out(table) -> LeftOut | None:
    """What the timeline ``table`` (from ``build_timeline``; or its schema metadata, a
    dict) left out; None when nothing."""
    metadata = table if isinstance(table, dict) else table.schema.metadata or {}
    raw = metadata.get(_METADATA_KEY)
    if raw is None:
        return None
    fields = json.loads(raw)
    return LeftOut(**{**fields, "kept": tuple(fields["kept"])})
