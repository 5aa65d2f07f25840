"""A real Prometheus for tests: Debian's ``prometheus`` started in a temporary directory
(its own TSDB, listening on 127.0.0.1 only), scraping the given targets, waited for
(bounded) and stopped. :func:`start_prometheus` skips the test, saying why, where the
binary is missing or the server cannot start."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests_support import free_port

START_S = 20.0  # bound on the server's start


def _config(targets: list[str], interval: str) -> str:
    """One scrape job over ``targets`` every ``interval`` (timestamps honoured: the
    replay exporter stamps its samples with the replay clock)."""
    return json.dumps(
        {
            "global": {"scrape_interval": interval, "scrape_timeout": interval},
            "scrape_configs": [
                {
                    "job_name": "replay",
                    "honor_timestamps": True,
                    "static_configs": [{"targets": targets}],
                }
            ],
        }
    )  # YAML is a superset of JSON


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False


@contextmanager
def start_prometheus(root: Path, targets: list[str], interval: str = "50ms") -> Iterator[str]:
    """Run Prometheus scraping ``targets`` (``host:port``) until the block ends; yield its
    base URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("no prometheus binary (Debian's `prometheus` package; .ci/run installs it)")
    root.mkdir(parents=True, exist_ok=True)
    (root / "prometheus.yml").write_text(_config(targets, interval))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(root / "prometheus.log", "wb")
    proc = subprocess.Popen(
        [binary, f"--config.file={root / 'prometheus.yml'}",
         f"--storage.tsdb.path={root / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + START_S
        while not _ready(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (root / "prometheus.log").read_text(errors="replace")[-400:]
                pytest.skip(f"prometheus did not start within {START_S:g} s: {tail}")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
