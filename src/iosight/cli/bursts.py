"""``iosight bursts``: burst statistics, forecasting models, predictions, report (§IV-V)."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import (
    FORMAT_OPT,
    SCHEDULER_OPT,
    WAREHOUSE_OPT,
    WORKERS_OPT,
    RichProgress,
    cli_errors,
    console,
    err_console,
    open_warehouse,
    print_frame,
)

group = typer.Typer(help="I/O burst analysis and forecasting.", no_args_is_help=True)


def _k(k_read: float | None, k_write: float | None) -> dict[str, float]:
    return {d: v for d, v in (("read", k_read), ("write", k_write)) if v is not None}


@group.command("analyze")
def analyze(
    warehouse: Path = WAREHOUSE_OPT,
    k_read: float = typer.Option(None, help="Read threshold in stdevs (default: by fraction)."),
    k_write: float = typer.Option(None, help="Write threshold in stdevs (default: by fraction)."),
    target_fraction: float = typer.Option(0.01, help="Share of bins that are bursts."),
    fmt: str = FORMAT_OPT,
) -> None:
    """Thresholds, burst fractions, run lengths and swings (Fig. 3-5 statistics)."""
    with cli_errors():
        from iosight.bursts import analyze_bursts
        from iosight.timeline import load_timeline

        a = analyze_bursts(
            load_timeline(open_warehouse(warehouse)),
            k_read=k_read,
            k_write=k_write,
            target_fraction=target_fraction,
        )
        print_frame(a.summary, fmt, title="bursts per direction")
        if fmt == "table":
            for d, runs in a.runs.items():
                print_frame(runs.head(10), fmt, title=f"{d}: runs of consecutive bursts")


@group.command("train")
def train(
    warehouse: Path = WAREHOUSE_OPT,
    models: str = typer.Option(
        "all", help="all, or some of logreg,naive_bayes,tree,forest,xgboost."
    ),
    features: str = typer.Option(
        "4", help="Feature set(s) 1, 2, 3 (the paper's) and 4 (3 + current and job state)."
    ),
    mode: str = typer.Option("lead", help="interval and/or lead."),
    horizons: str = typer.Option("5,15,30,60,120", help="Horizons in minutes."),
    target: str = typer.Option("binary", help="binary and/or severity."),
    direction: str = typer.Option("read,write", help="read and/or write."),
    k_read: float = typer.Option(None, help="Read threshold in stdevs."),
    k_write: float = typer.Option(None, help="Write threshold in stdevs."),
    target_fraction: float = typer.Option(0.01, help="Share of bins that are bursts."),
    threshold_from: str = typer.Option(
        "train", help="Burst thresholds from the training part, or 'all' bins (the paper)."
    ),
    search_iter: int = typer.Option(0, help="Hyper-parameter candidates per model (0: defaults)."),
    cv_splits: int = typer.Option(3, help="Time-series folds of the search (at least 2)."),
    seed: int = typer.Option(0, help="Seed of models and searches."),
    workers: int = WORKERS_OPT,
    scheduler: str = SCHEDULER_OPT,
    save: bool = typer.Option(True, help="Save the best forecaster per direction."),
    information: str = typer.Option(
        "live", help="live (bytes known up to t) and/or logs (only the logs landed by t)."
    ),
    fmt: str = FORMAT_OPT,
) -> None:
    """Evaluate models beside persistence and time-of-day baselines (per information
    regime); save per direction and lead the best baseline on validation unless a model
    beat it robustly there."""
    with cli_errors():
        from iosight.bursts import describe_choice, train_bursts

        r = train_bursts(
            open_warehouse(warehouse, write=True), directions=direction, models=models,
            feature_sets=features, modes=mode, horizons=horizons, targets=target,
            k=_k(k_read, k_write), target_fraction=target_fraction,
            threshold_from=threshold_from, search_iter=search_iter, cv_splits=cv_splits,
            seed=seed, information=information, save=save, workers=workers,
            scheduler=scheduler,
            progress=RichProgress(fields=("direction", "horizon_min", "lead")),
        )  # fmt: skip
        shown = r.evaluation.drop(columns=["trained_at", "params", "n_train", "n_test", "k"])
        print_frame(shown, fmt, title="test-part scores", max_rows=500)
        for name, chosen in r.chosen.items():
            msg = f"saved {name}, per lead (5-minute bins) chosen on validation: "
            err_console.print(msg + describe_choice(chosen))


@group.command("predict")
def predict(
    warehouse: Path = WAREHOUSE_OPT,
    at: str = typer.Option(None, help="Time (UTC) to predict from; default the last bin."),
    model: str = typer.Option("bursts-write", help="Saved model name."),
    features: int = typer.Option(None, help="Refuse a model of another feature set."),
    running: str = typer.Option(
        "auto",
        help="Feature set 4: the running jobs from 'slurm' (the warehouse's Slurm snapshots), "
        "'logs' (their logs' start times), or 'auto' (slurm where there are snapshots); "
        "column running_jobs says which.",
    ),
    fmt: str = FORMAT_OPT,
) -> None:
    """Burst yes/no, probability and severity for the next bins (24 five-minute bins)."""
    with cli_errors():
        from iosight.bursts import load_forecaster
        from iosight.timeline import parse_time

        wh = open_warehouse(warehouse)
        fc = load_forecaster(wh, model)
        when = None if at is None else parse_time(at)
        p = fc.predict_next(wh, when, feature_set=features, running=running).table
        if fmt == "table":  # on screen the UTC time says what bin_start (epoch s) says
            p = p.drop(columns="bin_start")
        print_frame(p, fmt, title=f"{model}: {fc.describe()}")


@group.command("report")
def report(
    warehouse: Path = WAREHOUSE_OPT,
    out: Path = typer.Option(Path("report"), help="Output directory."),
    extra: list[Path] = typer.Option(
        [], help="More warehouses, each a further section (the first is --warehouse)."
    ),
) -> None:
    """HTML report: Fig. 3-7 and Table I equivalents for each warehouse."""
    with cli_errors():
        from iosight.report.bursts import write_report

        whs = [open_warehouse(warehouse)] + [open_warehouse(p) for p in extra]
        console.print(f"report: {write_report(whs, out)}")


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="bursts")
