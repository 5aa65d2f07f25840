"""The demo keeps its outputs in ./iosight-demo (or --workdir) and never deletes others' files."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from iosight.cli import app

runner = CliRunner()


def test_demo_outputs_stay_and_rerun_replaces_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["demo", "--only", "characterization"])
    assert result.exit_code == 0, result.output
    root = tmp_path / "iosight-demo"
    figures = list(root.glob("job-*.png"))
    assert figures and "iosight-demo/" in result.output
    printed = re.findall(r"^  [^:]+: (iosight-demo/\S+)$", result.output, re.MULTILINE)
    assert printed and all((tmp_path / p.strip()).exists() for p in printed)
    (root / "stale.txt").write_text("from an earlier run")
    again = runner.invoke(app, ["demo", "--only", "characterization"])
    assert again.exit_code == 0 and not (root / "stale.txt").exists()


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    result = runner.invoke(app, ["demo", "--workdir", str(mine), "--only", "characterization"])
    assert result.exit_code == 1 and "not made by 'iosight demo'" in result.output
    assert (mine / "thesis.tex").read_text() == "precious"


def test_demo_workdir_that_is_a_file_is_one_line(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("kept")
    result = runner.invoke(app, ["demo", "--workdir", str(afile), "--only", "characterization"])
    assert result.exit_code == 1 and "exists and is not a folder" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert afile.read_text() == "kept"


def test_demo_unknown_step_is_an_error_and_keeps_the_last_demo(tmp_path):
    root = tmp_path / "demo"
    root.mkdir()
    (root / ".iosight-demo").write_text("an earlier demo")
    (root / "figure.png").write_text("from the earlier demo")
    result = runner.invoke(app, ["demo", "--workdir", str(root), "--only", "bogus"])
    assert result.exit_code == 1, result.output
    assert "no demo step matches 'bogus'; steps: characterization, bursts" in result.output
    assert "insights" in result.output and len(result.output.strip().splitlines()) == 1
    assert (root / "figure.png").read_text() == "from the earlier demo"
