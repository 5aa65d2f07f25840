"""``iosight synth``: write clearly-labelled synthetic data.

One small command per generator; each calls its ``iosight.synth.<kind>`` function.
"""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import (
    WAREHOUSE_OPT,
    RichProgress,
    cli_errors,
    console,
    open_warehouse,
    print_frame,
)

group = typer.Typer(help="Generate synthetic data (marked synthetic).", no_args_is_help=True)


@group.command("facility")
def facility(
    warehouse: Path = WAREHOUSE_OPT,
    months: float = typer.Option(6.0, help="Length in 30-day months (at most 120)."),
    seed: int = typer.Option(1, help="Random seed (same seed, same data)."),
    start: str = typer.Option("2024-01-01", help="First day (UTC), 1970 to 2199."),
    jobs_per_day: float = typer.Option(
        1500.0, help="Mean arrivals of regular jobs per day (at most 100000)."
    ),
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


@group.command("monitoring")
def monitoring(
    jobs: int = typer.Option(100_000, "--jobs", help="Number of jobs (at most 1000000)."),
    seed: int = typer.Option(1, help="Random seed."),
    warehouse: Path = WAREHOUSE_OPT,
    samples: Path = typer.Option(
        None, help="Also write the raw 5 s samples (a .parquet file, long format); small runs only."
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


@group.command("writes")
def writes(
    platform: str = typer.Option(..., "--platform", "-p", help="Platform YAML or name."),
    out: Path = typer.Option(..., "--out", "-o", help="Samples file (.parquet or .csv)."),
    runs_out: Path | None = typer.Option(None, "--runs", help="Also write every run here."),
    patterns_per_scale: int = typer.Option(40, help="Patterns drawn per write scale."),
    scales: str = typer.Option(
        "1,2,4,8,16,32,64,128,200,256,400,512", help="Comma-separated node counts."
    ),
    seed: int = typer.Option(0, help="Seed of every random draw."),
    warehouse: Path | None = WAREHOUSE_OPT,
    to_warehouse: bool = typer.Option(
        False,
        help="Also write IOR-like Darshan tables (one row per rank per run) into the warehouse.",
    ),
) -> None:
    """Simulate writes on the platform's write path (SYNTHETIC) and group them into samples."""
    with cli_errors():
        from iosight._errors import parse_list
        from iosight.perfmodel import check_table_path, load_platform, write_table
        from iosight.synth.writes import WriteSimConfig, runs_to_warehouse, simulate_samples

        scale_list = tuple(parse_list(scales, int, "scales"))
        for path in (out, runs_out):  # before simulating, not after
            if path is not None:
                check_table_path(path)
        wh = open_warehouse(warehouse, create=True) if to_warehouse else None
        plat = load_platform(platform)
        cfg = WriteSimConfig(scales=scale_list, patterns_per_scale=patterns_per_scale, seed=seed)
        runs, samples = simulate_samples(plat, cfg, progress=RichProgress())
        write_table(samples, out)
        if runs_out is not None:
            write_table(runs, runs_out)
        if wh is not None:
            n = runs_to_warehouse(wh, runs, plat, seed=seed)
            console.print(f"wrote {n} synthetic jobs to the warehouse")
        console.print(
            f"SYNTHETIC: {len(runs)} runs -> {len(samples)} samples "
            f"({samples['converged'].mean():.0%} converged) written to {out}"
        )
        print_frame(
            samples.groupby("nodes")
            .agg(samples=("mean_time", "size"), median_mean_time_s=("mean_time", "median"))
            .reset_index(),
            title=f"synthetic samples on {plat.name}",
        )


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="synth")
