import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from iosight._errors import IosightError, MissingTableError
from iosight.timeline import build_timeline, load_timeline, rebin, timeline_from_job_totals


def _hand_warehouse(wh):
    """Four jobs, each placed by a different path; expected bins worked out by hand."""
    wh.commit(
        {
            "jobs": [
                pa.table(
                    {
                        "job_key": ["A", "B", "C", "D"],
                        "start_time": [1000.0, 1000.0, 1300.0, 1000.0],
                        "end_time": [2000.0, 1600.0, 1900.0, 2000.0],
                    }
                )
            ],
            "posix": [
                pa.table(
                    {
                        "job_key": ["A", "B", "B", "D"],
                        "rank": [0, 0, 1, -1],
                        "record_id": pa.array([1, 3, 4, 5], pa.uint64()),
                        "POSIX_BYTES_READ": [600, 200, 200, 1000],
                        "POSIX_READS": [3, 4, 4, 4],
                        "POSIX_F_READ_TIME": [1.5, 1.0, 1.0, 2.0],
                        "POSIX_F_READ_START_TIMESTAMP": [100.0, 0.0, 0.0, 0.0],
                        "POSIX_F_READ_END_TIMESTAMP": [400.0, 600.0, 600.0, 1000.0],
                        "POSIX_BYTES_WRITTEN": [0, 0, 0, 0],
                        "POSIX_WRITES": [0, 0, 0, 0],
                        "POSIX_F_WRITE_TIME": [0.0, 0.0, 0.0, 0.0],
                        "POSIX_F_WRITE_START_TIMESTAMP": [0.0, 0.0, 0.0, 0.0],
                        "POSIX_F_WRITE_END_TIMESTAMP": [0.0, 0.0, 0.0, 0.0],
                    }
                )
            ],
            "stdio": [
                pa.table(
                    {
                        "job_key": ["A"],
                        "rank": [0],
                        "record_id": pa.array([2], pa.uint64()),
                        "STDIO_BYTES_WRITTEN": [50],
                        "STDIO_WRITES": [5],
                        "STDIO_F_WRITE_TIME": [0.1],
                        "STDIO_F_WRITE_START_TIMESTAMP": [0.0],
                        "STDIO_F_WRITE_END_TIMESTAMP": [0.0],
                    }
                )
            ],
            "mpiio": [pa.table({"job_key": ["A"], "rank": [0], "MPIIO_BYTES_READ": [1000]})],
            "dxt_posix": [
                pa.table(
                    {
                        "job_key": ["D", "D"],
                        "rank": [0, 1],
                        "record_id": pa.array([5, 5], pa.uint64()),
                        "seq": [0, 0],
                        "op": ["read", "read"],
                        "offset": [0, 300],
                        "length": [300, 100],
                        "start": [50.0, 650.0],
                        "end": [60.0, 660.0],
                    }
                )
            ],
            "heatmap": [
                pa.table(
                    {
                        "job_key": ["B", "B"],
                        "module": ["POSIX", "POSIX"],
                        "rank": [-1, -1],
                        "record_id": [9, 9],
                        "bin": [0, 5],
                        "bin_width": [100.0, 100.0],
                        "bin_start": [0.0, 500.0],
                        "read_bytes": [10, 30],
                        "write_bytes": [0, 0],
                    }
                )
            ],
            "job_totals": [
                pa.table(
                    {
                        "job_key": ["A", "C"],
                        "total_POSIX_BYTES_READ": [600, 600],
                        "total_POSIX_READS": [3, 6],
                        "total_STDIO_BYTES_READ": [None, 0.0],
                    }
                )
            ],
        }
    )


def test_hand_computed_timeline(warehouse):
    _hand_warehouse(warehouse)
    t = build_timeline(warehouse, bin_width=300.0).to_pandas()
    assert t["bin_start"].tolist() == [900, 1200, 1500, 1800]
    # A: 200/400; B (heatmap 1:3): 100/300; C (totals over run): 200/300/100; D (DXT): 750/250
    assert np.allclose(t["read_bytes"], [1050, 600, 850, 100])
    assert np.allclose(t["write_bytes"], [50, 0, 0, 0])
    assert np.allclose(t["read_ops"], [1 + 2 + 2, 2 + 2, 6 + 2 + 3, 1])
    assert t["active_jobs"].tolist() == [3, 4, 4, 3]
    # mpiio is not counted; bytes are conserved
    assert t["read_bytes"].sum() == pytest.approx(2600)
    assert load_timeline(warehouse)["read_bytes"].sum() == pytest.approx(2600)


def test_equal_spread(warehouse):
    _hand_warehouse(warehouse)
    t = build_timeline(warehouse, bin_width=300.0, spread="equal").to_pandas()
    # A [1100,1400]: 2 bins -> 300 each; C [1300,1900]: 3 bins -> 200 each
    assert np.allclose(t["read_bytes"], [300 + 750 + 100, 300 + 200, 200 + 250 + 300, 200])


def test_job_window(warehouse):
    _hand_warehouse(warehouse)
    # only C starts at or after 1200: its job-total bytes alone, over its own bins
    t = build_timeline(warehouse, bin_width=300.0, since=1200.0).to_pandas()
    assert t["bin_start"].tolist() == [1200, 1500, 1800]
    assert np.allclose(t["read_bytes"], [200, 300, 100])
    assert t["active_jobs"].tolist() == [1, 1, 1]
    # A, B and D start before 1200; their I/O is kept whole, past the window's end
    t = build_timeline(warehouse, bin_width=300.0, until=1200.0).to_pandas()
    assert t["read_bytes"].sum() == pytest.approx(2600 - 600)
    assert t["bin_start"].tolist() == [900, 1200, 1500, 1800]
    with pytest.raises(IosightError, match="no jobs"):
        build_timeline(warehouse, since=5000.0)


@pytest.mark.parametrize("bound", ["since", "until"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_job_window_must_be_finite(warehouse, bound, value):
    _hand_warehouse(warehouse)
    with pytest.raises(IosightError, match=f"'{bound}' parameter must be a finite time"):
        build_timeline(warehouse, **{bound: value})
    assert not warehouse.has_table("timeline")


def test_job_window_takes_numpy_numbers(warehouse):
    _hand_warehouse(warehouse)
    whole = build_timeline(warehouse, bin_width=60)
    assert build_timeline(warehouse, bin_width=60, since=np.int64(0)).equals(whole)


def test_missing_tables_are_clear(warehouse):
    with pytest.raises(MissingTableError, match="jobs"):
        build_timeline(warehouse)
    with pytest.raises(MissingTableError, match="timeline build"):
        load_timeline(warehouse)


def test_jobs_without_io_give_zero_bins(warehouse):
    warehouse.commit(
        {"jobs": [pa.table({"job_key": ["x"], "start_time": [0.0], "end_time": [650.0]})]}
    )
    t = build_timeline(warehouse).to_pandas()
    assert len(t) == 3 and t["read_bytes"].sum() == 0 and t["active_jobs"].tolist() == [1, 1, 1]


def test_job_totals_frame():
    df = pd.DataFrame(
        {
            "start_time": [0.0, 100.0],
            "end_time": [600.0, 100.0],
            "total_POSIX_BYTES_WRITTEN": [600.0, np.nan],
            "total_STDIO_BYTES_WRITTEN": [0.0, 9.0],
            "total_MPIIO_BYTES_WRITTEN": [600.0, 0.0],
        }
    )
    t = timeline_from_job_totals(df, bin_width=300).to_pandas()
    assert np.allclose(t["write_bytes"], [300 + 9, 300, 0])  # MPI-IO not counted
    assert t["write_bytes"].sum() == pytest.approx(609)
    with pytest.raises(IosightError, match="start_time"):
        timeline_from_job_totals(df.drop(columns="start_time"))


def test_rebin_hourly_and_monthly():
    n = 12 * 24 * 40  # 40 days of 5-minute bins from 2021-01-01
    start = pd.Timestamp("2021-01-01", tz="UTC").timestamp()
    df = pd.DataFrame(
        {
            "bin_start": start + 300.0 * np.arange(n),
            "bin_width": 300.0,
            "read_bytes": 1.0,
            "write_bytes": 2.0,
            "read_ops": 0.0,
            "write_ops": 0.0,
            "read_time": 0.0,
            "write_time": 0.0,
            "active_jobs": np.arange(n) % 7,
        }
    )
    h = rebin(df, "1h")
    assert len(h) == 24 * 40 and (h["read_bytes"] == 12).all() and (h["active_jobs"] == 6).all()
    m = rebin(df, "month")
    assert m["read_bytes"].tolist() == [31 * 288, 9 * 288]
    assert m["bin_width"].tolist() == [31 * 86400, 28 * 86400]
    with pytest.raises(IosightError, match="multiple"):
        rebin(df, "7min")


def test_job_totals_count_missing_and_negative_totals_as_zero():
    """``totals_intervals`` (the full build's and an update's job-total binning): NaN
    and negative totals count as 0 and an infinite one as the largest float, each
    layer's totals added in LAYERS order: as ``nan_to_num`` then ``clip`` give them."""
    from iosight.timeline._build import TOTAL_COLUMNS, VALUE_COLUMNS, totals_intervals

    rng = np.random.default_rng(7)
    odd = np.array([np.nan, np.inf, -np.inf, -5.0, -0.0, 0.0])
    cols = {c: np.where(rng.random(40) < 0.3, rng.choice(odd, 40), rng.lognormal(10, 3, 40))
            for c in TOTAL_COLUMNS}  # fmt: skip
    cols["start_time"] = rng.uniform(0, 1e4, 40)
    cols["end_time"] = cols["start_time"] + rng.uniform(0, 1e3, 40)
    want = np.zeros((40, len(VALUE_COLUMNS)))
    with np.errstate(over="ignore"):  # two infinite totals of a job: their sum overflows
        _, _, values = totals_intervals(cols)
        for c in TOTAL_COLUMNS:  # POSIX's columns come first: the same order of additions
            counter = c.split("_", 2)[2]
            direction = "read" if "READ" in counter else "write"
            kind = "bytes" if "BYTES" in counter else "time" if "TIME" in counter else "ops"
            want[:, VALUE_COLUMNS.index(f"{direction}_{kind}")] += np.clip(
                np.nan_to_num(cols[c], nan=0.0), 0.0, None
            )
    assert np.array_equal(values, want) and (values == np.finfo(np.float64).max).any()
