"""Read-only commands never create a warehouse: only the commands that write sources do.
Every command that writes learns first, in one line, whether it can."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from iosight.cli import app
from iosight.warehouse import Warehouse, ingest
from tests_support import read_only_lock, read_only_mount

runner = CliRunner()

# commands that bring data in, so may make a new warehouse
WRITERS = {
    "ingest",
    "synth facility",
    "synth monitoring",
    "synth writes",
    "similarity import",
    "similarity import-codings",
}
# a value for each required argument or option, so the command gets as far as the warehouse
_VALUES = {"ident": "1", "query": "select 1", "job": "1", "--min-time": "1", "--max-time": "2"}
_EXTRA = {
    "perfmodel samples": ["--platform", "titan"],
    "schedule start": ["--model", "m", "--policy", "MDT"],
}


def _commands(cmd=None, prefix=()):
    """(name, required arguments) of every command that takes --warehouse."""
    cmd = cmd or typer.main.get_command(app)
    if hasattr(cmd, "list_commands"):
        ctx = typer.Context(cmd)
        for name in cmd.list_commands(ctx):
            yield from _commands(cmd.get_command(ctx, name), (*prefix, name))
        return
    if any("--warehouse" in getattr(p, "opts", ()) for p in cmd.params):
        required = []
        for p in cmd.params:
            if p.required:
                key = p.opts[0] if p.param_type_name == "option" else p.name
                required += (
                    [p.opts[0], _VALUES.get(key, "x")]
                    if key.startswith("-")
                    else [_VALUES.get(key, "x")]
                )
        yield " ".join(prefix), required + _EXTRA.get(" ".join(prefix), [])


# commands that write an existing warehouse (derived tables, models, codings)
UPDATERS = {
    "insights",
    "compact",
    "timeline build",
    "timeline update",
    "bursts train",
    "similarity series",
    "similarity codings",
    "similarity cluster",
    "similarity explore",
}
# the commands that never create a warehouse (UPDATERS among them)
READERS = [(name, args) for name, args in _commands() if name not in WRITERS]


def test_every_reader_is_listed():
    names = {name for name, _ in READERS}
    assert {"jobs", "job", "sql", "tables", "serve", "timeline show", "bursts report"} <= names
    assert WRITERS <= {name for name, _ in _commands()}


@pytest.mark.parametrize(("name", "args"), READERS, ids=[n for n, _ in READERS])
def test_a_read_only_command_creates_nothing(tmp_path, name, args):
    missing = tmp_path / "notawh"
    result = runner.invoke(app, [*name.split(), *args, "-w", str(missing)])
    assert result.exit_code != 0
    assert f"not an iosight warehouse: {missing}" in result.output
    assert not missing.exists()


def test_an_existing_directory_is_not_made_a_warehouse(tmp_path):
    result = runner.invoke(app, ["jobs", "-w", str(tmp_path)])
    assert result.exit_code == 1
    assert "create one with `iosight ingest`" in result.output
    assert list(tmp_path.iterdir()) == []


# SYNTHETIC: one made-up job in the published job-total layout
TOTALS = (
    "jobid,nprocs,start_time,end_time,total_POSIX_OPENS,total_POSIX_BYTES_WRITTEN\n"
    "7,4,1600000000,1600000600,8,1000000\n"
)


def _writer_args(name: str, tmp_path) -> list[str]:
    """What a writing command needs besides --warehouse to get as far as the warehouse."""
    table = tmp_path / "totals.csv"
    table.write_text(TOTALS)
    samples = ["--out", str(tmp_path / "s.parquet"), "--scales", "1", "--patterns-per-scale", "1"]
    return {
        "ingest": [str(table)],
        "similarity import": [str(table)],
        "similarity import-codings": [str(table)],
        "synth writes": ["--platform", "titan", *samples, "--to-warehouse"],
    }.get(name, [])


@pytest.mark.parametrize("name", sorted(WRITERS | UPDATERS))
def test_a_writer_on_a_read_only_warehouse_says_so_before_its_work(tmp_path, monkeypatch, name):
    """An empty warehouse: a command that worked before checking would fail on a missing
    table (or, compact, succeed); on a real one it computed for minutes first."""
    wh = Warehouse(tmp_path / "wh", create=True)
    read_only_lock(monkeypatch, wh.path)
    result = runner.invoke(app, [*name.split(), *_writer_args(name, tmp_path), "-w", str(wh.path)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: cannot write warehouse {wh.path}: its lock file: Read-only file system"
    ]


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_new_warehouse_under_a_file_is_one_line(tmp_path, name):
    (tmp_path / "file").write_text("")
    target = tmp_path / "file" / "wh"
    result = runner.invoke(app, [*name.split(), *_writer_args(name, tmp_path), "-w", str(target)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: cannot create warehouse {target}: Not a directory"
    ]


def test_writers_on_a_read_only_mount_say_so_in_one_line(tmp_path):
    """A real read-only mount (root included): creating a warehouse there was an
    OSError traceback, and insights or a timeline ran before failing at the commit."""
    ro = tmp_path / "ro"
    ro.mkdir()
    table = tmp_path / "totals.csv"
    table.write_text(TOTALS)
    assert ingest([table], Warehouse(ro / "wh", create=True), workers=1).ok
    prefix = read_only_mount(ro)
    if prefix is None:
        pytest.skip("no private read-only mount here (unshare missing or refused)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for args in (
        ["ingest", str(table), "-w", str(ro / "new")],
        ["insights", "-w", str(ro / "wh")],
        ["timeline", "build", "-w", str(ro / "wh")],
    ):
        cmd = [*prefix, sys.executable, "-m", "iosight", *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.splitlines() == [
            f"error: cannot create warehouse {ro / 'new'}: Read-only file system"
            if args[0] == "ingest"
            else f"error: cannot write warehouse {ro / 'wh'}: its lock file: Read-only file system"
        ]
        assert proc.stdout == ""
    assert not (ro / "new").exists()
