"""``iosight timeline``: bad option values are one clear error, before any work."""

from __future__ import annotations

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from iosight.cli import app

runner = CliRunner()


@pytest.fixture
def built(warehouse):
    jobs = {"job_key": ["a"], "start_time": [0.0], "end_time": [3000.0]}
    warehouse.commit({"jobs": [pa.table(jobs)]})
    assert runner.invoke(app, ["timeline", "build", "-w", str(warehouse.path)]).exit_code == 0
    return warehouse


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("bound", ["--since", "--until"])
def test_build_window_must_be_a_finite_time(built, bound, value):
    res = runner.invoke(app, ["timeline", "build", "-w", str(built.path), bound, value])
    assert res.exit_code == 1 and f"cannot read time '{value}'" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_show_rows_must_not_be_negative(built):
    args = ["timeline", "show", "-w", str(built.path)]
    res = runner.invoke(app, [*args, "--rows", "-1"])
    assert res.exit_code == 2 and "Invalid value for '--rows'" in res.output
    shown = runner.invoke(app, [*args, "--rows", "2"])
    assert shown.exit_code == 0 and "... 9 more rows" in shown.output  # 11 bins of 5 min
    none = runner.invoke(app, [*args, "--rows", "0"])
    assert none.exit_code == 0 and "... 11 more rows" in none.output


def test_build_as_of_says_so_and_a_bad_time_is_one_line(built):
    args = ["timeline", "build", "-w", str(built.path)]
    res = runner.invoke(app, [*args, "--as-of", "1970-01-01 01:00"])
    assert res.exit_code == 0 and "timeline as of 1970-01-01 01:00:00 UTC: 11 bins" in res.output
    res = runner.invoke(app, [*args, "--as-of", "1970-01-01 00:30"])  # before the job ended
    assert res.exit_code == 1 and "no jobs with start times" in res.output
    bad = runner.invoke(app, [*args, "--as-of", "soon"])
    assert bad.exit_code == 1 and "cannot read time 'soon'" in bad.output
    assert "Traceback" not in bad.output and len(bad.output.strip().splitlines()) == 1


def test_update_adds_new_jobs_in_one_line(built):
    args = ["timeline", "update", "-w", str(built.path)]
    assert runner.invoke(app, args).output.strip() == "timeline: up to date (no new jobs)"
    jobs = {"job_key": ["b"], "start_time": [3600.0], "end_time": [3900.0]}
    built.commit({"jobs": [pa.table(jobs)]})
    res = runner.invoke(app, args)  # 11 bins, one empty, then the new job's 2: one run
    last = res.output.strip().splitlines()[-1]
    assert res.exit_code == 0 and last == "timeline: 1 new job added, 14 bins rewritten"
