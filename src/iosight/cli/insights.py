"""``iosight insights``: Drishti-style rules for every job, and the facility view."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import (
    FORMAT_OPT,
    WAREHOUSE_OPT,
    RichProgress,
    cli_errors,
    console,
    open_warehouse,
    print_frame,
)

THRESHOLDS_OPT = typer.Option(
    None,
    "--thresholds",
    help="YAML file of rule thresholds (Drishti's names), e.g. small_requests: 0.2",
)


def insights(
    warehouse: Path = WAREHOUSE_OPT,
    where: str = typer.Option(None, help="SQL condition on jobs columns, e.g. 'nprocs >= 1024'."),
    thresholds: Path = THRESHOLDS_OPT,
    report: Path = typer.Option(
        None, help="Also write an HTML page with figures into this directory."
    ),
    apps: int = typer.Option(3, help="Worst applications listed per rule."),
    fmt: str = FORMAT_OPT,
) -> None:
    """Evaluate the insight rules for new jobs, then show the facility view per rule."""
    from iosight._memory import lean_allocators

    lean_allocators()  # before pyarrow's import: what a batch freed goes back
    from iosight.insights import compute_insights, facility_view, load_thresholds

    with cli_errors():
        wh = open_warehouse(warehouse, write=True)
        t = load_thresholds(thresholds)
        if report:
            from iosight.report import report_dir

            report_dir(report)  # a bad path fails now, not after the rules ran
        run = compute_insights(wh, where=where, thresholds=t, progress=RichProgress())
        # plain rows to print (no pandas); the report's figures draw DataFrames
        view = facility_view(wh, where=where, apps=apps, rows=report is None)
        if fmt != "table":
            print_frame(view.rules, fmt)
            return
        console.print(run.summary(), highlight=False)
        if not view.rules.empty:
            title = f"insights over {view.jobs} jobs ({view.data} data), by level"
            print_frame(view.summary_table(), title=title)
        if not view.not_evaluated.empty:
            print_frame(view.not_evaluated, title="rules the jobs' data could not evaluate")
        trend = view.trend_table()
        if not trend.empty:
            print_frame(trend, title="percent of each month's jobs (top rules by time at stake)")
        if report:
            from iosight.report.insights import write_report

            path = write_report(view, report, title=f"I/O insights: {wh.path}")
            console.print(f"report: {path}")


def register(app: typer.Typer) -> None:
    app.command()(insights)
