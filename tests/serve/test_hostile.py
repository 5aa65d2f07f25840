"""Hostile requests against a live ``iosight serve`` process (issue #26, items 10-13).

Each test sends an attack over HTTP to the real command, started on a free loopback
port over the SYNTHETIC warehouse of ``conftest.py``, and checks what comes back.
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests_support import child_env, free_port, planted_pickle

SECRET = "secret-4242"


class Live:
    """A running server: its port and, for ``iosight serve``, its process."""

    def __init__(self, port: int, proc: subprocess.Popen | None = None) -> None:
        self.port, self.proc = port, proc

    def get(self, path: str, host: str | None = None) -> tuple[int, dict, str]:
        """GET ``path``, with ``host`` as the Host header (default: 127.0.0.1:port)."""
        con = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            con.putrequest("GET", path, skip_host=True)
            con.putheader("Host", f"127.0.0.1:{self.port}" if host is None else host)
            con.endheaders()
            r = con.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
        finally:
            con.close()


@contextmanager
def live_server(path: Path, *options: str, cwd: Path) -> Iterator[Live]:
    """``iosight serve -w path`` in its own process, working directory ``cwd``."""
    port = free_port()
    env = child_env()
    cmd = [sys.executable, "-m", "iosight", "serve", "-w", str(path), "--port", str(port),
           *options]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    live = Live(port, proc)
    try:
        for _ in range(600):
            try:
                live.get("/errors")
                break
            except OSError:
                assert proc.poll() is None, proc.communicate()[1]
                time.sleep(0.1)
        yield live
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.fixture(scope="module")
def beside(tmp_path_factory) -> Path:
    """The server's working directory, holding ``.tmp/s.txt`` where DuckDB's default
    temporary folder would be."""
    cwd = tmp_path_factory.mktemp("cwd")
    (cwd / ".tmp").mkdir()
    (cwd / ".tmp" / "s.txt").write_text(SECRET)
    return cwd


@pytest.fixture(scope="module")
def live(served_path, beside) -> Iterator[Live]:
    with live_server(served_path, cwd=beside) as srv:
        yield srv


@pytest.fixture(scope="module")
def many_jobs(served_path, tmp_path_factory) -> Path:
    """A copy of the warehouse whose jobs table holds each job 100 times (SYNTHETIC
    rows): a costly condition then takes seconds, over many of DuckDB's vectors."""
    import duckdb

    path = tmp_path_factory.mktemp("many") / "wh"
    shutil.copytree(served_path, path)
    jobs = path / "tables" / "jobs"
    parts = [str(p) for p in sorted(jobs.glob("*.parquet"))]
    duckdb.sql(f"copy (select j.* from read_parquet({parts!r}, union_by_name=true) j, range(100))"
               f" to '{jobs / 'part-many.parquet'}'")  # fmt: skip
    for part in parts:
        Path(part).unlink()
    return path


def jobs_where(condition: str) -> str:
    return "/jobs?" + urllib.parse.urlencode({"where": condition})


def test_a_where_cannot_read_a_file_beside_the_server(live):
    """Item 10: DuckDB's default temporary folder (``.tmp``) was readable."""
    status, headers, body = live.get(
        jobs_where("cast((select content from read_text('.tmp/s.txt')) as int) > 0")
    )
    assert status == 400 and "script-src 'self'" in headers["content-security-policy"]
    assert SECRET not in body and "cannot use a subquery" in body


def test_a_string_bomb_is_refused_and_memory_stays_bounded(live):
    """Item 11: ``repeat()`` made DuckDB build gigabytes of strings per request."""
    import psutil

    assert live.proc is not None
    server = psutil.Process(live.proc.pid)
    before, peak, done = server.memory_info().rss, [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], server.memory_info().rss)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    t = time.monotonic()
    try:
        status, _, body = live.get(jobs_where("length(repeat('x', 10000000) || exe) > 0"))
    finally:
        done.set()
        watcher.join()
    assert status == 400 and "cannot use the || operator" in body  # the first of two
    assert time.monotonic() - t < 10
    assert peak[0] - before < 100e6, f"RSS grew by {(peak[0] - before) / 1e6:.0f} MB"
    assert live.get("/jobs?page_size=5")[0] == 200  # the server goes on


def test_a_slow_where_ends_at_the_deadline(many_jobs, beside):
    """Item 11: a condition that runs long is stopped at ``--query-timeout``: the
    statement running then, and every later one of the page, are interrupted."""
    slow = " and ".join(["strftime(to_timestamp(start_time), '%c %A %B') <> exe"] * 25)
    with live_server(many_jobs, "--query-timeout", "0.25", cwd=beside) as srv:
        t = time.monotonic()
        status, _, body = srv.get(jobs_where(slow))
        took = time.monotonic() - t
        assert status == 400 and "longer than 0.25 s" in body
        assert took < 0.25 + 1.5, f"answered after {took:.1f} s"
        assert srv.get("/jobs?page_size=5")[0] == 200  # the cursor works afterwards


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:{port}", "",
                                  "127.0.0.1.nip.io:{port}"])  # fmt: skip
def test_a_rebound_host_name_is_refused(live, host):
    """Item 12: DNS rebinding. Any Host header was answered."""
    status, headers, body = live.get("/jobs", host=host.format(port=live.port))
    assert status == 400 and "job-link" not in body
    assert "script-src 'self'" in headers["content-security-policy"]


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST",
                                  "[::1]:{port}"])  # fmt: skip
def test_the_loopback_names_are_answered(live, host):
    assert live.get("/errors", host=host.format(port=live.port))[0] == 200


def test_allowed_host_adds_a_name(served_path, beside):
    with live_server(served_path, "--allowed-host", "iosight.example.org", cwd=beside) as srv:
        assert srv.get("/errors", host=f"iosight.example.org:{srv.port}")[0] == 200
        assert srv.get("/errors", host="evil.example.com")[0] == 400


def test_a_bad_model_name_is_a_400_with_the_security_headers(live):
    """Item 13: a 5,000-character model name was a 500 (File name too long), no CSP."""
    status, headers, body = live.get(f"/facility?model={'m' * 5000}&min_time=100&max_time=200")
    assert status == 400 and "invalid model name" in body
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    status, _, body = live.get("/facility?model=../../etc&min_time=100&max_time=200")
    assert status == 400 and "invalid model name" in body


def test_long_parameters_and_deep_conditions_are_a_400(live):
    """A deeply nested 'where' raised RecursionError (a 500); an exe filter had no length
    bound."""
    status, headers, body = live.get("/jobs?where=" + "not%20" * 300 + "true")
    assert status == 400 and "nested too deeply" in body
    assert "script-src 'self'" in headers["content-security-policy"]
    status, _, body = live.get("/jobs?exe=" + "x" * 5000)
    assert status == 400 and "at most 4,096" in body


def test_an_unexpected_error_is_a_500_with_the_security_headers(served_path):
    """Item 13: Starlette's own 500 page went out without the headers."""
    from starlette.routing import Route

    from iosight.serve import BackgroundServer, create_app

    def broken(request):
        raise RuntimeError("a bug, not the user's doing")

    app = create_app(served_path)
    app.router.routes.append(Route("/broken", broken))
    with BackgroundServer(app) as srv:
        live = Live(int(srv.url.rsplit(":", 1)[1]))
        status, headers, body = live.get("/broken")
        assert live.get("/errors")[0] == 200  # the server goes on
    assert status == 500 and "a bug" not in body and "Traceback" not in body
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer"


def test_a_pickle_planted_in_the_models_folder_is_refused_not_run(live, served_path, tmp_path):
    """#29 item 1: forecasters were loaded with joblib, so a pickle placed in the
    warehouse's models/ folder ran in the server."""
    marker = tmp_path / "ran"
    folder = served_path / "models" / "planted"
    folder.mkdir()
    try:
        (folder / "metadata.json").write_text('{"format": 2, "name": "planted"}')
        (folder / "model.joblib").write_bytes(planted_pickle(marker))
        until = time.monotonic() + 120  # a 503 until the server's thread tried to load it
        ask = "/facility?model=planted&min_time=600&max_time=1800"
        while (got := live.get(ask))[0] == 503 and time.monotonic() < until:
            time.sleep(0.05)
        status, headers, body = got
    finally:
        shutil.rmtree(folder)
    assert status == 400 and "script-src 'self'" in headers["content-security-policy"]
    assert "model.joblib is a pickle file" in body and "Traceback" not in body
    assert not marker.exists()
