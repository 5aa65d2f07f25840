"""The DXT view of a window: every segment once, in at most the fixed number of points."""

from __future__ import annotations

import pytest

from iosight._errors import IosightError
from iosight.report.dxt import DxtWindow, dxt_view


@pytest.fixture
def dxt_job(example_warehouse):
    """PyDarshan's real ``dxt.darshan`` beside its other logs (several with DXT)."""
    key = example_warehouse.sql("select job_key from jobs where source_path like '%/dxt.darshan'")
    assert len(key) == 1
    return example_warehouse, key["job_key"][0]


def _count(wh, key, window: DxtWindow, also: str = "true") -> int:
    """The job's segments in ``window`` (and meeting ``also``), counted directly."""
    where = 'job_key = ? and "end" >= ? and start <= ? and rank between ? and ?'
    sql = f"select count(*) n from dxt_posix where {where} and {also}"
    return int(wh.sql(sql, [key, *window.bounds()])["n"][0])


@pytest.mark.parametrize("points", [1, 7, 100])
def test_cells_count_every_segment_of_the_window_once(dxt_job, points):
    wh, key = dxt_job
    for window in (DxtWindow(), DxtWindow(start=1.0, end=4.0, rank_min=0, rank_max=2)):
        n = _count(wh, key, window)
        view = dxt_view(wh, key, window, max_points=points)
        assert view.total == n > points and view.kind == "cells"
        assert len(view.rows) <= points and view.rows["ops"].sum() == n
        assert view.rows["writes"].sum() == _count(wh, key, window, "op = 'write'")


def test_a_small_window_is_its_segments(dxt_job):
    wh, key = dxt_job
    window = DxtWindow(start=1.0, end=4.0, rank_min=0, rank_max=2)
    n = _count(wh, key, window)
    view = dxt_view(wh, key, window, max_points=n)
    assert view.kind == "segments" and len(view.rows) == view.total == n
    assert (view.rows["end"] >= 1.0).all() and (view.rows["start"] <= 4.0).all()
    assert set(view.rows["rank"]) <= {0, 1, 2}


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        ({"start": float("nan")}, "finite"),
        ({"start": 2.0, "end": 1.0}, "ends before"),
        ({"rank_min": 3, "rank_max": 1}, "below its first"),
        ({"rank_max": 1 << 63}, "out of range"),
    ],
)
def test_a_bad_window_is_one_error_line(kwargs, reason):
    with pytest.raises(IosightError, match=reason):
        DxtWindow(**kwargs)
