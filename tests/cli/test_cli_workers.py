"""Where heavy work runs: every heavy command takes ingest's --workers and --scheduler,
declared once (``cli._common``), and a bad worker count is one line before any work."""

import pytest
import typer
from typer.testing import CliRunner

from iosight.cli import app
from iosight.cli._common import SCHEDULER_OPT, WORKERS_OPT

# each heavy command, with what its required options need (nothing is read: the count is
# refused while the command line is parsed)
HEAVY = [
    ["ingest", "logs/", "-w", "wh"],
    ["bursts", "train", "-w", "wh"],
    ["perfmodel", "fit", "--samples", "s.parquet", "--platform", "titan", "--out", "m/"],
    ["similarity", "explore", "-w", "wh"],
    ["similarity", "report", "-w", "wh"],
    ["iosched", "experiment", "--out", "res/"],
]


def _command(path: list[str]):
    cmd = typer.main.get_command(app)
    for name in [p for p in path if not p.startswith("-")][:2]:
        cmd = cmd.get_command(typer.Context(cmd), name) if hasattr(cmd, "get_command") else cmd
    return cmd


@pytest.mark.parametrize("args", HEAVY, ids=[" ".join(a[:2]) for a in HEAVY])
def test_heavy_commands_share_one_workers_and_scheduler_option(args, tmp_path, monkeypatch):
    params = {p.name: p for p in _command(args).params}
    assert params["workers"].default == WORKERS_OPT.default == 0  # one per core, as ingest
    assert params["workers"].help == WORKERS_OPT.help
    assert params["scheduler"].default is None and params["scheduler"].help == SCHEDULER_OPT.help
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, [*args, "--workers", "-1"])
    assert result.exit_code == 1, result.output
    assert "'workers' parameter must be an integer >= 0 (0: one per core). Got -1" in result.output
    assert "Traceback" not in result.output and list(tmp_path.iterdir()) == []
