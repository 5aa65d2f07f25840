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
    rn = (len(values) - 1) * q
    f, c = int(np.floor(rn)), int(np.ceil(rn))
    part = np.partition(values, [f, c])
    lo, hi = float(part[f]), float(part[c])
    return lo if f == c else lo + (hi - lo) * (rn - f)


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
    """What the timeline ``table`` (from ``build_timeline``) left out; None when nothing."""
    raw = (table.schema.metadata or {}).get(_METADATA_KEY)
    if raw is None:
        return None
    fields = json.loads(raw)
    return LeftOut(**{**fields, "kept": tuple(fields["kept"])})
