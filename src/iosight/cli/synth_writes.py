"""``iosight synth writes``: synthetic file-per-process write samples on a platform."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import WAREHOUSE_OPT, RichProgress, cli_errors, console, print_frame


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
        from iosight._errors import IosightError
        from iosight.perfmodel import load_platform, write_table
        from iosight.synth.writes import WriteSimConfig, runs_to_warehouse, simulate_samples

        try:
            scale_list = tuple(int(s) for s in scales.split(","))
        except ValueError:
            raise IosightError(
                f"--scales must be comma-separated integers. Got {scales!r}"
            ) from None
        plat = load_platform(platform)
        cfg = WriteSimConfig(scales=scale_list, patterns_per_scale=patterns_per_scale, seed=seed)
        runs, samples = simulate_samples(plat, cfg, progress=RichProgress())
        write_table(samples, out)
        if runs_out is not None:
            write_table(runs, runs_out)
        if to_warehouse:
            from iosight.cli._common import open_warehouse

            n = runs_to_warehouse(open_warehouse(warehouse, create=True), runs, plat, seed=seed)
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
    """Add ``writes`` to the ``synth`` group (created here when no other module made it)."""
    for info in app.registered_groups:
        if info.name == "synth":
            info.typer_instance.command("writes")(writes)
            return
    group = typer.Typer(
        help="Synthetic data generators (labelled synthetic).", no_args_is_help=True
    )
    group.command("writes")(writes)
    app.add_typer(group, name="synth")
