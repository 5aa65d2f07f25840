"""``iosight similarity``: codings, clustering and search of job I/O time series."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight._errors import parse_list
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
    help="Temporal job I/O similarity (Betke & Kunkel): codings, clusters, similar jobs.",
    no_args_is_help=True,
)

CODING_OPT = typer.Option(
    "bin-aggzeros",
    "--coding",
    "-c",
    help="bin, bin-aggzeros or hex (density); io-metric or io-duration (tree).",
)

# "\[" keeps Rich from reading "[low, high]" as a markup tag (the help showed "{metric: }")
CATEGORIES_OPT = typer.Option(None, help="YAML/JSON split points {metric: \\[low, high]}.")


def _categories(config: Path | None):
    from iosight.similarity import Categories

    return Categories.from_config(config) if config else None


@group.command("import")
def import_cmd(
    path: Path = typer.Argument(
        ...,
        help="Monitoring samples: job,node,fs,metric,time,value; optional job_start, "
        "job_end, n_nodes, n_fs per job (needed when zero samples are left out).",
    ),
    warehouse: Path = WAREHOUSE_OPT,
    segment: float = typer.Option(600.0, help="Segment length in seconds."),
    interval: float = typer.Option(5.0, help="Sampling interval in seconds."),
    categories: Path = CATEGORIES_OPT,
) -> None:
    """Import long-format monitoring samples (CSV or Parquet) and build codings."""
    from iosight.similarity import import_monitoring

    with cli_errors():
        wh = open_warehouse(warehouse, create=True)
        counts = import_monitoring(
            wh, path, segment_s=segment, interval_s=interval, categories=_categories(categories)
        )
    console.print(
        f"{counts['jobs']} jobs coded; zero jobs: {counts['zero_bin']} (binary), "
        f"{counts['zero_hex']} (hex)"
    )


@group.command("import-codings")
def import_codings_cmd(
    path: Path = typer.Argument(..., help="CSV with columns coding,jobid (DKRZ format)."),
    warehouse: Path = WAREHOUSE_OPT,
    prefix: str = typer.Option("dkrz", help="Job keys become PREFIX:jobid."),
) -> None:
    """Import binary codings such as the DKRZ Mistral data set."""
    from iosight.similarity import import_codings

    with cli_errors():
        from iosight.data import locate

        path = locate(path)  # a bare data-set file name is looked up in the data directory
        counts = import_codings(open_warehouse(warehouse, create=True), path, prefix=prefix)
    share = counts["zero_jobs"] / counts["jobs"]
    console.print(f"{counts['jobs']} jobs imported; zero jobs: {counts['zero_jobs']} ({share:.2%})")


@group.command("series")
def series_cmd(
    warehouse: Path = WAREHOUSE_OPT,
    source: str = typer.Option("darshan", "--from", help="Only 'darshan' for now."),
    segment: float = typer.Option(600.0, help="Segment length in seconds."),
    categories: Path = CATEGORIES_OPT,
) -> None:
    """Per-job series from Darshan tables (HEATMAP, DXT, POSIX counters), then codings."""
    from iosight.similarity import series_from_darshan

    with cli_errors():
        counts = series_from_darshan(
            open_warehouse(warehouse, write=True),
            source=source,
            segment_s=segment,
            categories=_categories(categories),
        )
    n, timed = counts["jobs"], counts["time_resolved"]
    console.print(f"{n} jobs; {timed} with time-resolved I/O (DXT or HEATMAP); metrics per job:")
    print_frame(counts["metrics"])
    if counts["untimed"]:
        console.print(
            f"[yellow]note:[/] {counts['untimed']} more jobs have I/O but no run time (a "
            "garbage job record): no series, left out",
            markup=True,
            highlight=False,
        )
    if timed < n:
        console.print(
            f"[yellow]note:[/] {n - timed} of {n} jobs have no DXT or HEATMAP records: their "
            "series are POSIX counters spread over open-close intervals, with little temporal "
            "shape to compare. Log with DXT (DXT_ENABLE_IO_TRACE=1) or Darshan >= 3.3's "
            "HEATMAP for temporal similarity.",
            markup=True,
            highlight=False,
        )


@group.command("codings")
def codings_cmd(
    warehouse: Path = WAREHOUSE_OPT,
    categories: Path = CATEGORIES_OPT,
    quantiles: str = typer.Option(
        None,
        help="Split points from these two quantiles of the series, e.g. 0.99,0.999. "
        "Without this option or --categories, the stored split points are reused "
        "(99%/99.9% quantiles when none are stored). The split points used replace "
        "the stored ones.",
    ),
) -> None:
    """(Re)build codings and profiles of every job that has a series."""
    from iosight.similarity import build_codings

    with cli_errors():
        counts = build_codings(
            open_warehouse(warehouse, write=True),
            categories=_categories(categories),
            quantiles=None
            if quantiles is None
            else tuple(parse_list(quantiles, float, "quantiles")),
        )
    console.print(counts)


@group.command("cluster")
def cluster_cmd(
    warehouse: Path = WAREHOUSE_OPT,
    coding: str = CODING_OPT,
    algorithm: str = typer.Option("density", help="density (SimplifiedDensity) or tree."),
    sim: float = typer.Option(0.7, help="SIM threshold (density)."),
    eps: float = typer.Option(0.1, help="Distance threshold (tree)."),
    sample: int = typer.Option(10_000, help="Agglomerative sample size (tree)."),
    seed: int = typer.Option(0, help="Seed of the sample (tree)."),
) -> None:
    """Cluster the non-zero jobs and store clusters and memberships."""
    from iosight.similarity import cluster

    with cli_errors():
        run = cluster(
            open_warehouse(warehouse, write=True),
            coding,
            algorithm=algorithm,
            sim=sim,
            eps=eps,
            sample=sample,
            seed=seed,
            progress=RichProgress(),
        )
    import pandas as pd

    print_frame(pd.DataFrame([run]))


@group.command("explore")
def explore_cmd(
    warehouse: Path = WAREHOUSE_OPT,
    coding: str = CODING_OPT,
    sim: str = typer.Option("0.1,0.3,0.5,0.7,0.9,0.95,0.99", help="SIM values (density)."),
    eps: str = typer.Option("0.03,0.06,0.09,0.1,0.2,0.3", help="eps values (tree)."),
    algorithm: str = typer.Option("density", help="density or tree."),
    sample: int = typer.Option(10_000, help="Agglomerative sample size (tree)."),
    workers: int = WORKERS_OPT,
    scheduler: str = SCHEDULER_OPT,
    fmt: str = FORMAT_OPT,
) -> None:
    """Cluster once per SIM (Fig. 4): clusters, clusters with >= 2 and >= 10 jobs."""
    from iosight.similarity import explore

    with cli_errors():
        values = parse_list(sim if algorithm == "density" else eps, float, "sim/eps")
        df = explore(
            open_warehouse(warehouse, write=True),
            coding,
            values,
            algorithm=algorithm,
            sample=sample,
            workers=workers,
            scheduler=scheduler,
            progress=RichProgress(),
        )
        print_frame(df, fmt)


@group.command("find")
def find_cmd(
    job: str = typer.Argument(..., help="Job id, job key or a job key prefix (6+ characters)."),
    warehouse: Path = WAREHOUSE_OPT,
    coding: str = CODING_OPT,
    top: int = typer.Option(20, help="How many similar jobs."),
    fmt: str = FORMAT_OPT,
) -> None:
    """The jobs most similar to JOB, exactly (indexed search), with their codings."""
    from iosight.similarity import find_similar

    with cli_errors():
        df = find_similar(open_warehouse(warehouse), job, coding=coding, top=top)
        if fmt == "table":
            console.print(
                f"query {job}: {df.attrs['query_code']}  ({df.attrs['compared']} of "
                f"{df.attrs['candidates']} jobs of its source {df.attrs['source']!r} "
                "compared exactly)"
            )
            if df.empty:
                console.print(
                    f"no job shares an I/O phase with {job}: all {df.attrs['unrelated']} "
                    "compared have similarity 0 (see 'iosight similarity series' for which "
                    "jobs have time-resolved I/O)"
                )
                return
        print_frame(df, fmt)


@group.command("cluster-of")
def cluster_of_cmd(
    job: str = typer.Argument(..., help="Job id, job key or a job key prefix (6+ characters)."),
    warehouse: Path = WAREHOUSE_OPT,
    fmt: str = FORMAT_OPT,
) -> None:
    """Table 2: the size and number of job types of JOB's cluster in each stored run."""
    from iosight.similarity import cluster_of

    with cli_errors():
        print_frame(cluster_of(open_warehouse(warehouse), job), fmt)


@group.command("quality")
def quality_cmd(warehouse: Path = WAREHOUSE_OPT, fmt: str = FORMAT_OPT) -> None:
    """ARI, homogeneity, completeness and purity of every run on known (synthetic) classes."""
    from iosight.similarity import evaluate

    with cli_errors():
        print_frame(evaluate(open_warehouse(warehouse)), fmt, max_rows=200)


@group.command("report")
def report_cmd(
    warehouse: Path = WAREHOUSE_OPT,
    out: Path = typer.Option(Path("similarity-report"), help="Output directory."),
    codings: Path = typer.Option(
        None, help="A DKRZ codings CSV for the real-data section (every SIM, BIN and AGGZEROS)."
    ),
    job: str = typer.Option(None, help="The chosen job (Table 2, series plots)."),
    sims: str = typer.Option("0.1,0.3,0.5,0.7,0.9,0.95,0.99", help="SIM values."),
    workers: int = WORKERS_OPT,
    scheduler: str = SCHEDULER_OPT,
) -> None:
    """An HTML report: Fig. 3, Fig. 4, Table 2, quality, series plots."""
    from iosight.data import locate
    from iosight.report.similarity import write_report
    from iosight.warehouse import default_path, is_warehouse_dir

    with cli_errors():
        # the codings CSV alone makes a report; a warehouse is read only when there is one
        optional = codings is not None and not is_warehouse_dir(warehouse or default_path())
        path = write_report(
            None if optional else open_warehouse(warehouse),
            out,
            codings_csv=locate(codings) if codings else None,
            job=job,
            sims=parse_list(sims, float, "sims"),
            workers=workers,
            scheduler=scheduler,
            progress=RichProgress(),
        )
    console.print((path.parent / "summary.txt").read_text(), highlight=False, markup=False)
    console.print(f"report written to {path}")


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="similarity")
