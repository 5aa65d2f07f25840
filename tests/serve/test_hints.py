"""A page that says what to run names a command that works on the served warehouse."""

from __future__ import annotations

import html
import re
import shlex
import shutil
import urllib.request

from typer.testing import CliRunner

from iosight.cli import app
from iosight.serve import BackgroundServer, ServedWarehouse, create_app, similar_jobs

runner = CliRunner()


def _hinted(text: str) -> list[str]:
    """The arguments of the ``iosight ...`` command line that ends a hint."""
    (command,) = re.findall(r"(iosight .+?)(?:</code>)?$", html.unescape(text))
    return shlex.split(command)[1:]


def _ok(args: list[str]) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output


def test_the_similar_jobs_hint_builds_the_codings(served_path, tmp_path):
    path = tmp_path / "served wh"  # a space: the hint quotes the path
    shutil.copytree(served_path, path)
    wh = ServedWarehouse(path)
    key = wh.sql("select job_key from jobs where source_path like '%dxt.darshan'")["job_key"][0]
    df, why = similar_jobs(wh, key)
    assert df is None and "no similarity codings" in why
    _ok(_hinted(why))
    wh.refresh()
    assert wh.has_table("sim_codings")
    assert "no similarity codings" not in similar_jobs(wh, key)[1]


def test_the_facility_hint_trains_a_forecaster(served_path, tmp_path):
    path = tmp_path / "wh"
    shutil.copytree(served_path, path)
    shutil.rmtree(path / "models")

    def facility() -> str:
        with BackgroundServer(create_app(path)) as srv:
            with urllib.request.urlopen(srv.url + "/facility", timeout=60) as r:
                return r.read().decode()

    page = facility()
    (hint,) = re.findall(r"<p class=\"muted\" id=\"no-model\">(.*?)</p>", page)
    # the named command, kept short (one model, one horizon): only the options are added
    _ok([*_hinted(hint), "--models", "tree", "--horizons", "5", "--direction", "write"])
    assert 'id="forecast-form"' in facility() and 'id="no-model"' not in facility()
