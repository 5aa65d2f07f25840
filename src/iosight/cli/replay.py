"""``iosight replay``: a recorded warehouse's logs re-emitted as they would have landed."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import RichProgress, cli_errors, console, open_warehouse


def replay(
    warehouse: Path = typer.Argument(..., help="The recorded warehouse to replay."),
    to: Path = typer.Option(..., "--to", help="Log directory to write (YEAR/MONTH/DAY/)."),
    speed: float = typer.Option(
        1.0, help="Recorded seconds per second (3600: an hour a second; 0 or inf: at once)."
    ),
    since: str = typer.Option(None, help="Only jobs known at or after this time (UTC)."),
    until: str = typer.Option(None, help="Only jobs known before this time (UTC)."),
    group: str = typer.Option(
        None, help="Job-total rows known within this long land as one table (default 1min)."
    ),
) -> None:
    """Write a warehouse's logs (or job-total rows) into a Darshan log directory in the
    order and at the (scaled) times they became known: `ingest --follow` reads them."""
    from iosight.timeline import parse_duration, parse_time
    from iosight.warehouse import replay as run_replay

    with cli_errors():
        report = run_replay(
            open_warehouse(warehouse),
            to,
            speed=speed,
            since=None if since is None else parse_time(since),
            until=None if until is None else parse_time(until),
            progress=RichProgress(),
            **({} if group is None else {"group": parse_duration(group)}),
        )
    console.print(report.summary())


def register(app: typer.Typer) -> None:
    app.command()(replay)
