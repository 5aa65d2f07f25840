"""The command line: exit codes, formats, and errors without tracebacks."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from typer.testing import CliRunner

from iosight.cli import app
from iosight.data import example_logs
from iosight.warehouse import Warehouse

runner = CliRunner()


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "wh"
    logs = [str(p) for p in example_logs()]
    result = runner.invoke(app, ["ingest", *logs, "--warehouse", str(path), "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "0 failed" in result.output
    return path


def test_jobs_csv_and_where(wh):
    result = runner.invoke(app, ["jobs", "-w", str(wh), "--where", "nprocs >= 64", "-f", "csv"])
    assert result.exit_code == 0
    df = pd.read_csv(io.StringIO(result.stdout))
    nprocs = Warehouse(wh).table("jobs", ["nprocs"])["nprocs"].to_numpy()
    assert len(df) == (nprocs >= 64).sum() > 0 and (df["nprocs"] >= 64).all()


def test_job_summary_and_sql(wh):
    result = runner.invoke(app, ["job", "32324925", "-w", str(wh)])
    assert result.exit_code == 0, result.output
    assert "bytes_written" in result.output and "seeks" in result.output
    result = runner.invoke(
        app,
        [
            "sql",
            "select count(*) as n from posix join jobs using (job_key)",
            "-w",
            str(wh),
            "-f",
            "csv",
        ],
    )
    assert result.exit_code == 0
    # every posix row belongs to a job: the join keeps all rows of the posix table
    assert int(result.stdout.splitlines()[1]) == Warehouse(wh).table("posix").num_rows


def test_user_errors_are_one_line(wh, tmp_path):
    for args in (
        ["sql", "select * from nope", "-w", str(wh)],
        ["sql", "selec 1", "-w", str(wh)],
        ["job", "999999999", "-w", str(wh)],
        ["jobs", "-w", str(tmp_path / "missing")],
        ["jobs", "-w", str(wh), "-f", "xml"],
        ["sql", "select 'a'::int", "-w", str(wh)],
        ["sql", "select error('x')", "-w", str(wh)],
        ["jobs", "--where", "nprocs > 'x'", "-w", str(wh)],
        ["job", "_", "-w", str(wh)],  # a LIKE wildcard matched every key
        ["job", "", "-w", str(wh)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert "Traceback" not in result.output and "error:" in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_ingest_exits_nonzero_when_a_source_fails(tmp_path):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"\x00" * 100)
    result = runner.invoke(app, ["ingest", str(bad), "-w", str(tmp_path / "wh")])
    assert result.exit_code == 2 and "1 failed" in result.output


def test_ingest_into_its_own_source_folder_makes_nothing(tmp_path):
    """`ingest src -w src` used to make tables/, _commits/, ... inside src before failing,
    and src then looked like a warehouse: its logs were never found again."""
    src = tmp_path / "src"
    src.mkdir()
    log = example_logs()[0]
    (src / log.name).write_bytes(log.read_bytes())
    for args, message in (
        (["ingest", str(src), "-w", str(src)], "holds other files"),
        (["ingest", str(tmp_path / "typo"), "-w", str(tmp_path / "new")], "no such file"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 1 and message in result.output, result.output
        assert "Traceback" not in result.output
    assert [p.name for p in src.iterdir()] == [log.name]
    assert not (tmp_path / "new").exists()
    result = runner.invoke(app, ["ingest", str(src), "-w", str(tmp_path / "wh")])
    assert result.exit_code == 0 and "1 ingested" in result.output, result.output


def test_errors_without_any_in_each_format(wh):
    """Scripts parse what they asked for, also when there is nothing to list."""
    expected = {"json": "[]", "jsonl": "", "csv": "source_path,error", "table": "no ingest errors"}
    for fmt, out in expected.items():
        result = runner.invoke(app, ["errors", "-w", str(wh), "-f", fmt])
        assert result.exit_code == 0 and result.stdout.strip() == out, (fmt, result.output)
    result = runner.invoke(app, ["errors", "-w", str(wh), "-f", "xml"])
    assert result.exit_code == 1 and "'format' option must be" in result.output


def test_a_figure_that_cannot_be_written_is_said_before_any_work(wh, tmp_path):
    for plot, message in (
        (tmp_path / "missing" / "x.png", f"no folder {tmp_path / 'missing'}"),
        (tmp_path / "x.xyz", "name a .png, .svg or .pdf file"),
    ):
        result = runner.invoke(app, ["job", "32324925", "-w", str(wh), "--plot", str(plot)])
        assert result.exit_code == 1 and message in result.output, result.output
        assert "Traceback" not in result.output and "bytes_written" not in result.output


def test_version_and_table_view_of_jobs(wh):
    from iosight import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == __version__
    result = runner.invoke(app, ["jobs", "-w", str(wh)])
    assert result.exit_code == 0
    # start times are shown as UTC dates on screen (job 4478544 ran in 2017)
    assert "2017-" in result.stdout


def test_ingest_compacts_with_one_line_unless_told_not_to(tmp_path, monkeypatch):
    """With the threshold lowered to 4 small files: eight example logs committed one by
    one with --no-compact keep their files; the next ingest compacts the tables with 4
    or more, saying so; ``compact`` by hand merges the rest (2 or more)."""
    from iosight.warehouse import _compact

    monkeypatch.setattr(_compact, "AUTO_SMALL_FILES", 4)
    last = next(str(p) for p in example_logs() if p.name == "sample-goodost.darshan")
    first = [str(p) for p in example_logs() if str(p) != last]
    path = tmp_path / "wh"
    base = ["-w", str(path), "--workers", "1", "--batch-size", "1"]
    result = runner.invoke(app, ["ingest", *first, *base, "--no-compact"])
    assert result.exit_code == 0 and "files ->" not in result.output, result.output
    assert len(Warehouse(path).table_files("jobs")) > 4
    result = runner.invoke(app, ["ingest", last, *base])
    assert result.exit_code == 0 and "files ->" in result.output, result.output
    assert len(Warehouse(path).table_files("jobs")) == 1
    for line in ("files ->", "no table has small files to merge"):
        again = runner.invoke(app, ["compact", "-w", str(path)])
        assert again.exit_code == 0 and line in again.output, again.output
    wh = Warehouse(path)
    assert {len(wh.table_files(t)) for t in wh.tables()} == {1}
