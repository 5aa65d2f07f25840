"""Fixtures of the serve tests: one small warehouse with every page's data, a server, a browser.

The warehouse holds a SYNTHETIC facility (jobs, job totals, a timeline and a trained
burst forecaster), a real PyDarshan example log with DXT, a log written by the
tracer whose file names and exe carry HTML/JS markup, and one source that failed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

PROG = """
import os, sys
root = sys.argv[1]
d = os.path.join(root, "<script>window.__xss='dir'<")
os.makedirs(d, exist_ok=True)
for name in ("script>", "<img src=x onerror=\\"window.__xss='img'\\">.dat", "a&b 'single'.txt"):
    p = os.path.join(d if name == "script>" else root, name)
    with open(p, "wb") as fh:
        fh.write(b"x" * 4096)
    fd = os.open(p, os.O_RDONLY)
    os.read(fd, 1024)
    os.close(fd)
"""
# what works in containers without a GPU or network
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,900")  # fmt: skip
EXE_MARKUP = "<script>window.__xss='exe'</script>"


def traced_markup_log(tmp: Path) -> Path:
    """Run ``iosight trace --dxt`` on a program whose files and argv carry markup."""
    prog, data, logs = tmp / "prog.py", tmp / "data", tmp / "logs"
    prog.write_text(PROG)
    data.mkdir()
    from typer.testing import CliRunner

    from iosight.cli import app

    args = ["trace", "--dxt", "--log-dir", str(logs), "--", sys.executable, str(prog), str(data),
            EXE_MARKUP]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (log,) = logs.glob("*.darshan")
    return log


@pytest.fixture(scope="session")
def exe_markup() -> str:
    return EXE_MARKUP


@pytest.fixture(scope="session")
def served_path(tmp_path_factory) -> Path:
    import darshan

    from iosight.bursts import train_bursts
    from iosight.synth.facility import FacilityConfig, generate_facility
    from iosight.timeline import build_timeline
    from iosight.warehouse import Warehouse, ingest

    root = tmp_path_factory.mktemp("serve")
    wh = Warehouse(root / "wh", create=True)
    generate_facility(wh, FacilityConfig(months=8 / 30, seed=1, jobs_per_day=60))
    build_timeline(wh, bin_width=300.0)
    train_bursts(wh, directions="write", models="tree", modes="lead", horizons=[5],
                 search_iter=0, cv_splits=2, seed=0)  # fmt: skip
    dxt = Path(darshan.__file__).parent / "examples" / "example_logs" / "dxt.darshan"
    bad = root / "truncated.darshan"
    bad.write_bytes(dxt.read_bytes()[:600])
    ingest([dxt, traced_markup_log(root), bad], wh, workers=1)
    return wh.path


@pytest.fixture(scope="session")
def server(served_path):
    from iosight.serve import BackgroundServer, create_app

    with BackgroundServer(create_app(served_path)) as srv:
        yield srv


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (Debian's package) through chromedriver; skips with the reason."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[test]')")
    found = _chromium()
    if found is None:
        pytest.skip("no chromium/chromedriver here; .ci/run installs them with apt-get as root")
    opts = webdriver.ChromeOptions()
    opts.binary_location = found[0]
    for flag in FLAGS:
        opts.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="iosight-chromium-")
    opts.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(found[1]), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
