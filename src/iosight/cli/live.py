"""``iosight live``: follow mode, the live feeds and the server, from one configuration."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import cli_errors


def live(
    config: Path = typer.Argument(..., help="The YAML configuration (see docs/live.md)."),
    check: bool = typer.Option(
        False, "--check", help="Read and check the configuration, print it, start nothing."
    ),
) -> None:
    """Run iosight beside the machine: logs, LDMS, Prometheus and Slurm in as they
    arrive; forecasts and start times served; one line per event; SIGINT/SIGTERM stop."""
    import logging
    import time

    from iosight._memory import system_pool_at_start

    system_pool_at_start()  # before pyarrow's import: Arrow's C++ code too
    from iosight.live import LiveConfig, LiveService

    with cli_errors():
        settings = LiveConfig.from_yaml(config)
        if check:
            typer.echo(settings)
            return
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s UTC %(message)s", "%Y-%m-%d %H:%M:%S"))
        handler.formatter.converter = time.gmtime
        logger = logging.getLogger("iosight.live")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        LiveService(settings).run()


def register(app: typer.Typer) -> None:
    app.command()(live)
