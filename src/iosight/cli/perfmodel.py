"""``iosight perfmodel``: write-performance models for multistage write paths (Xie et al.)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from iosight.cli._common import (
    FORMAT_OPT,
    SCHEDULER_OPT,
    WAREHOUSE_OPT,
    WORKERS_OPT,
    RichProgress,
    cli_errors,
    console,
    open_warehouse,
    print_frame,
)

group = typer.Typer(
    help="Predict file-per-process write times from write-path features (Xie et al.).",
    no_args_is_help=True,
)
platform_group = typer.Typer(
    help="Platform descriptions (stages, counts, mappings).", no_args_is_help=True
)
group.add_typer(platform_group, name="platform")
STRIPES_OPT = typer.Option(
    None,
    "--stripes",
    "-W",
    help="Lustre stripe count; omitted or 0: the platform's default (as 'lfs setstripe -c 0').",
)


@platform_group.command("show")
def platform_show(
    platform: str = typer.Argument(..., help="Platform YAML, or a shipped name (titan, cetus)."),
    format: str = FORMAT_OPT,
) -> None:
    """Show the stages of a platform's write path, component counts and mappings."""
    with cli_errors():
        from iosight.perfmodel import load_platform

        plat = load_platform(platform)
        if format == "table":
            console.print(
                f"[bold]{escape(plat.name)}[/] "
                + escape(f"({plat.filesystem}): {plat.description}"),
                markup=True,
            )
        print_frame(plat.summary(), format, title=f"write path of {plat.name}")


@group.command("features")
def features(
    platform: str = typer.Argument(..., help="Platform YAML, or a shipped name."),
    nodes: int = typer.Option(..., "--nodes", "-n", help="Compute nodes n."),
    cores: int = typer.Option(..., "--cores", "-m", help="Writing cores per node m."),
    size: str = typer.Option(..., "--size", "-K", help="Bytes per file K, e.g. 1GiB."),
    stripes: int | None = STRIPES_OPT,
    start_target: str | None = typer.Option(None, help="Lustre start OST: sequence|random."),
    placement: str = typer.Option("block", help="Node placement: block or random."),
    first_node: int = typer.Option(0, help="First node of a block placement."),
    seed: int = typer.Option(0, help="Seed for random placement / start OSTs."),
    gpfs_count: int = typer.Option(
        43, "--gpfs-features", help="GPFS: 43 (every Table I symbol) or the paper's 41."
    ),
    format: str = FORMAT_OPT,
) -> None:
    """Print every feature of Tables I/II for one write pattern, and their count."""
    with cli_errors():
        from iosight.perfmodel import (
            WritePattern,
            describe_features,
            load_platform,
            parse_size,
            place_nodes,
        )

        plat = load_platform(platform)
        pat = WritePattern(nodes, cores, parse_size(size), stripes, start_target)
        pat.check(plat)
        where = place_nodes(plat, nodes, placement, first=first_node, seed=seed)
        table = describe_features(plat, pat, where, seed=seed, gpfs_count=gpfs_count)
        print_frame(table, format, title=f"{len(table)} features on {plat.name}", max_rows=100)


@group.command("samples")
def samples(
    platform: str | None = typer.Option(None, "--platform", "-p", help="Platform YAML or name."),
    warehouse: Path | None = WAREHOUSE_OPT,
    runs: Path | None = typer.Option(None, "--runs", help="Runs CSV/Parquet instead of logs."),
    tokio: Path | None = typer.Option(None, "--tokio", help="A TOKIO-ABC summaries .csv.gz."),
    cores_per_node: int | None = typer.Option(None, help="Ranks per node (default: platform's)."),
    confidence: float | None = typer.Option(None, help="CLT confidence (0.9 Lustre, 0.98 GPFS)."),
    error: float = typer.Option(0.1, help="CLT error bound, a share of the mean."),
    max_runs: int = typer.Option(9, help="Runs after which a pattern stops unconverged."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write samples (.parquet/.csv)."),
    format: str = FORMAT_OPT,
) -> None:
    """Write samples: file-per-process runs grouped into pattern means (CLT test, §IV-A)."""
    with cli_errors():
        from iosight.perfmodel import collect_samples, load_platform, tokio_samples, write_table

        if tokio is not None:
            from iosight.data import locate

            table = tokio_samples(locate(tokio))
            summary = (
                table.groupby(["system", "app"])
                .agg(
                    samples=("write_time", "size"),
                    median_write_s=("write_time", "median"),
                    median_file_bytes=("size", "median"),
                )
                .reset_index()
            )
        else:
            if platform is None:
                _require("--platform")
            plat = load_platform(platform)
            wh = None if runs is not None else open_warehouse(warehouse)
            table = collect_samples(
                plat,
                warehouse=wh,
                runs_csv=runs,
                cores_per_node=cores_per_node,
                confidence=confidence,
                error=error,
                max_runs=max_runs,
            )
            summary = (
                table.groupby("nodes")
                .agg(
                    samples=("mean_time", "size"),
                    converged=("converged", "mean"),
                    median_mean_time_s=("mean_time", "median"),
                )
                .reset_index()
            )
        if out is not None:
            console.print(f"wrote {len(table)} samples to {write_table(table, out)}")
        print_frame(summary, format, title="write samples")


def _require(option: str) -> None:
    from iosight._errors import IosightError

    raise IosightError(f"{option} is required here")


@group.command("fit")
def fit(
    samples: Path = typer.Option(..., "--samples", "-s", help="Samples from 'perfmodel samples'."),
    platform: str = typer.Option(..., "--platform", "-p", help="Platform YAML or name."),
    out: Path = typer.Option(..., "--out", "-o", help="Model directory to write."),
    family: str = typer.Option(
        "lasso",
        help="Family to save: lasso, linear, gradient "
        "boosting, random forest, median, or best (lowest val. MSE).",
    ),
    min_time: float = typer.Option(5.0, help="Drop samples faster than this (s), §IV-A."),
    train_max_nodes: int = typer.Option(128, help="Largest training scale; above it: test."),
    seed: int = typer.Option(0, help="Seed of the validation split and the tree models."),
    workers: int = WORKERS_OPT,
    scheduler: str = SCHEDULER_OPT,
    format: str = FORMAT_OPT,
) -> None:
    """Search Lasso over 255 training sets x shrinkage 0..10 and compare model families."""
    with cli_errors():
        from iosight.perfmodel import fit_model, load_platform, read_table

        model = fit_model(
            read_table(samples),
            load_platform(platform),
            family=family,
            min_time=min_time,
            train_max_nodes=train_max_nodes,
            seed=seed,
            workers=workers,
            scheduler=scheduler,
            progress=RichProgress(),
        )
        path = model.save(out)
        if format == "table":
            label = " (synthetic samples)" if model.meta["synthetic"] else ""
            console.print(
                f"saved {model.family} model to {path}{label}; training scales "
                f"{list(model.scales)}, settings {model.params}"
            )
        cols = [
            "family",
            "test_set",
            "samples",
            "within_20",
            "within_30",
            "overestimated",
            "underestimated",
        ]
        print_frame(
            model.accuracy[cols].round(3), format, title="accuracy on the test sets (Table VI)"
        )
        if model.coefficients is not None:
            print_frame(model.coefficients, format, title="selected features (Table V)")


def _pattern(nodes, cores, size, stripes):
    from iosight.perfmodel import WritePattern, parse_size

    return WritePattern(nodes, cores, parse_size(size), stripes)


MODEL_OPT = typer.Option(..., "--model", help="Model directory from 'perfmodel fit'.")
NODES_OPT = typer.Option(..., "--nodes", "-n", help="Compute nodes n.")
CORES_OPT = typer.Option(..., "--cores", "-m", help="Writing cores per node m.")
SIZE_OPT = typer.Option(..., "--size", "-K", help="Bytes per file K, e.g. 2GiB.")


@group.command("predict")
def predict(
    model: Path = MODEL_OPT,
    nodes: int = NODES_OPT,
    cores: int = CORES_OPT,
    size: str = SIZE_OPT,
    stripes: int | None = STRIPES_OPT,
) -> None:
    """Predict the mean write time of one file-per-process pattern."""
    with cli_errors():
        from iosight.perfmodel import WriteModel, predict_pattern

        m = WriteModel.load(model)
        t = predict_pattern(m, _pattern(nodes, cores, size, stripes))
        console.print(f"predicted mean write time: {t:.3f} s ({m.family} model, {m.platform.name})")


@group.command("plan")
def plan(
    model: Path = MODEL_OPT,
    nodes: int = NODES_OPT,
    cores: int = CORES_OPT,
    size: str = SIZE_OPT,
    stripes: int | None = STRIPES_OPT,
    compute_time: float = typer.Option(..., help="Compute seconds of the whole run."),
    io_budget: float = typer.Option(0.1, help="Largest share of run time spent writing."),
    margin: float = typer.Option(0.3, help="Safety margin on the prediction (model error)."),
    format: str = FORMAT_OPT,
) -> None:
    """Checkpoint interval that keeps write time under a share of the run time (§II-A)."""
    with cli_errors():
        from iosight.perfmodel import WriteModel, plan_checkpoints, predict_pattern

        m = WriteModel.load(model)
        t = predict_pattern(m, _pattern(nodes, cores, size, stripes))
        p = plan_checkpoints(t, compute_time, io_budget=io_budget, margin=margin)
        if format == "table" and p.feasible:
            console.print(
                f"checkpoint every {p.interval_s:.0f} s of compute: {p.checkpoints} "
                f"checkpoints of ~{p.planned_write_s:.1f} s keep writes at "
                f"{100 * p.write_share:.1f}% of the run (budget {100 * io_budget:.0f}%)"
            )
        elif format == "table":
            console.print(
                f"the budget cannot be met: one write of ~{p.planned_write_s:.1f} s needs "
                f"{p.min_interval_s:.0f} s of compute around it; a single final checkpoint "
                f"takes {100 * p.write_share:.1f}% of this run"
            )
        print_frame(p.as_frame(), format, title="checkpoint plan")


@group.command("report")
def report(
    out: Path = typer.Option(..., "--out", "-o", help="Report directory to write."),
    model: Path | None = typer.Option(None, "--model", help="Model directory."),
    tokio: list[Path] | None = typer.Option(
        None, "--tokio", help="TOKIO-ABC summary files (repeat) for the real-data section."
    ),
    seed: int = typer.Option(0, help="Seed of the validation split."),
    format: str = FORMAT_OPT,
) -> None:
    """HTML report: real-data accuracy (TOKIO-ABC) and the model's evaluation."""
    with cli_errors():
        from iosight.perfmodel import WriteModel, evaluate_tokio_files
        from iosight.report.perfmodel import write_report

        if model is None and not tokio:
            _require("--model or --tokio")
        from iosight.data import locate

        real = evaluate_tokio_files([locate(t) for t in tokio], seed=seed) if tokio else None
        path = write_report(WriteModel.load(model) if model else None, out, tokio=real)
        if real is not None:
            from iosight.perfmodel import METHODS
            from iosight.report.perfmodel import deployable_table

            short = dict(zip(METHODS, ("paper", "median", "predictor", "deployed"), strict=True))
            table = deployable_table(real[2]).round(3)
            if format == "table":  # short headers so that every column fits a console
                headers = {**short, ": w": " w", "%": ""}  # "paper: w30%" -> "paper w30"
                table.columns = [_shorten(c, headers) for c in table.columns]
                if "chosen" in table:
                    table["chosen"] = table["chosen"].map(lambda m: short.get(m, m))
            print_frame(
                table,
                format,
                title="TOKIO-ABC (real), last 30% of the year: share of test samples within "
                "20% / 30% (paper pipeline, online median, iosight predictor, and the one of them "
                "iosight deploys, chosen on the end of the training part)",
            )
        console.print(f"wrote {path}")


def _shorten(column: str, names: dict[str, str]) -> str:
    for long, short in names.items():
        column = column.replace(long, short)
    return column


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="perfmodel")
