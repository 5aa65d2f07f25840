"""``iosight synth monitoring``: synthetic DKRZ-like monitoring with known job classes."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import WAREHOUSE_OPT, RichProgress, cli_errors, console, open_warehouse


def monitoring_command(
    jobs: int = typer.Option(100_000, "--jobs", help="Number of jobs."),
    seed: int = typer.Option(1, help="Random seed."),
    warehouse: Path = WAREHOUSE_OPT,
    samples: Path = typer.Option(
        None, help="Also write the raw 5 s samples (Parquet, long format); small runs only."
    ),
) -> None:
    """Generate labelled jobs (1-64 nodes, up to 8 h, 5 s samples, nine metrics)."""
    from iosight.synth.monitoring import synth_monitoring

    with cli_errors():
        counts = synth_monitoring(
            open_warehouse(warehouse, create=True),
            jobs,
            seed=seed,
            samples_path=samples,
            progress=RichProgress(),
        )
    console.print(f"{jobs} synthetic jobs written and coded; per class: {counts}")


def register(app: typer.Typer) -> None:
    for info in app.registered_groups:
        if info.name == "synth":
            synth = info.typer_instance
            break
    else:
        synth = typer.Typer(help="Generate realistic synthetic data.", no_args_is_help=True)
        app.add_typer(synth, name="synth")
    synth.command("monitoring")(monitoring_command)
