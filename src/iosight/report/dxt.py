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
    else per rank bin and time bin (at most ``max_points`` cells, none empty).

    The grid is counted first: from the job's ``dxt_bins`` (made at ingest) when the
    window spans a grid's width of them, else in one scan of the job's segments; only a
    window of few segments is read again for them (and the time bounds of a zoom prune
    that read to the row groups of its time: a job's segments are stored in start-time
    order, see :data:`iosight.warehouse._compact.TABLE_SORT_COLUMNS`)."""
    window = window or DxtWindow()
    params = [key, *window.bounds()]
    bounds = _bounds(warehouse, key, window, params)
    binned = _Binned.of(warehouse, key, window, bounds, max_points)
    if binned is not None:
        cells = binned.cells(warehouse, params)
        grid = binned.grid
    else:
        grid = _Grid.of(*bounds, max_points)
        cells = warehouse.sql(
            f"select {_RANK_CELL}, ? + least(greatest(floor((start - ?) / ?), 0), ?) * ? "
            "as start, count(*) as ops, count(*) filter (where op = 'write') as writes, "
            "sum(length) as bytes "
            f"from dxt_posix where {_WHERE} group by all order by 1, 2",
            [*grid.params(), *params],
        )
    total = int(cells["ops"].sum())
    if total > max_points:
        return DxtView("cells", cells, total, grid.rank_width, grid.time_width)
    rows = warehouse.sql(
        'select rank, op, "offset", length, start, "end" from dxt_posix '
        f"where {_WHERE} order by rank, start, op",
        params,
    )
    return DxtView("segments", rows, total)


# a rank's bin: its first rank (the grid's first rank, rank width, last row, rank width)
_RANK_CELL = "? + least(greatest(floor((rank - ?) / ?), 0), ?)::bigint * ? as rank"


def _bounds(warehouse: Warehouse, key: str, window: DxtWindow, params: list) -> tuple:
    """``(t0, t1, r0, r1)``: the window's bounds, the open ones those of the job's record
    (0 to its run time, ranks 0 to nprocs - 1: no scan), or of its segments where the
    record does not say (a garbage job record's unknown fields)."""
    job = warehouse.sql("select run_time, nprocs from jobs where job_key = ?", [key])
    run_time = _known(job["run_time"].iloc[0]) if len(job) else None
    nprocs = int(job["nprocs"].iloc[0]) if len(job) else -1
    if run_time is None or nprocs < 1:
        ext = warehouse.sql(
            f'select max("end") t1, max(rank) r1 from dxt_posix where {_WHERE}', params
        ).iloc[0]
        run_time = _known(ext["t1"]) or 0.0
        nprocs = int(_known(ext["r1"]) or 0) + 1
    return (
        _closed(window.start, 0.0),
        _closed(window.end, float(run_time)),
        _closed(window.rank_min, 0),
        _closed(window.rank_max, nprocs - 1),
    )


def _known(value) -> float | None:
    """``value`` as a finite float, or None (null, NaN, infinite)."""
    return float(value) if value is not None and math.isfinite(value) else None


def _closed(given, default):
    """A window's bound, or ``default`` where it is open."""
    return default if given is None else given


@dataclass(frozen=True)
class _Grid:
    """Rank bins of whole ranks from ``r0`` and time bins from ``t0``: at most ``rows``
    by ``columns`` (a segment outside the bounds counts in the nearest bin)."""

    t0: float
    time_width: float
    columns: int
    r0: int
    rank_width: int
    rows: int

    @classmethod
    def of(cls, t0: float, t1: float, r0: int, r1: int, max_points: int) -> _Grid:
        columns = min(_TIME_COLUMNS, max_points)
        rows = max(1, max_points // columns)
        rank_width = -(-(max(r1, r0) - r0 + 1) // rows)
        time_width = (t1 - t0) / columns if t1 > t0 else 1.0
        return cls(t0, time_width, columns, r0, rank_width, rows)

    def rank_params(self) -> list:
        """:data:`_RANK_CELL`'s parameters."""
        return [self.r0, self.r0, self.rank_width, self.rows - 1, self.rank_width]

    def params(self) -> list:
        """The grid query's parameters (its bins' first rank and first second)."""
        time = [self.t0, self.t0, self.time_width, self.columns - 1, self.time_width]
        return [*self.rank_params(), *time]


@dataclass(frozen=True)
class _Binned:
    """A grid of whole ``dxt_bins`` (:mod:`iosight.warehouse._dxt_bins`): its time bins
    ``per`` bins of ``width`` seconds wide from bin ``lo``. The bins strictly inside the
    window (all of them on an open side) are summed; the segments of the window's edge
    bins (where a bound cuts one) are counted from ``dxt_posix``, by the same
    ``floor(start / width)``, so each segment of the window is counted once."""

    grid: _Grid
    width: float
    lo: int
    hi: int
    per: int
    window: DxtWindow

    @classmethod
    def of(cls, warehouse: Warehouse, key: str, window: DxtWindow, bounds: tuple,
           max_points: int) -> _Binned | None:  # fmt: skip
        """The binned grid of ``window`` (closed ``bounds``); None where the job has no
        bins or the window spans fewer of them than a grid has columns."""
        if not warehouse.has_table("dxt_bins"):
            return None
        got = warehouse.sql("select any_value(width) w from dxt_bins where job_key = ?", [key])
        width = _known(got["w"].iloc[0])
        t0, t1, r0, r1 = bounds
        if width is None or t1 < t0:
            return None
        lo, hi = math.floor(t0 / width), math.floor(t1 / width)
        columns = min(_TIME_COLUMNS, max_points)
        if hi - lo + 1 < columns:
            return None
        per = -(-(hi - lo + 1) // columns)
        rows = max(1, max_points // columns)
        rank_width = -(-(max(r1, r0) - r0 + 1) // rows)
        span = -(-(hi - lo + 1) // per)
        grid = _Grid(lo * width, per * width, span, r0, rank_width, rows)
        return cls(grid, width, lo, hi, per, window)

    def cells(self, warehouse: Warehouse, params: list) -> pd.DataFrame:
        """The window's cells: its inner bins summed, its edge bins' segments counted
        (found by a range of start times half a bin wider than theirs, then exactly)."""
        g, (lo, hi), w = self.grid, (self.lo, self.hi), self.width
        sides = [(f"bin > {lo}", "start < ?", (lo + 1.5) * w)] * (self.window.start is not None)
        sides += [(f"bin < {hi}", "start > ?", (hi - 0.5) * w)] * (self.window.end is not None)
        column = f"least(greatest(floor(({{}} - ?) / ?), 0), {g.columns - 1})"
        parts = (
            f"select rank, {column.format('bin')} col, ops, writes, bytes from dxt_bins "
            f"where job_key = ? and rank between ? and ? "
            + "".join(f" and {inner}" for inner, _, _ in sides)
        )
        args = [lo, self.per, params[0], *params[3:]]
        if sides:  # the edge bins' segments, counted one by one
            near = " or ".join(n for _, n, _ in sides)
            edge = " and ".join(c.replace("bin", "floor(start / ?)") for c, _, _ in sides)
            parts += (
                f" union all select rank, {column.format('start')}, 1, (op = 'write')::int, "
                f"length from dxt_posix where {_WHERE} and ({near}) and not ({edge})"
            )
            args += [g.t0, g.time_width, *params, *[v for *_, v in sides], *[w] * len(sides)]
        return warehouse.sql(
            f"with parts as ({parts}) select {_RANK_CELL}, ? + col * ? as start, "
            "sum(ops)::bigint as ops, sum(writes)::bigint as writes, sum(bytes) as bytes "
            "from parts group by all order by 1, 2",
            [*args, *g.rank_params(), g.t0, g.time_width],
        )
