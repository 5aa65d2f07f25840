"""``iosight iosched``: allocate and place I/O resources, simulate, run the study, report."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import (
    FORMAT_OPT,
    SCHEDULER_OPT,
    WORKERS_OPT,
    RichProgress,
    cli_errors,
    console,
    print_frame,
)

group = typer.Typer(
    help="Schedule distributed I/O resources (I/O nodes, OSTs) among applications.",
    no_args_is_help=True,
)

APPS = typer.Argument(
    ..., help="apps.yaml (see docs/iosched.md), or the shipped example by name: example-apps."
)
RESOURCES = typer.Option(20, "--resources", "-N", help="Number of I/O resources N.")
ALLOCATOR = typer.Option("TCPU", "--allocator", help="Random, Static, BestBdw, Nsys, TCPU, MCKP.")
PLACEMENT = typer.Option("greedy-nc", "--placement", help="random, greedy-nc, greedy-c.")
FORGE = typer.Option(
    None,
    "--forge-dir",
    help="FORGE data folder (default: under $IOSIGHT_SHARED, else ./shared or ../shared).",
)


@group.command()
def allocate(
    apps: Path = APPS,
    resources: int = RESOURCES,
    allocator: str = ALLOCATOR,
    placement: str = PLACEMENT,
    seed: int = typer.Option(0, help="Seed of the random heuristics."),
    fmt: str = FORMAT_OPT,
) -> None:
    """How many and which I/O resources each application gets."""
    from iosight.iosched import allocate_apps

    with cli_errors():
        table, load = allocate_apps(apps, resources, allocator, placement, seed)
        print_frame(table, fmt, title=f"{table.attrs['schedule']}: I/O-load {load:.3f}")


@group.command()
def simulate(
    apps: Path = APPS,
    resources: int = RESOURCES,
    allocator: str = ALLOCATOR,
    placement: str = PLACEMENT,
    simulator: str = typer.Option("events", help="events (exact) or timestep (paper's)."),
    seed: int = typer.Option(0, help="Seed of the random heuristics."),
    fmt: str = FORMAT_OPT,
) -> None:
    """Schedule, then simulate until the first application finishes."""
    import pandas as pd

    from iosight.iosched import simulate_apps

    with cli_errors():
        table, metrics = simulate_apps(
            apps, resources, allocator, placement, simulator=simulator, seed=seed
        )
        print_frame(table, fmt, title=f"{table.attrs['schedule']} ({simulator})")
        print_frame(pd.DataFrame([metrics]), fmt, title="metrics")


@group.command()
def experiment(
    out: Path = typer.Option(..., "--out", help="Results folder (resumable)."),
    dataset: str = typer.Option("io-nodes", help="io-nodes, ost (parametric) or a curves CSV."),
    loads: str = typer.Option(
        "0.1:1.5:0.1",
        help="Target I/O-loads Theta: START:STOP:STEP (both ends included, step >= 0.001)"
        " or a list x,y,z; 3 decimals, each at most K/N (--apps / --resources).",
    ),
    sets: int = typer.Option(100, help="Application sets per load level."),
    seed: int = typer.Option(1, help="Root seed."),
    apps: int = typer.Option(40, "--apps", "-K", help="Applications per set K."),
    resources: int = RESOURCES,
    statistic: str = typer.Option("mean", help="FORGE repetitions: mean or best."),
    grid: str = typer.Option("interpolated", help="FORGE n: interpolated (1..8) or measured."),
    workers: int = WORKERS_OPT,
    scheduler: str = SCHEDULER_OPT,
    robustness: bool = typer.Option(True, help="Also run the profile-curve study."),
    family_curves: str = typer.Option(
        "median", help="Profile-curve study: median (per n) or cubic (the paper's Fig. 11 fit)."
    ),
    mckp_zero: bool = typer.Option(
        True, help="Also run MCKP-0: MCKP with the zero-forwarder option (FORGE b(0))."
    ),
    forge_dir: Path = FORGE,
) -> None:
    """The simulation study of the paper (§V-C, §VI), in parallel and resumable."""
    from iosight.iosched import (
        ExperimentConfig,
        parse_loads,
        run_experiment,
    )

    with cli_errors():
        cfg = ExperimentConfig(
            dataset=dataset,
            loads=parse_loads(loads),
            sets=sets,
            seed=seed,
            k=apps,
            n_resources=resources,
            statistic=statistic,
            grid=grid,
            robustness=robustness,
            family_curves=family_curves,
            mckp_zero=mckp_zero,
            forge_dir=str(forge_dir) if forge_dir else None,
        )
        done = run_experiment(cfg, out, workers=workers, scheduler=scheduler,
                              progress=RichProgress())  # fmt: skip
        console.print(f"{done['run']} tasks run, {done['skipped']} already there, in {out}")


@group.command()
def report(
    results: list[Path] = typer.Argument(..., help="One or more results folders."),
    out: Path = typer.Option(Path("iosched-report"), "--out", help="Report folder."),
    forge_dir: Path = FORGE,
    min_sets: int = typer.Option(10, help="Leave out load bins with fewer sets."),
    fmt: str = FORMAT_OPT,
) -> None:
    """Figures like Fig. 5-13 of the paper and the table checking its conclusions."""
    import pandas as pd

    from iosight.report.iosched import write_report

    with cli_errors():
        page = write_report(results, out, forge_dir=forge_dir, min_sets=min_sets)
        table = pd.read_csv(page.parent / "conclusions.csv", keep_default_na=False)
        print_frame(table, fmt, title="the paper's conclusions on our runs")
        if (page.parent / "profiles.csv").exists():
            profiles = pd.read_csv(page.parent / "profiles.csv")
            print_frame(profiles, fmt, title="profile families and their fits")
        console.print(f"{len(list(page.parent.glob('*.png')))} figures; open {page}")


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="iosched")
