"""`iosight ingest` options: defaults are the library's, stated once."""

import typer

from iosight.cli import app
from iosight.warehouse import DEFAULT_BATCH_SIZE, DEFAULT_LOCK_TIMEOUT


def test_ingest_help_states_the_library_defaults():
    root = typer.main.get_command(app)
    cmd = root.get_command(typer.Context(root), "ingest")
    helps = {p.name: (p.default, p.help) for p in cmd.params}
    # the CLI passes None, so the library's default applies; the help says which it is
    assert helps["batch_size"] == (
        None,
        f"At most this many logs per atomic commit (default {DEFAULT_BATCH_SIZE}).",
    )
    assert helps["lock_timeout"][0] is None
    assert helps["lock_timeout"][1].endswith(f"(default {DEFAULT_LOCK_TIMEOUT:g}).")
