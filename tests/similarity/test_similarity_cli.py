"""``iosight similarity`` on bad input and options: one error line, nothing stored changed."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from iosight.cli import app
from iosight.synth.monitoring import synth_monitoring
from iosight.warehouse import Warehouse

runner = CliRunner()


def _fails_in_one_line(args: list[str], match: str) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code == 1, r.output
    assert isinstance(r.exception, SystemExit), r.exception  # no other exception escaped
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and match in lines[0], r.output


@pytest.fixture
def synth_wh(tmp_path):
    path = tmp_path / "wh"
    synth_monitoring(Warehouse(path, create=True), 40, seed=3)
    return path


def _splits(path):
    return Warehouse(path).sql("select * from sim_categories order by metric")


def test_codings_quantiles_option_overrides_stored_split_points(synth_wh):
    site = _splits(synth_wh)
    r = runner.invoke(app, ["similarity", "codings", "-w", str(synth_wh)])
    assert r.exit_code == 0, r.output
    assert _splits(synth_wh).equals(site)  # no option: the stored split points
    for bad in ("", "0.5", "0.9,0.5", "x"):
        _fails_in_one_line(
            ["similarity", "codings", "-w", str(synth_wh), "--quantiles", bad], "quantiles"
        )
    assert _splits(synth_wh).equals(site)
    r = runner.invoke(app, ["similarity", "codings", "-w", str(synth_wh), "--quantiles", "0.5,0.6"])
    assert r.exit_code == 0, r.output
    assert set(_splits(synth_wh)["origin"]) == {"quantiles 0.5/0.6"}


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("coding,jobid\n-1:2,5\n", "0..511"),
        ("coding,jobid\n1:99999999999999999999999,5\n", "0..511"),
        ("coding,jobid\n1:2,abc\n", "jobid must be an integer"),
        ("coding,jobid\n1:2,1.5\n", "jobid must be an integer"),
        ("coding,jobid\n", "no codings"),
    ],
)
def test_import_codings_bad_csv_is_one_error_line(tmp_path, body, match):
    csv = tmp_path / "bad.csv"
    csv.write_text(body)
    _fails_in_one_line(["similarity", "import-codings", str(csv), "-w", str(tmp_path / "w")], match)


HEAD = "job,node,fs,metric,time,value\n"


@pytest.mark.parametrize(
    ("body", "extra", "match"),
    [
        ("j,n,f,read_bytes,0,1\nj,n,f,read_bytes,later,2\n", [], "must be numbers"),
        ("j,n,f,read_bytes,0,nan\nj,n,f,read_bytes,5,2\n", [], "NaN"),
        ("", [], "no rows"),
        ("j,n,f,read_bytes,0,1\n", ["--segment", "inf"], "'segment_s' parameter"),
    ],
)
def test_import_bad_samples_is_one_error_line_and_keeps_the_warehouse(
    synth_wh, tmp_path, body, extra, match
):
    tables = "select job_key, coding, code from sim_codings order by all"
    before = Warehouse(synth_wh).sql(tables)
    csv = tmp_path / "mon.csv"
    csv.write_text(HEAD + body)
    _fails_in_one_line(["similarity", "import", str(csv), "-w", str(synth_wh), *extra], match)
    assert Warehouse(synth_wh).sql(tables).equals(before)


def test_cluster_infinite_eps_is_one_error_line(synth_wh):
    args = ["similarity", "cluster", "-w", str(synth_wh), "-c", "io-duration"]
    _fails_in_one_line([*args, "--algorithm", "tree", "--eps", "inf"], "'eps' parameter")
    assert not Warehouse(synth_wh).has_table("sim_runs")


@pytest.mark.parametrize("command", ["import", "series", "codings"])
def test_categories_help_shows_the_config_shape(command):
    r = runner.invoke(app, ["similarity", command, "--help"])
    assert r.exit_code == 0 and "{metric: [low, high]}" in r.output, r.output
