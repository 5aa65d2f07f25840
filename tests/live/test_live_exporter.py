"""The replay exporter: recordings from bins, CSV and a stored timeline (all SYNTHETIC
here), the counters it serves and their timestamps, read with prometheus_client's own
parser from its real HTTP server."""

from __future__ import annotations

import math
import time
import urllib.request

import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families

from iosight._errors import IosightError
from iosight.live import Recording, ReplayExporter
from iosight.live._exporter import main


def _recording() -> Recording:
    """SYNTHETIC: bins at 0, 300 and 900 s (600 left out: it holds zero)."""
    return Recording.from_bins([900.0, 0.0, 300.0], [30.0, 10.0, 20.0], [3.0, 1.0, 2.0], 300.0)


def test_counters_rise_at_each_bins_rate_and_hold_after_the_end():
    rec = _recording()
    assert rec.start == 0.0 and rec.duration == 1200.0
    assert rec.read_bytes.tolist() == [10.0, 20.0, 0.0, 30.0]
    assert rec.totals(-50.0) == (0.0, 0.0)
    assert rec.totals(150.0) == (5.0, 0.5)
    assert rec.totals(300.0) == (10.0, 1.0)
    assert rec.totals(750.0) == (30.0, 3.0)  # the idle bin
    assert rec.totals(1200.0) == rec.totals(5000.0) == (60.0, 6.0)


@pytest.mark.parametrize(
    "starts, read, why",
    [
        ([0.0, 150.0], [1.0, 1.0], "grid"),
        ([0.0, 0.0], [1.0, 1.0], "twice"),
        ([0.0, 300.0], [1.0, -1.0], ">= 0"),
        ([], [], "no bins"),
    ],
)
def test_bad_bins_are_one_error(starts, read, why):
    with pytest.raises(IosightError, match=why):
        Recording.from_bins(starts, read, read, 300.0)


def test_csv_and_timeline_give_the_same_recording(tmp_path, warehouse):
    rec = _recording()
    csv = tmp_path / "bins.csv"
    csv.write_text("bin_start,read_bytes,write_bytes\n0,10,1\n300,20,2\n900,30,3\n")
    from_csv = Recording.from_csv(csv)
    warehouse.write_table(
        "timeline",
        pa.table({"bin_start": [-300.0, 0.0, 300.0, 600.0, 900.0],
                  "bin_width": [300.0] * 5,
                  "read_bytes": [99.0, 10.0, 20.0, 0.0, 30.0],
                  "write_bytes": [99.0, 1.0, 2.0, 0.0, 3.0]}),
    )  # fmt: skip
    from_timeline = Recording.from_timeline(warehouse, start=0.0, end=1200.0)
    for got in (from_csv, from_timeline):
        assert (got.start, got.width) == (rec.start, rec.width)
        assert got.read_bytes.tolist() == rec.read_bytes.tolist()
        assert got.write_bytes.tolist() == rec.write_bytes.tolist()


def test_a_csv_without_the_columns_is_one_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,read\n0,1\n")
    with pytest.raises(IosightError, match="bin_start, read_bytes, write_bytes"):
        Recording.from_csv(bad)
    assert main(["--csv", str(tmp_path / "missing.csv")]) == 2


def _scrape(url: str) -> dict[str, tuple[dict, float, float]]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    return {
        s.name: (s.labels, s.value, s.timestamp)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_served_counters_are_the_recording_at_their_timestamp():
    """Each scrape shows both counters with the Lustre exporter's names and labels, valued
    at their timestamp: on the grid, never ahead of the wall clock, advancing ``speed``
    times faster than it from the first scrape on, which replays the first bin's start."""
    rec = _recording()
    with ReplayExporter(rec, speed=600.0, resolution=30) as exporter:
        time.sleep(0.1)
        assert not exporter.started
        first = _scrape(exporter.url)
        assert first["lustre_read_bytes_total"][1:] == (0.0, exporter.clock_start)
        assert exporter.clock_start % 300.0 == 0
        assert exporter.clock_start + rec.duration <= time.time() + rec.duration / 600.0
        time.sleep(0.15)  # 90 recorded seconds
        second = _scrape(exporter.url)
    for scrape in (first, second):
        labels, read, stamp = scrape["lustre_read_bytes_total"]
        assert labels == {"component": "ost", "target": "replay-OST0000"}
        assert stamp % 30 == 0 and stamp <= time.time()
        write = scrape["lustre_write_bytes_total"][1]
        assert (read, write) == exporter.totals_at(stamp)
    advanced = second["lustre_read_bytes_total"][2] - first["lustre_read_bytes_total"][2]
    assert 60 <= advanced and math.isfinite(advanced)


def test_bad_resolution_is_one_error():
    with pytest.raises(IosightError, match="divide"):
        ReplayExporter(_recording(), resolution=7)
    with pytest.raises(IosightError, match="speed"):
        ReplayExporter(_recording(), speed=0)
    assert ReplayExporter(_recording()).resolution == 30
