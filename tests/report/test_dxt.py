"""The DXT view of a window: every segment once, in at most the fixed number of points."""

from __future__ import annotations

import pytest

from iosight._errors import IosightError
from iosight.report.dxt import DxtWindow, _Binned, _bounds, dxt_view


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


def test_ingest_bins_every_segment_of_a_dxt_job_per_rank(dxt_job):
    """``dxt_bins``: per rank, the operations, writes and bytes of the job's segments."""
    wh, key = dxt_job
    per_rank = "select rank, {} from {} where job_key = ? group by rank order by rank"
    raw = "count(*) ops, count(*) filter (where op = 'write') w, sum(length) b"
    binned = "sum(ops) ops, sum(writes) w, sum(bytes) b"
    want = wh.sql(per_rank.format(raw, "dxt_posix"), [key])
    got = wh.sql(per_rank.format(binned, "dxt_bins"), [key])
    assert len(want) and got.astype(float).equals(want.astype(float))
    width = wh.sql("select distinct width from dxt_bins where job_key = ?", [key])["width"]
    run_time = wh.sql("select run_time from jobs where job_key = ?", [key])["run_time"][0]
    assert width.tolist() == [run_time / 1000]


# the whole job; ranks; a span whose bounds cut its busiest bins (0 and 646 of 1.469 s:
# inner bins summed, edge bins' segments counted); each side open
BINNED = [
    DxtWindow(),
    DxtWindow(rank_min=0, rank_max=3),
    DxtWindow(start=0.5, end=949.5),
    DxtWindow(start=0.5, rank_min=0, rank_max=2),
    DxtWindow(end=949.5),
]


@pytest.mark.parametrize("window", BINNED)
def test_cells_from_the_bins_count_every_segment_of_the_window_once(dxt_job, window):
    wh, key = dxt_job
    view = dxt_view(wh, key, window, max_points=100)
    bounds = _bounds(wh, key, window, [key, *window.bounds()])
    assert _Binned.of(wh, key, window, bounds, 100) is not None  # the bins answer it
    n = _count(wh, key, window)
    assert view.kind == "cells" and view.total == n > 100 and len(view.rows) <= 100
    assert view.rows["ops"].sum() == n
    assert view.rows["writes"].sum() == _count(wh, key, window, "op = 'write'")
    assert view.rows["bytes"].sum() == _count_bytes(wh, key, window)


def _count_bytes(wh, key, window: DxtWindow) -> int:
    where = 'job_key = ? and "end" >= ? and start <= ? and rank between ? and ?'
    sql = f"select sum(length) n from dxt_posix where {where}"
    return int(wh.sql(sql, [key, *window.bounds()])["n"][0])


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
