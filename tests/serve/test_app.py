"""The pages over HTTP: status, content, escaping, security headers, the CLI's edges."""

from __future__ import annotations

import hashlib
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from typer.testing import CliRunner

from iosight.cli import app
from iosight.serve import ServedWarehouse, is_loopback, plotly_js


def get(server, path: str) -> tuple[int, dict, str]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()


@pytest.fixture(scope="module")
def markup_key(served_path):
    wh = ServedWarehouse(served_path)
    return wh.sql("select job_key from jobs where exe like '%__xss%'")["job_key"].iloc[0]


def test_jobs_page_pages_and_sets_headers(server):
    status, headers, body = get(server, "/jobs?page_size=5&sort=nprocs&dir=asc")
    assert status == 200
    assert "script-src 'self'" in headers["content-security-policy"]
    assert body.count('class="job-link"') == 5
    assert "SYNTHETIC" in body  # synthetic jobs are labelled
    assert 'id="page-next"' in body


def test_bad_where_shows_an_error_not_a_trace(server):
    q = urllib.parse.quote("1=1) union all (select * from jobs")
    status, _, body = get(server, f"/jobs?where={q}")
    assert status == 400
    assert "condition on jobs columns" in body and "Traceback" not in body


def test_log_markup_is_escaped_in_the_job_page(server, markup_key):
    status, _, body = get(server, f"/job/{markup_key}")
    assert status == 200
    assert "window.__xss" in body  # it is shown...
    assert "<script>window.__xss" not in body  # ...never as markup
    assert "<img src=x" not in body
    assert "&lt;script&gt;window.__xss=&#39;exe&#39;&lt;/script&gt;" in body
    # the figure JSON escapes < so no </script> can close its data block early
    assert "\\u0026lt;img src=x" in body


def test_job_page_of_a_dxt_log_has_its_timeline(server, served_path):
    key = (
        ServedWarehouse(served_path)
        .sql("select job_key from jobs where source_path like '%dxt.darshan'")["job_key"]
        .iloc[0]
    )
    status, _, body = get(server, f"/job/{key[:10]}")  # a key prefix is enough
    assert status == 200
    assert 'id="fig-timeline"' in body and "DXT" in body
    assert 'id="files"' in body
    assert 'data-part="/job/' in body  # insights and similar jobs come as fragments
    status, _, part = get(server, f"/job/{key}/similar")
    assert status == 200 and 'id="no-similar"' in part and "similarity codings" in part


def test_unknown_job_is_a_400_with_the_reason(server):
    status, _, body = get(server, "/job/nosuchjob")
    assert status == 400 and "no job with id or key" in body


def test_facility_recommends_a_start(server):
    """On the forecast the server computes in the background (a 503 until it exists)."""
    until = time.monotonic() + 120
    while (got := get(server, "/facility?min_time=600&max_time=1800&policy=W3"))[0] == 503:
        assert time.monotonic() < until and 'id="rec-wait"' in got[2]
        time.sleep(0.05)
    status, _, body = got
    assert status == 200
    assert 'id="fig-facility"' in body and 'id="recommendation"' in body
    assert body.count("<tr") == 1 + 24  # the forecaster's next 24 bins


def test_facility_says_why_a_mostly_empty_timeline_has_no_threshold(tmp_path, example_warehouse):
    """PyDarshan's example logs (real, 2017-2023) in hourly bins: nearly every bin is
    empty, so neither direction has a burst threshold, and the page says why."""
    import shutil

    from iosight.serve import BackgroundServer, create_app
    from iosight.timeline import build_timeline
    from iosight.warehouse import Warehouse

    wh = Warehouse(shutil.copytree(example_warehouse.path, tmp_path / "wh"))  # written below
    build_timeline(wh, bin_width=3600.0)
    with BackgroundServer(create_app(wh.path)) as srv:
        status, _, body = get(srv, "/facility")
    assert status == 200 and 'id="fig-facility"' in body
    assert "write none/s, read none/s" in " ".join(body.split())
    for d in ("read", "write"):
        assert f"No burst threshold: {d} bytes per bin has no bursts to find: " in body


def test_timeline_api_zooms(server):
    _, _, body = get(server, "/api/timeline")
    whole = json.loads(body)
    status, _, body = get(server, "/api/timeline?start=0&end=1e12")
    assert status == 200 and json.loads(body)["bin_width"] == whole["bin_width"]
    x0 = whole["traces"][0]["x"][10] / 1000
    _, _, body = get(server, f"/api/timeline?start={x0}&end={x0 + 3600}")
    zoom = json.loads(body)
    assert zoom["bin_width"] == 300 and len(zoom["traces"][0]["x"]) == 12
    status, _, body = get(server, "/api/timeline?start=abc")
    assert status == 400 and "start" in json.loads(body)["error"]


def test_errors_page_lists_the_failed_source(server):
    status, _, body = get(server, "/errors")
    assert status == 200 and "truncated.darshan" in body


def test_served_plotly_js_is_the_shipped_bundle_with_its_recorded_checksum(server):
    """The page script is the vendored plotly.js basic bundle, unchanged since it was recorded."""
    status, _, body = get(server, "/static/plotly.min.js")
    shipped = plotly_js()
    assert status == 200 and body == shipped.read_text()
    assert body.lstrip().startswith("/**\n* plotly.js (basic - minified) v")
    recorded = re.search(r"sha256 `([0-9a-f]{64})`", (shipped.parent / "README.md").read_text())
    assert recorded and hashlib.sha256(shipped.read_bytes()).hexdigest() == recorded.group(1)


def test_loopback_hosts():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.7")


def test_cli_refuses_a_missing_warehouse(tmp_path):
    res = CliRunner().invoke(app, ["serve", "-w", str(tmp_path / "nope")])
    assert res.exit_code == 1
    assert "not an iosight warehouse" in res.output and "Traceback" not in res.output


def test_markup_constant_is_what_the_log_holds(served_path, exe_markup):
    exe = ServedWarehouse(served_path).sql("select exe from jobs where exe like '%__xss%'")
    assert exe["exe"].iloc[0].endswith(exe_markup)


def test_cli_binds_localhost_and_warns_for_another_host(served_path, monkeypatch):
    import iosight.serve

    calls = []
    monkeypatch.setattr(iosight.serve, "run", lambda app, host, port: calls.append((host, port)))
    res = CliRunner().invoke(app, ["serve", "-w", str(served_path)])
    assert res.exit_code == 0 and calls[-1] == ("127.0.0.1", 8050)
    assert "warning" not in res.output and "http://127.0.0.1:8050/" in res.output
    res = CliRunner().invoke(app, ["serve", "-w", str(served_path), "--host", "0.0.0.0",
                                   "--port", "9001"])  # fmt: skip
    assert res.exit_code == 0 and calls[-1] == ("0.0.0.0", 9001)
    assert "warning" in res.output and "anyone who can reach" in res.output


def test_job_page_shows_the_jobs_insights(server, served_path):
    from iosight.serve import job_insights_table

    wh = ServedWarehouse(served_path)
    key = wh.sql("select job_key from jobs where source_path like '%dxt.darshan'")["job_key"][0]
    status, _, body = get(server, f"/job/{key}/insights")
    assert status == 200
    found, why = job_insights_table(wh, key)
    assert found is not None and why == ""
    assert ('id="insights"' in body) == (not found.empty)
    for code in found["code"]:
        assert f"<td>{code}</td>" in body


def test_jobs_like_this_one_where_codings_were_built(served_path, tmp_path):
    import shutil

    from iosight.serve import BackgroundServer, create_app, similar_jobs
    from iosight.similarity import find_similar, series_from_darshan
    from iosight.warehouse import Warehouse

    path = tmp_path / "wh"
    shutil.copytree(served_path, path)
    series_from_darshan(Warehouse(path))
    wh = ServedWarehouse(path)
    key = wh.sql(  # a job whose coding others share: it has neighbours
        "with c as (select * from sim_codings where coding = 'bin-aggzeros' and not zero) "
        "select job_key from c where code in (select code from c group by code "
        "having count(*) > 1) order by job_key limit 1"
    )["job_key"][0]
    found, why = similar_jobs(wh, key)
    want = find_similar(Warehouse(path), key, top=10)
    assert len(want) and why == "" and found["job_key"].tolist() == want["job_key"].tolist()
    with BackgroundServer(create_app(path)) as srv:
        status, _, body = get(srv, f"/job/{key}/similar")
    assert status == 200 and 'id="similar"' in body
    for other in want["job_key"]:
        assert f'href="/job/{urllib.parse.quote(other)}"' in body


def test_demo_prints_the_command_that_browses_its_warehouse(tmp_path):
    import re

    from iosight.serve import BackgroundServer, create_app

    res = CliRunner().invoke(app, ["demo", "--only", "characterization", "--workdir",
                                   str(tmp_path / "demo")])  # fmt: skip
    assert res.exit_code == 0, res.output
    (path,) = re.findall(r"^browse it: iosight serve --warehouse (\S+)$", res.output, re.M)
    with BackgroundServer(create_app(path)) as srv:
        status, _, body = get(srv, "/jobs")
    assert status == 200 and body.count('class="job-link"') > 5


def test_job_timeline_holds_every_segment_of_its_job_among_others(served_path):
    """The job's segments, every one counted in some cell, and not other jobs'."""
    from iosight.serve._pages import job_timeline

    wh = ServedWarehouse(served_path)
    key = wh.sql("select job_key from jobs where source_path like '%dxt.darshan'")["job_key"][0]
    n = wh.sql("select count(*) n from dxt_posix where job_key = ?", [key])["n"][0]
    others = wh.sql("select count(*) n from dxt_posix where job_key <> ?", [key])["n"][0]
    kind, view = job_timeline(wh, key)
    assert others > 0 and kind == "dxt" and view.kind == "cells"  # 4,000 points at most
    assert view.total == view.rows["ops"].sum() == n


def test_served_hosts_are_the_bound_address_and_the_names_given():
    from iosight.serve import LOOPBACK_HOSTS, served_hosts

    assert served_hosts("127.0.0.1") == list(LOOPBACK_HOSTS) == served_hosts("::1")
    assert served_hosts("localhost", ["LocalHost"]) == list(LOOPBACK_HOSTS)
    assert served_hosts("0.0.0.0", ["box.example.org"]) == [*LOOPBACK_HOSTS, "box.example.org"]
    assert served_hosts("192.0.2.7") == ["192.0.2.7"]  # not the loopback names: not bound
    assert served_hosts("2001:db8::7", ["[2001:DB8::8]"]) == ["[2001:db8::7]", "[2001:db8::8]"]
