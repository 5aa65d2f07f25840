"""``iosight synth``: write clearly-labelled synthetic data into a warehouse.

One small command per generator; each calls its ``iosight.synth.<kind>`` function.
"""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import WAREHOUSE_OPT, RichProgress, cli_errors, console, open_warehouse

group = typer.Typer(help="Generate synthetic data (marked synthetic).", no_args_is_help=True)


@group.command("facility")
def facility(
    warehouse: Path = WAREHOUSE_OPT,
    months: float = typer.Option(6.0, help="Length in 30-day months."),
    seed: int = typer.Option(1, help="Random seed (same seed, same data)."),
    start: str = typer.Option("2024-01-01", help="First day (UTC)."),
    jobs_per_day: float = typer.Option(1500.0, help="Mean arrivals of regular jobs per day."),
) -> None:
    """A synthetic facility's jobs with POSIX/STDIO records (iosight.synth.facility)."""
    with cli_errors():
        from iosight.synth.facility import FacilityConfig, generate_facility

        cfg = FacilityConfig(months=months, seed=seed, start=start, jobs_per_day=jobs_per_day)
        wh = open_warehouse(warehouse, create=True)
        s = generate_facility(wh, cfg, progress=RichProgress(fields=("jobs",)))
        console.print(
            f"synthetic facility: {sum(s.jobs.values())} jobs {s.jobs}, "
            f"{s.posix_records} POSIX and {s.stdio_records} STDIO records in {wh.path}"
        )


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="synth")
