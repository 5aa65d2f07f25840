"""Read-only commands never create a warehouse: only the commands that write sources do."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from iosight.cli import app

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
