"""The Prometheus feed on answers recorded from a real Prometheus (``prometheus_data/
query_range.json``: Debian's Prometheus 2.42.0 scraping the replay exporter of SYNTHETIC
bins), on bad answers made from them, and against servers that are down or slow (real
sockets on 127.0.0.1)."""

from __future__ import annotations

import copy
import json
import logging
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.live import FeedReport, PrometheusFeed, PrometheusOptions
from iosight.live._prometheus import (
    LIVE_RATES,
    BinRange,
    SourceFailure,
    plan_range,
    rates_from_response,
    resume_point,
)
from iosight.warehouse import Warehouse
from tests_support import free_port

RECORDED = json.loads((Path(__file__).parent / "prometheus_data/query_range.json").read_text())
SPAN = BinRange(**RECORDED["span"])


def _answer(direction: str) -> bytes:
    return RECORDED["answers"][direction].encode()


def _edited(direction: str, edit) -> bytes:
    """The recorded answer with ``edit`` applied to its parsed JSON (a bad answer)."""
    doc = copy.deepcopy(json.loads(_answer(direction)))
    edit(doc)
    return json.dumps(doc).encode()


def test_each_sample_at_t_is_the_bin_ending_at_t_in_bytes():
    """The sample at ``t`` is the bin ``[t - 300, t)`` holding ``rate * 300`` bytes: the
    recorded answers give the replayed bins back."""
    for direction in ("read", "write"):
        report = FeedReport("test", 0.0)
        got = rates_from_response(_answer(direction), SPAN, report)
        want = dict(zip(RECORDED["replayed"]["bin_start"],
                        RECORDED["replayed"][f"{direction}_bytes"], strict=True))  # fmt: skip
        assert sorted(got) == sorted(want) and not report.warnings
        np.testing.assert_allclose([got[s] for s in want], list(want.values()), rtol=1e-9)


def test_several_series_are_summed():
    """An answer of per-target series (a query without ``sum``) sums them per bin."""
    body = _edited("read", lambda d: d["data"]["result"].append(d["data"]["result"][0]))
    got = rates_from_response(body, SPAN, FeedReport("test", 0.0))
    once = rates_from_response(_answer("read"), SPAN, FeedReport("test", 0.0))
    assert got == {s: 2 * v for s, v in once.items()}


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda d: d.update(status="error", error="query timed out"), "not a success"),
        (lambda d: d["data"].update(resultType="vector"), r"no range \(matrix\) result"),
        (lambda d: d["data"].update(result={"values": []}), "not a list of series"),
        (lambda d: d["data"]["result"][0].pop("values"), "no list of values"),
    ],
)
def test_an_answer_that_cannot_be_read_is_malformed(edit, why):
    with pytest.raises(SourceFailure, match=why) as failure:
        rates_from_response(_edited("read", edit), SPAN, FeedReport("test", 0.0))
    assert failure.value.kind == "malformed"


def test_truncated_answer_is_malformed():
    with pytest.raises(SourceFailure, match="not JSON") as failure:
        rates_from_response(_answer("read")[:-40], SPAN, FeedReport("test", 0.0))
    assert failure.value.kind == "malformed"


@pytest.mark.parametrize(
    "sample",
    [["1795802400", "NaN"], ["1795802400", "-5"], ["1795802400", "+Inf"],
     ["1795802401", "5"], ["1795799999", "5"], ["1795802400"], "x"],
)  # fmt: skip
def test_a_bad_sample_is_left_out_and_counted(sample):
    """Not a number, negative, infinite, off the query's grid or outside it, not a pair."""
    body = _edited("read", lambda d: d["data"]["result"][0]["values"].insert(0, sample))
    report = FeedReport("test", 0.0)
    got = rates_from_response(body, SPAN, report)
    assert got == rates_from_response(_answer("read"), SPAN, FeedReport("test", 0.0))
    assert dict(report.warnings) == {"malformed": 1}


def test_bad_samples_are_each_counted_in_one_warning_line(caplog):
    def spoil(doc):
        doc["data"]["result"][0]["values"][1][1] = "NaN"
        doc["data"]["result"][0]["values"][3][1] = "-1"

    report = FeedReport("test", 0.0)
    with caplog.at_level(logging.WARNING, logger="iosight.live"):
        got = rates_from_response(_edited("write", spoil), SPAN, report)
    assert len(got) == len(RECORDED["replayed"]["bin_start"]) - 2
    assert dict(report.warnings) == {"malformed": 2} and len(caplog.records) == 1


def test_the_range_is_chunked_to_max_points_and_waits_for_ended_bins():
    w = 300.0
    # bins ended by now - delay: ends 600..3000 (9 bins), at most 4 per poll
    assert plan_range(300.0, 3000.0 + 59, width=w, delay=0, max_points=4) == BinRange(
        600.0, 1500.0, w
    )
    assert plan_range(300.0, 3000.0 + 59, width=w, delay=60, max_points=100) == BinRange(
        600.0, 2700.0, w
    )
    assert plan_range(2700.0, 3000.0 + 59, width=w, delay=60, max_points=100) is None
    assert plan_range(300.0, 600.0, width=w, delay=0, max_points=1).bins == 1


@pytest.mark.parametrize(
    "options, why",
    [
        ({"url": "localhost:9090"}, "http"),
        ({"preset": "gpfs"}, "unknown Prometheus preset"),
        ({"max_points": 0}, "max_points"),
        ({"max_points": 11_001}, "max_points"),
        ({"timeout": float("inf")}, "timeout"),
        ({"delay": -1}, "delay"),
    ],
)
def test_bad_options_are_one_error(options, why):
    with pytest.raises(IosightError, match=why):
        PrometheusOptions(**({"url": "http://127.0.0.1:9090"} | options))


def test_queries_override_the_preset_and_get_the_window():
    o = PrometheusOptions("http://p:9090", preset="node-disk", write_query="sum(w[$window])",
                          bin_width=60)  # fmt: skip
    assert o.queries() == {
        "read": "sum(rate(node_disk_read_bytes_total[60s]))",
        "write": "sum(w[60s])",
    }
    assert o.name == "node-disk"


def _poll_twice(url: str, wh: Warehouse, timeout: float = 2.0) -> list[FeedReport]:
    feed = PrometheusFeed(PrometheusOptions(url, timeout=timeout))
    return [feed.poll(wh, now=1.8e9), feed.poll(wh, now=1.8e9 + 300)]


def test_server_down_is_counted_once_warned_and_writes_nothing(tmp_path, caplog):
    """A closed port: ``source_down`` on each poll, one warning line for the outage,
    nothing written, the resume point unset (the same bins are asked again)."""
    wh = Warehouse(tmp_path / "wh", create=True)
    with caplog.at_level(logging.WARNING, logger="iosight.live"):
        reports = _poll_twice(f"http://127.0.0.1:{free_port()}", wh)
    assert [dict(r.warnings) for r in reports] == [{"source_down": 1}] * 2
    assert [r.rows for r in reports] == [0, 0]
    assert len(caplog.records) == 1 and "cannot reach it" in caplog.records[0].getMessage()
    assert not wh.has_table(LIVE_RATES) and resume_point(wh, "lustre") is None


def test_slow_server_is_counted_within_the_timeout(tmp_path):
    """A socket that accepts connections and never answers: ``slow``, after the timeout
    and not much later."""
    wh = Warehouse(tmp_path / "wh", create=True)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        began = time.monotonic()
        report = PrometheusFeed(PrometheusOptions(url, timeout=0.3)).poll(wh, now=1.8e9)
        took = time.monotonic() - began
    assert dict(report.warnings) == {"slow": 1} and report.rows == 0
    assert 0.3 <= took < 2.0
    assert not wh.has_table(LIVE_RATES)


def _serve_once(server: socket.socket, stop: threading.Event, pause: float, close: bool) -> None:
    """Answer one request with the headers of a 100,000-byte body, then send one byte of
    it every ``pause`` seconds, or close the connection after ten (``close``)."""
    conn, _ = server.accept()
    with conn:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        for sent in range(100_000):
            if stop.wait(pause) or (close and sent == 10):
                return
            try:
                conn.sendall(b" ")
            except OSError:
                return


def _poll_answered(tmp_path, pause: float, close: bool) -> tuple[FeedReport, float]:
    """One poll (timeout 0.3 s) of a server answering as :func:`_serve_once` does, and how
    long it took."""
    wh = Warehouse(tmp_path / "wh", create=True)
    stop = threading.Event()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        sender = threading.Thread(target=_serve_once, args=(server, stop, pause, close))
        sender.start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        began = time.monotonic()
        report = PrometheusFeed(PrometheusOptions(url, timeout=0.3)).poll(wh, now=1.8e9)
        took = time.monotonic() - began
        stop.set()
        sender.join()
    assert report.rows == 0 and not wh.has_table(LIVE_RATES)
    return report, took


def test_server_trickling_its_answer_is_slow_within_about_the_timeout(tmp_path):
    """Each read gets a byte in time, but the answer as a whole does not: ``slow``, not a
    poll held until the whole answer trickled in."""
    report, took = _poll_answered(tmp_path, pause=0.05, close=False)
    assert dict(report.warnings) == {"slow": 1}
    assert 0.3 <= took < 1.5


def test_connection_closed_in_an_answer_is_source_down(tmp_path):
    report, took = _poll_answered(tmp_path, pause=0.0, close=True)
    assert dict(report.warnings) == {"source_down": 1} and took < 1.5


def test_broken_chunked_answer_is_source_down(tmp_path):
    """A chunked answer whose chunk size is not hex: ``source_down``, not a traceback."""
    wh = Warehouse(tmp_path / "wh", create=True)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")

        sender = threading.Thread(target=answer)
        sender.start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        report = PrometheusFeed(PrometheusOptions(url, timeout=2)).poll(wh, now=1.8e9)
        sender.join()
    assert dict(report.warnings) == {"source_down": 1} and report.rows == 0
