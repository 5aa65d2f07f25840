"""`iosight ingest` options: defaults are the library's, stated once."""

import typer

from iosight.cli import app
from iosight.warehouse import (
    AUTO_SMALL_FILES,
    DEFAULT_BATCH_SIZE,
    DEFAULT_INTERVAL,
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_SETTLE,
)


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
    assert helps["interval"][0] is None and helps["settle"][0] is None
    assert helps["interval"][1].endswith(f"(default {DEFAULT_INTERVAL:g}).")
    assert helps["settle"][1].endswith(f"default {DEFAULT_SETTLE}).")
    assert f"that have {AUTO_SMALL_FILES} or more" in helps["compact"][1]


def test_out_of_range_options_are_one_line_and_make_nothing(tmp_path):
    """--batch-size -4 used to loop for ever (memory growing), --workers -1 to wait for
    ever, --timeout -1 to fail every log."""
    from typer.testing import CliRunner

    from iosight.data import example_logs

    log = str(example_logs()[0])
    wh = tmp_path / "wh"
    for option, value, expected in (
        ("--batch-size", "-4", "'batch_size' parameter must be an integer >= 1"),
        ("--batch-size", "0", "'batch_size' parameter must be an integer >= 1"),
        ("--workers", "-1", "'workers' parameter must be an integer >= 0"),
        ("--timeout", "-1", "'timeout' parameter must be a number of seconds > 0"),
        ("--timeout", "0", "'timeout' parameter must be a number of seconds > 0"),
        ("--lock-timeout", "-1", "'lock_timeout' parameter must be a number of seconds >= 0"),
    ):
        result = CliRunner().invoke(app, ["ingest", log, "-w", str(wh), option, value])
        assert result.exit_code == 1, (option, value, result.output)
        assert expected in result.output and "Traceback" not in result.output
        assert not wh.exists()
