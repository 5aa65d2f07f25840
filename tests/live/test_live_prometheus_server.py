"""The Prometheus feed against a real Prometheus (Debian's ``prometheus``) scraping
iosight's replay exporter: the rates iosight reads back are the replayed ones.

The replayed bins are SYNTHETIC (random bytes over six orders of magnitude, one idle
bin). They are replayed at 600 recorded seconds per second (a 5-minute bin in 0.5 s)
with samples every 60 recorded seconds, scraped every 25 ms.

Tolerance: each bin's bytes must equal the replayed ones to a relative 1e-9. That is
exact but for float rounding, and it follows from how Prometheus computes ``rate()``
(``extrapolatedRate`` in promql/functions.go). It divides the increase between the
window's first and last samples by their distance, then stretches that to the window's
edges when the samples lie within 1.1 average sample intervals of them. Here the counter
is linear within each bin. The exporter stamps its samples on a grid that holds both
boundaries of every bin. So the stretch reproduces the bin's bytes exactly, even when a
single sample is missed. Only the rounding of the counters' differences remains, about
1e-16 of the running total.

Setting ``IOSIGHT_RECORD_PROMETHEUS=FILE`` also writes the server's raw answers to FILE:
that is how ``prometheus_data/query_range.json`` was recorded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest
from prometheus_server import start_prometheus

from iosight.live import PrometheusFeed, PrometheusOptions, Recording, ReplayExporter
from iosight.live._prometheus import LIVE_RATES, RESUME, BinRange, query_range, resume_point
from iosight.warehouse import Warehouse
from tests_support import child_env, free_port

BINS, SPEED, RESOLUTION, WAIT_S = 5, 600.0, 60, 20.0


def synthetic_recording() -> Recording:
    """SYNTHETIC: five 5-minute bins, bytes from 1 MB to 1 TB, the third bin idle in read."""
    rng = np.random.default_rng(28)
    read = np.round(10 ** rng.uniform(6, 12, BINS))
    write = np.round(10 ** rng.uniform(6, 12, BINS))
    read[2] = 0.0
    return Recording.from_bins(1.6e9 + 300.0 * np.arange(BINS), read, write, 300.0)


def _instant(url: str, query: str, at: float | None = None) -> list:
    params = {"query": query} | ({"time": f"{at:.3f}"} if at is not None else {})
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode(params)}") as a:
        return json.loads(a.read())["data"]["result"]


def _wait(what: str, done) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"{what} not within {WAIT_S:g} s"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """A Prometheus that scraped the whole replay: (its URL, the exporter, the recording)."""
    rec = synthetic_recording()
    exporter = ReplayExporter(rec, speed=SPEED, resolution=RESOLUTION, port=free_port())
    root = tmp_path_factory.mktemp("prometheus")
    with exporter, start_prometheus(root, [f"127.0.0.1:{exporter.port}"], "25ms") as url:
        # the replay starts at the first scrape, a few seconds after Prometheus is ready
        _wait("Prometheus' first scrape", lambda: exporter.started)
        end = exporter.clock_start + rec.duration
        total = float(rec.write_bytes.sum())

        def holds_the_end() -> bool:
            got = _instant(url, "lustre_write_bytes_total", at=end)
            return bool(got) and float(got[0]["value"][1]) == total

        _wait("the replay's last sample in Prometheus", holds_the_end)
        yield url, exporter, rec


def _options(url: str, **kw) -> PrometheusOptions:
    return PrometheusOptions(url, delay=0.0, backfill=BINS * 300.0, **kw)


def test_rates_read_back_equal_the_replayed_bins(replayed, tmp_path):
    """Polled in chunks of 3 bins, the five bins land once each, equal to what was
    replayed; a new feed on the same warehouse resumes after them (nothing twice)."""
    url, exporter, rec = replayed
    wh = Warehouse(tmp_path / "wh", create=True)
    end = exporter.clock_start + rec.duration
    feed = PrometheusFeed(_options(url, max_points=3))
    first = feed.poll(wh, now=end)
    assert (first.rows, dict(first.warnings), first.lag) == (3, {}, 2 * 300.0)
    # a sample per bin and direction
    assert first.line() == "prometheus lustre: 6 messages, 3 rows, lag 600.0 s"
    second = feed.poll(wh, now=end)
    assert (second.rows, dict(second.warnings), second.lag) == (2, {}, 0.0)
    again = PrometheusFeed(_options(url)).poll(wh, now=end + 1)
    assert again.rows == 0 and resume_point(wh, "lustre") == end

    got = wh.sql(f"select * from {LIVE_RATES} order by bin_start")
    starts = exporter.clock_start + 300.0 * np.arange(BINS)
    np.testing.assert_array_equal(got["bin_start"], starts)
    atol = 1e-12 * float(rec.read_bytes.sum() + rec.write_bytes.sum())
    np.testing.assert_allclose(got["read_bytes"], rec.read_bytes, rtol=1e-9, atol=atol)
    np.testing.assert_allclose(got["write_bytes"], rec.write_bytes, rtol=1e-9, atol=atol)
    assert set(got["source"]) == {"lustre"} and set(got["known_at"]) == {end}
    assert len(wh.sql(f"select * from {RESUME}")) == 1
    _record(url, exporter, rec)


@pytest.mark.parametrize("point, landed", [("staged", 0), ("published", 3)])
def test_a_feed_killed_in_its_commit_neither_loses_nor_repeats_a_bin(
    replayed, tmp_path, point, landed
):
    """SIGKILL in the poll's commit, before (staged) or after (published) its record: the
    next open rolls the batch back or forward, rows and resume point together, and the
    polls after it fetch the rest once."""
    url, exporter, rec = replayed
    path, end = tmp_path / "wh", exporter.clock_start + rec.duration
    code = (
        "from iosight.live import PrometheusFeed, PrometheusOptions\n"
        "from iosight.warehouse import Warehouse\n"
        f"o = PrometheusOptions({url!r}, delay=0.0, backfill={BINS * 300.0}, max_points=3)\n"
        f"PrometheusFeed(o).poll(Warehouse({str(path)!r}, create=True), now={end!r})\n"
    )
    env = child_env(IOSIGHT_TEST_CRASH_AT=f"{point}:1")
    killed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-500:]
    wh = Warehouse(path)
    rows = len(wh.table(LIVE_RATES)) if wh.has_table(LIVE_RATES) else 0
    assert rows == landed and resume_point(wh, "lustre") == (end - 600.0 if landed else None)
    feed = PrometheusFeed(_options(url, max_points=3))
    while feed.poll(wh, now=end).rows:
        pass
    got = wh.sql(f"select bin_start, write_bytes from {LIVE_RATES} order by bin_start")
    np.testing.assert_array_equal(got["bin_start"], exporter.clock_start + 300.0 * np.arange(BINS))
    np.testing.assert_allclose(got["write_bytes"], rec.write_bytes, rtol=1e-9)


def test_refused_query_and_oversized_answer_write_nothing(replayed, tmp_path):
    """A query Prometheus refuses is ``bad_query`` with its reason; an answer over
    ``max_bytes`` is ``too_large``; neither writes a row or moves the resume point."""
    url, exporter, rec = replayed
    wh = Warehouse(tmp_path / "wh", create=True)
    end = exporter.clock_start + rec.duration
    bad = PrometheusFeed(_options(url, read_query="sum(rate(lustre_read_bytes_total[$window])"))
    assert dict(bad.poll(wh, now=end).warnings) == {"bad_query": 1}
    small = PrometheusFeed(_options(url, max_bytes=100))
    assert dict(small.poll(wh, now=end).warnings) == {"too_large": 1}
    assert not wh.has_table(LIVE_RATES) and resume_point(wh, "lustre") is None


def _record(url: str, exporter: ReplayExporter, rec: Recording) -> None:
    """Write the server's raw answers for the recorded-JSON tests, when asked to."""
    target = os.environ.get("IOSIGHT_RECORD_PROMETHEUS")
    if not target:
        return
    options = _options(url)
    span = BinRange(exporter.clock_start + 300.0, exporter.clock_start + rec.duration, 300.0)
    answers = {d: query_range(options, q, span).decode() for d, q in options.queries().items()}
    doc = {
        "recorded": "raw query_range answers of a real Prometheus (Debian's 2.42.0) scraping "
        "iosight's replay exporter of SYNTHETIC bins, by tests/live/"
        "test_live_prometheus_server.py with IOSIGHT_RECORD_PROMETHEUS set",
        "queries": options.queries(),
        "span": {"first_end": span.first_end, "last_end": span.last_end, "width": span.width},
        "replayed": {
            "bin_start": (exporter.clock_start + 300.0 * np.arange(BINS)).tolist(),
            "read_bytes": rec.read_bytes.tolist(),
            "write_bytes": rec.write_bytes.tolist(),
        },
        "answers": answers,
    }
    with open(target, "w") as fh:
        json.dump(doc, fh, indent=1)
