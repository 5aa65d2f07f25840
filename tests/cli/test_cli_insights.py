"""``iosight insights``: facility view, report, incremental runs, clear errors."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from insights_workloads import trace_and_ingest
from iosight.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    return trace_and_ingest(tmp_path_factory.mktemp("cli-insights"))


def test_insights_prints_the_facility_view_and_writes_a_report(traced, tmp_path):
    wh, keys = traced
    result = runner.invoke(app, ["insights", "-w", str(wh.path), "--report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"{len(keys)} jobs: {len(keys)} evaluated now" in result.output
    assert "P06" in result.output and "many small writes" in result.output
    page = (tmp_path / "insights.html").read_text()
    assert "<img" in page and "S01" in page
    again = runner.invoke(app, ["insights", "-w", str(wh.path), "-f", "csv"])
    assert again.exit_code == 0
    rules = pd.read_csv(io.StringIO(again.stdout))
    row = rules[(rules["code"] == "P21") & (rules["level"] == "high")].iloc[0]
    assert row["jobs"] == 1 and row["stake_bytes"] > 0
    assert "python" in row["worst_apps"]


def test_where_and_thresholds_file(traced, tmp_path):
    wh, _ = traced
    t = tmp_path / "t.yaml"
    t.write_text("interface_stdio: 0.9\n")
    result = runner.invoke(
        app, ["insights", "-w", str(wh.path), "--where", "jobid = 1305", "--thresholds", str(t)]
    )
    assert result.exit_code == 0, result.output
    assert "1 jobs: 1 evaluated now" in result.output
    assert "insights over 1 jobs" in result.output


def test_report_path_that_is_a_file_fails_before_the_rules_run(warehouse, tmp_path):
    import pyarrow as pa

    warehouse.commit({"jobs": [pa.table({"job_key": ["a"], "jobid": [1]})]})
    afile = tmp_path / "afile"
    afile.write_text("kept")
    result = runner.invoke(app, ["insights", "-w", str(warehouse.path), "--report", str(afile)])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"error: report path {afile} exists and is not a directory"
    assert afile.read_text() == "kept" and not warehouse.has_table("insights_jobs")


def test_where_matching_no_job_says_so(warehouse):
    import pyarrow as pa

    warehouse.commit({"jobs": [pa.table({"job_key": ["a"], "jobid": [1]})]})
    result = runner.invoke(app, ["insights", "-w", str(warehouse.path), "--where", "jobid = 2"])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == "error: no job matches the filter 'jobid = 2'"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--where", "no_such_column > 1"], "no_such_column"),
        (["--thresholds", "missing.yaml"], "cannot read thresholds"),
    ],
)
def test_bad_input_is_one_line(traced, args, message):
    wh, _ = traced
    result = runner.invoke(app, ["insights", "-w", str(wh.path), *args])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_job_shows_insights_under_the_summary(traced, tmp_path):
    wh, _ = traced
    result = runner.invoke(
        app, ["job", "1301", "-w", str(wh.path), "--plot", str(tmp_path / "j.png")]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index("per module") < out.index("I/O insights") < out.index("P06")
    assert (tmp_path / "j.png").stat().st_size > 0
    as_json = runner.invoke(app, ["job", "1301", "-w", str(wh.path), "-f", "json"])
    rows = pd.DataFrame(json.loads(as_json.stdout)["insights"]["findings"])  # the summary's
    assert rows["level"].iloc[0] == "high" and "P06" in set(rows["code"])
    assert list(rows["level"]) == sorted(rows["level"], key=["high", "warn", "info", "ok"].index)
    as_jsonl = runner.invoke(app, ["job", "1306", "-w", str(wh.path), "-f", "jsonl"])
    clean = pd.DataFrame(json.loads(as_jsonl.stdout)["insights"]["findings"])
    assert not clean["level"].isin(["high", "warn"]).any()
