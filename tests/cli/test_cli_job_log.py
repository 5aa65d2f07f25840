"""`iosight job LOG`: one log's summary with no warehouse."""

from __future__ import annotations

from typer.testing import CliRunner

from iosight.cli import app
from iosight.data import example_logs

runner = CliRunner()


def _log(name: str):
    return next(p for p in example_logs() if p.name == name)


def test_a_log_file_is_summarised_without_a_warehouse(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./iosight-warehouse here, and none is created
    log = _log("ior_hdf5_example.darshan")
    result = runner.invoke(app, ["job", str(log), "--plot", str(tmp_path / "job.png")])
    assert result.exit_code == 0, result.output
    assert "job 32324925" in result.output and "4 processes" in result.output
    assert "per module" in result.output and "test123.h5" in result.output
    assert (tmp_path / "job.png").read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "iosight-warehouse").exists()


def test_an_unreadable_log_is_one_error_line(tmp_path):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"\x00" * 100)
    result = runner.invoke(app, ["job", str(bad)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.count("\n") == 1 and "error:" in result.output


def test_a_job_total_table_names_its_job_count(tmp_path):
    table = tmp_path / "totals.csv"
    table.write_text(
        "jobid,nprocs,start_time,end_time,total_POSIX_BYTES_READ\n1,4,0,10,100\n2,8,5,20,200\n"
    )
    result = runner.invoke(app, ["job", str(table)])
    assert result.exit_code == 1 and "holds" in result.output, result.output


def test_bracketed_names_print_verbatim(tmp_path):
    """An exe or path is data: "[/x]" in it once raised Rich's MarkupError (a traceback)
    and "[bold]" vanished into styling."""
    table = tmp_path / "totals.csv"
    table.write_text(
        "jobid,exe,nprocs,start_time,end_time,total_POSIX_BYTES_READ\n"
        "1,/bin/a[/x] [bold]run,4,0,10,100\n"
    )
    result = runner.invoke(app, ["job", str(table)])
    assert result.exit_code == 0, result.output
    assert "/bin/a[/x] [bold]run" in result.output


def test_a_shared_file_counts_all_ranks_and_shows_its_mean_per_rank():
    """example.darshan: 2048 ranks write one file, which Darshan keeps as one record of
    rank -1; the per-file row says 2048 ranks and 49 s per rank beside the 1 d 3 h sum."""
    result = runner.invoke(app, ["job", str(_log("example.darshan"))])
    assert result.exit_code == 0, result.output
    (row,) = [line for line in result.output.splitlines() if "vpicio.hdf5" in line]
    assert " 2048 " in row and " 1 d 3 h " in row and " 49 s " in row, row
    assert "run time 1 min 57 s" in result.output


def test_a_log_whose_job_record_is_garbage_says_what_is_unknown():
    """A pre-release 3.4 log: its records summarised, its job fields "unknown" (not a
    traceback for a null start time), the reader's warning line as a note."""
    from tests_support import garbage_job_logs

    log = next(p for p in garbage_job_logs() if "PNETCDF" in p.name)
    result = runner.invoke(app, ["job", str(log)])
    assert result.exit_code == 0, result.output
    assert "job unknown" in result.output
    assert "processes unknown, start unknown, run time unknown" in result.output
    assert "note: job record not in the format 3.41 layout" in result.output
    assert "per module" in result.output and "testFile" in result.output
