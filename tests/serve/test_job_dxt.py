"""The Job page of a job of a million DXT segments: a fixed number of points per
response, aggregated per rank and time bin, and single operations once zoomed in."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pyarrow.compute as pc
import pytest

from iosight.darshan import read_darshan3
from iosight.report.dxt import MAX_DXT_POINTS
from iosight.serve import BackgroundServer, create_app
from iosight.warehouse import Warehouse, ingest


@pytest.fixture(scope="module")
def million_wh(tmp_path_factory, million_segment_log):
    """A warehouse holding the tracer-made job of 1,000,448 segments, and its key."""
    wh = Warehouse(tmp_path_factory.mktemp("million") / "wh", create=True)
    ingest([million_segment_log], wh, workers=1)
    return wh, wh.sql("select job_key from jobs")["job_key"][0]


@pytest.fixture(scope="module")
def million(million_wh):
    """A server of :func:`million_wh`."""
    wh, key = million_wh
    with BackgroundServer(create_app(wh.path)) as srv:
        yield srv, key


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _points(fig: dict) -> int:
    """Segments drawn (a line each: start, end, gap) or cells (a marker each)."""
    return sum(len(t["x"]) // (3 if t["mode"] == "lines+markers" else 1) for t in fig["data"])


def test_the_page_of_a_million_segments_sends_at_most_the_fixed_points(million):
    srv, key = million
    status, page = _get(f"{srv.url}/job/{key}")
    assert status == 200
    data = re.search(r'<script type="application/json" id="fig-timeline-data">(.*?)</script>',
                     page, re.S).group(1)  # fmt: skip
    fig = json.loads(data)
    assert 0 < _points(fig) <= MAX_DXT_POINTS
    assert "1,000,448 segments counted per 26 ranks" in fig["layout"]["title"]["text"]
    assert len(page) < 200_000  # a sample of 20,000 segments made it 1.4 MB
    assert f'data-api="/api/job/{key}/dxt"' in page


def test_zoom_gives_the_logs_single_operations_in_a_small_window(million, million_segment_log):
    srv, key = million
    seg = read_darshan3(million_segment_log)["dxt_posix"]
    ranks = pc.and_(pc.greater_equal(seg["rank"], 100), pc.less_equal(seg["rank"], 101))
    t0 = pc.approximate_median(seg.filter(ranks)["start"]).as_py()  # mid-way through rank 100
    inside = pc.and_(
        ranks, pc.and_(pc.greater_equal(seg["end"], t0), pc.less_equal(seg["start"], t0 + 1e-4))
    )
    want = sorted(
        (r["op"], r["start"], r["end"], r["rank"]) for r in seg.filter(inside).to_pylist()
    )
    status, body = _get(f"{srv.url}/api/job/{key}/dxt?start={t0!r}&end={t0 + 1e-4!r}"
                        "&rank_min=100&rank_max=101")  # fmt: skip
    assert status == 200
    fig = json.loads(body)
    assert fig["layout"]["title"]["text"].startswith("traced POSIX operations (DXT): all ")
    got = sorted(
        (t["name"], x0, x1, int(y))
        for t in fig["data"]
        for x0, x1, y in zip(t["x"][0::3], t["x"][1::3], t["y"][0::3], strict=True)
    )
    assert 10 < len(got) == len(want) and got == want


def test_a_wider_zoom_is_counted_again_per_rank_and_time_bin(million):
    srv, key = million
    status, body = _get(f"{srv.url}/api/job/{key}/dxt?rank_min=0&rank_max=99")
    fig = json.loads(body)
    assert status == 200 and _points(fig) <= MAX_DXT_POINTS
    # ranks 0..99 hold 97,700 segments: too many to send, so counted again, per 3 ranks
    assert "97,700 segments counted per 3 ranks" in fig["layout"]["title"]["text"]


@pytest.mark.parametrize(
    "query, reason",
    [
        ("start=nan", "finite"),
        ("end=inf", "finite"),
        ("start=2&end=1", "ends before it starts"),
        ("rank_min=5&rank_max=2", "below its first"),
        ("rank_min=" + "9" * 30, "out of range"),
        ("rank_max=x", "cannot read rank_max"),
        ("start=" + "1" * 5000, "at most 4,096"),
    ],
)
def test_bad_zoom_parameters_are_a_400_line(million, query, reason):
    srv, key = million
    status, body = _get(f"{srv.url}/api/job/{key}/dxt?{query}")
    assert status == 400 and reason in json.loads(body)["error"]


def test_an_unknown_job_is_a_400_line(million):
    srv, _ = million
    status, body = _get(f"{srv.url}/api/job/nosuchjob/dxt")
    assert status == 400 and "nosuchjob" in json.loads(body)["error"]


def test_a_time_window_reads_only_the_row_groups_it_overlaps(million_wh):
    """Ingest stages a job's segments sorted by start time in row groups of 65,536, so
    the edge bins of a window (a hundredth of the run here) skip the job's other row
    groups by their min/max start; as the segments lie in the log (rank by rank), every
    row group spans the whole run and all were read."""
    wh, key = million_wh
    run = float(wh.sql("select run_time from jobs")["run_time"][0])
    plan = (
        wh.connect()
        .execute(
            'explain analyze select count(*) from dxt_posix where job_key = ? and "end" >= ? '
            "and start <= ?",
            [key, 0.5 * run, 0.51 * run],
        )
        .fetchall()[0][1]
    )
    scanned, groups = map(int, re.search(r"Row Groups Scanned: *(\d+) */ *(\d+)", plan).groups())
    assert groups >= 15 and scanned <= groups // 3, plan
