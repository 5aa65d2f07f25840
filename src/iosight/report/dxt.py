"""A window of one job's DXT segments, at most a fixed number of points whatever the job.

A job of millions of segments cannot be drawn (or sent to a browser) one segment at a
time, and a sample hides the ranks and moments it skips. Here the window's segments are
counted first: when few, each one is given; when many, they are counted and their bytes
summed per rank bin and time bin inside DuckDB, on a grid of at most
:data:`MAX_DXT_POINTS` cells, so every segment is in some cell. Zooming in (a smaller
window) re-aggregates, down to single operations: DXT Explorer's zoomable per-rank
timelines (Bez et al., *I/O Bottleneck Detection and Tuning: Connecting the Dots using
Interactive Log Analysis*, PDSW 2021) without shipping every segment first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from iosight._errors import IosightError

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

MAX_DXT_POINTS = 4000  # segments, or grid cells, in one view at most
_RANK_ROWS = 40  # rank bins of the grid at most
_TIME_COLUMNS = MAX_DXT_POINTS // _RANK_ROWS  # time bins of the grid
_WIDEST = 1 << 62  # an open rank bound


@dataclass(frozen=True)
class DxtWindow:
    """Which of a job's segments to show: those overlapping ``start .. end`` (seconds
    since the job started) of ranks ``rank_min .. rank_max``; None: no bound."""

    start: float | None = None
    end: float | None = None
    rank_min: int | None = None
    rank_max: int | None = None

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise IosightError(f"the DXT window's {name} must be a finite number of seconds")
        if None not in (self.start, self.end) and self.end < self.start:
            raise IosightError("the DXT window ends before it starts")
        for name in ("rank_min", "rank_max"):
            value = getattr(self, name)
            if value is not None and abs(value) >= _WIDEST:
                raise IosightError(f"the DXT window's {name} is out of range")
        if None not in (self.rank_min, self.rank_max) and self.rank_max < self.rank_min:
            raise IosightError("the DXT window's last rank is below its first")

    def bounds(self) -> list:
        """``[start, end, rank_min, rank_max]`` with open bounds made infinite."""
        return [
            -math.inf if self.start is None else float(self.start),
            math.inf if self.end is None else float(self.end),
            -_WIDEST if self.rank_min is None else int(self.rank_min),
            _WIDEST if self.rank_max is None else int(self.rank_max),
        ]


@dataclass(frozen=True)
class DxtView:
    """A window's segments (``kind`` ``"segments"``: rank, op, offset, length, start, end)
    or cells (``"cells"``: first rank and first second of each bin, operations, writes,
    bytes), ``total`` segments in all, and the bins' widths (cells only)."""

    kind: str
    rows: pd.DataFrame
    total: int
    rank_width: int = 1
    time_width: float = 0.0


# a segment is in a window when it ends after the window starts and starts before it ends
_WHERE = 'job_key = ? and "end" >= ? and start <= ? and rank between ? and ?'


def dxt_view(
    warehouse: Warehouse,
    key: str,
    window: DxtWindow | None = None,
    max_points: int = MAX_DXT_POINTS,
) -> DxtView:
    """The job's DXT POSIX segments in ``window``: each one when at most ``max_points``,
    else per rank bin and time bin (at most ``max_points`` cells, none empty)."""
    window = window or DxtWindow()
    params = [key, *window.bounds()]
    ext = warehouse.sql(
        'select count(*) n, min(start) t0, max("end") t1, min(rank) r0, max(rank) r1 '
        f"from dxt_posix where {_WHERE}",
        params,
    ).iloc[0]
    total = int(ext["n"])
    if total <= max_points:
        rows = warehouse.sql(
            'select rank, op, "offset", length, start, "end" from dxt_posix '
            f"where {_WHERE} order by rank, start, op",
            params,
        )
        return DxtView("segments", rows, total)
    return _cells(warehouse, params, window, ext, max_points)


def _cells(warehouse: Warehouse, params: list, window: DxtWindow, ext, max_points: int):
    """The grid: ranks in at most ``max_points // _TIME_COLUMNS`` bins (whole ranks each),
    the window's time (clipped to its segments) in :data:`_TIME_COLUMNS` bins; a segment
    counts in the bin of its start (or the first bin, when it started before)."""
    t0 = max(float(ext["t0"]), window.start if window.start is not None else -math.inf)
    t1 = min(float(ext["t1"]), window.end if window.end is not None else math.inf)
    r0, r1 = int(ext["r0"]), int(ext["r1"])
    columns = min(_TIME_COLUMNS, max_points)
    rows = max(1, max_points // columns)
    rank_width = -(-(r1 - r0 + 1) // rows)
    time_width = (t1 - t0) / columns if t1 > t0 else 1.0
    cells = warehouse.sql(
        "select ? + floor((rank - ?) / ?)::bigint * ? as rank, "
        "? + least(greatest(floor((start - ?) / ?), 0), ?) * ? as start, "
        "count(*) as ops, count(*) filter (where op = 'write') as writes, "
        "sum(length) as bytes "
        f"from dxt_posix where {_WHERE} group by all order by 1, 2",
        [r0, r0, rank_width, rank_width, t0, t0, time_width, columns - 1, time_width, *params],
    )
    return DxtView("cells", cells, int(ext["n"]), rank_width, time_width)
