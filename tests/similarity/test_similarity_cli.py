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
    synth_monitoring(Warehouse(path), 40, seed=3)
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
