"""Commands over the warehouse: ingest, jobs, job, sql, errors, compact."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

import typer
from rich.markup import escape

from iosight._errors import IosightError
from iosight.cli._common import (
    FORMAT_OPT,
    SCHEDULER_OPT,
    WAREHOUSE_OPT,
    WORKERS_OPT,
    RichProgress,
    check_format,
    cli_errors,
    console,
    document_json,
    err_console,
    open_warehouse,
    print_frame,
)


def ingest(
    paths: list[Path] = typer.Argument(..., help="Log files or directories (recursive)."),
    warehouse: Path = WAREHOUSE_OPT,
    workers: int = WORKERS_OPT,
    scheduler: str = SCHEDULER_OPT,
    force: bool = typer.Option(False, help="Replace sources already ingested."),
    timeout: float = typer.Option(300.0, help="Seconds one log may take before it fails."),
    batch_size: int = typer.Option(
        None, help="At most this many logs per atomic commit (default 1024)."
    ),
    lock_timeout: float = typer.Option(
        None,
        help="Seconds to wait while another process writes the warehouse (default 3600).",
    ),
    reader: str = typer.Option(
        "native", help="How 3.x logs are read: native, or libdarshan (PyDarshan's C library)."
    ),
    follow: bool = typer.Option(
        False,
        "--follow",
        help="Keep ingesting the one directory named as logs land, until Ctrl-C or SIGTERM "
        "(the batch in hand is committed first).",
    ),
    interval: float = typer.Option(None, help="With --follow: seconds between polls (default 10)."),
    settle: int = typer.Option(
        None,
        help="With --follow: polls on which a file must keep its size and time before it "
        "is read (1: at first sight; default 2).",
    ),
    compact: bool = typer.Option(
        True,
        "--compact/--no-compact",
        help="Afterwards (with --follow: after each batch) merge the small files of tables "
        "that have 16 or more of like size into sorted ones.",
    ),
    forecast: str = typer.Option(
        None,
        help="With --follow: saved burst forecasters (comma-separated names, trained with "
        "--information logs) to forecast with at every bin boundary, into the table "
        "'forecasts'.",
    ),
) -> None:
    """Read Darshan logs (3.x, 2.x, parser text) and job-total tables into the warehouse."""
    ingest_args = {"workers": workers, "timeout": timeout, "batch_size": batch_size}
    ingest_args["reader"] = reader
    if follow:
        from iosight._memory import system_pool_at_start  # ctypes: for --follow alone

        system_pool_at_start()  # before pyarrow's import: Arrow's C++ code too
        _follow(paths, warehouse, force=force, lock_timeout=lock_timeout, interval=interval,
                settle=settle, scheduler=scheduler, forecast=forecast, ingest_args=ingest_args,
                compact=compact)  # fmt: skip
        return
    with cli_errors():
        if forecast is not None:
            raise IosightError("--forecast forecasts as logs land: it goes with --follow")
    _ingest_once(paths, warehouse, force=force, lock_timeout=lock_timeout, scheduler=scheduler,
                 compact=compact, ingest_args=ingest_args)  # fmt: skip


def _ingest_once(
    paths: list[Path],
    warehouse: Path | None,
    *,
    force: bool,
    lock_timeout: float | None,
    scheduler: str | None,
    compact: bool,
    ingest_args: dict,
) -> None:
    """``ingest`` without ``--follow``: the sources named, once; exit status 2 if any
    failed."""
    from iosight.warehouse import check_ingest_args
    from iosight.warehouse import ingest as run_ingest

    with cli_errors():
        # before the warehouse is made: bad arguments leave nothing behind
        check_ingest_args(paths, **ingest_args)
        wh = open_warehouse(warehouse, create=True, lock_timeout=lock_timeout, on_lock_wait=_say)
        report = run_ingest(paths, wh, force=force, scheduler=scheduler, compact=compact,
                            progress=RichProgress(fields=("failed",)), **ingest_args)  # fmt: skip
    console.print(report.summary())
    if report.compaction:
        console.print(report.compaction.line())
    _print_failures(report.errors)
    if not report.ok:
        raise typer.Exit(code=2)


def _say(message: str) -> None:
    """A line on stderr, as it is (a path is no Rich markup)."""
    err_console.print(message, highlight=False, markup=False, soft_wrap=True)


def _print_failures(errors: list[tuple[str, str]]) -> None:
    for path, reason in errors[:20]:
        # readers name the file in their messages; print it once
        err_console.print(f"  failed: {path}: {reason.removeprefix(f'{path}: ')}", highlight=False)
    if len(errors) > 20:
        err_console.print(f"  ... {len(errors) - 20} more (iosight errors)")


def _follow(
    paths: list[Path],
    warehouse: Path | None,
    *,
    force: bool,
    lock_timeout: float | None,
    interval: float | None,
    settle: int | None,
    scheduler: str | None,
    forecast: str | None,
    ingest_args: dict,
    compact: bool = True,
) -> None:
    """``ingest --follow``: one directory, polled until a signal stops it;
    ``ingest_args``: the options checked as :func:`ingest` checks them; ``forecast``: the
    forecasters to forecast with at each bin boundary passed."""
    from iosight.warehouse import check_follow_args, follow

    given = {"interval": interval, "settle": settle}  # None: the library's default
    ingest_args |= {k: v for k, v in given.items() if v is not None}
    with cli_errors():
        if len(paths) != 1:
            raise IosightError(f"--follow takes one directory, not {len(paths)} paths")
        if force:
            raise IosightError("--follow reads each log once; --force does not go with it")
        check_follow_args(paths[0], **ingest_args)
        wh = open_warehouse(warehouse, create=True, lock_timeout=lock_timeout, on_lock_wait=_say)
        refresh = _refresh(wh, forecast)
        console.print(f"following {paths[0]} (stop: Ctrl-C or SIGTERM)")
        report = follow(
            paths[0],
            wh,
            scheduler=scheduler,
            compact=compact,
            on_batch=_after_follow_batch(refresh),
            **ingest_args,
        )
    console.print(report.summary())


def _refresh(wh, names: str | None):
    """The derived tables follow mode keeps current, with the forecasters of
    ``--forecast`` checked and brought up to date before the first poll."""
    from iosight.live import Refresh

    refresh = Refresh(wh, [n.strip() for n in (names or "").split(",") if n.strip()])
    _say_lines(refresh.forecast())
    return refresh


def _say_lines(lines: list[str]) -> None:
    for line in lines:
        console.print(line, highlight=False)


def _after_follow_batch(refresh):
    """What follows each committed batch: its line, its failures, and the derived tables
    brought up to date for its new jobs (:class:`iosight.live.Refresh`)."""

    def after(batch) -> None:
        console.print(batch.line(), highlight=False)
        _print_failures(batch.report.errors)
        if batch.report.ingested:
            _say_lines(refresh.after_batch())

    return after


def jobs(
    warehouse: Path = WAREHOUSE_OPT,
    where: str = typer.Option(None, help="SQL condition on jobs columns, e.g. 'nprocs >= 1024'."),
    limit: int = typer.Option(0, help="At most this many rows (0: all)."),
    fmt: str = FORMAT_OPT,
) -> None:
    """List ingested jobs."""
    with cli_errors():
        wh = open_warehouse(warehouse)
        wh.require("jobs")
        cols = ["job_key", "jobid", "exe", "nprocs", "start_time", "run_time", "modules"]
        cols += ["synthetic"] if fmt != "table" else []
        chosen = "select * from jobs" + (f" where {where}" if where else "")
        query = f"select {', '.join(cols)} from ({chosen}) order by start_time, job_key"
        rows = wh.rows(query + (f" limit {limit}" if limit else ""))
        if fmt == "table":  # short keys and readable UTC times on screen; raw values in files
            rows = _on_screen(rows)
        print_frame(rows, fmt, title=f"jobs in {wh.path}")


def _on_screen(rows):
    """Jobs ``rows`` with their ``job_key`` cut to 12 characters and ``start_time`` a UTC
    date and time."""
    from iosight.warehouse import Rows

    key, start = rows.columns.index("job_key"), rows.columns.index("start_time")
    shown = []
    for row in rows.values:
        row = list(row)
        row[key], row[start] = row[key][:12], _utc(row[start], zone="")
        shown.append(tuple(row))
    types = [("VARCHAR" if i == start else t) for i, t in enumerate(rows.types)]
    return Rows(rows.columns, types, shown)


def _job_format(value: str) -> str:
    """``iosight job``'s --format, checked while the command line is parsed: a summary is
    several tables, which one CSV table cannot hold."""
    with cli_errors():
        if value == "csv":
            raise IosightError(
                "a job summary is several tables, which one CSV cannot hold: use --format "
                "json or jsonl (one document), or 'iosight sql ... -f csv' for one table"
            )
        return check_format(value)


def job(
    ident: str = typer.Argument(..., help="Job id, job_key prefix, or a log file to read."),
    warehouse: Path = WAREHOUSE_OPT,
    files: int = typer.Option(15, help="Rows of the per-file table."),
    plot: Path = typer.Option(None, help="Also draw the job's figure to this PNG/SVG/PDF file."),
    fmt: str = typer.Option(
        "table",
        "--format",
        "-f",
        help="table, or the whole summary and its insights as one JSON document: json "
        "(indented) or jsonl (one line; docs/job.md gives its schema).",
        callback=_job_format,
    ),
) -> None:
    """One job's I/O summary (modules, access sizes, files, OSTs) and its I/O insights.

    IDENT may be a log file: it is read on its own, with no warehouse (like ``darshan
    summary LOG``).
    """
    from iosight.insights import job_insights
    from iosight.warehouse import job_summary

    with cli_errors(), ExitStack() as stack:
        if plot:  # before any work: a figure that cannot be written is said at once
            from iosight.report.job import check_figure_path

            check_figure_path(plot)
        if Path(ident).is_file():  # one log, no warehouse (like `darshan summary LOG`)
            from iosight.warehouse import log_warehouse  # the readers: only for a log

            wh = stack.enter_context(log_warehouse(ident))
            keys = wh.rows("select job_key from jobs").values
            if len(keys) != 1:
                raise IosightError(f"{ident} holds {len(keys)} jobs: ingest it and name one job id")
            ident = keys[0][0]
        else:
            wh = open_warehouse(warehouse)
        # plain rows to print (no pandas where the job's insights are stored, by
        # iosight insights); the figure draws DataFrames
        s = job_summary(wh, ident, rows=plot is None)
        found = job_insights(wh, s.job["job_key"], rows=plot is None)
        if fmt != "table":
            doc = {**s.to_dict(), "insights": found.to_dict()}
            sys.stdout.write(document_json(doc, one_line=fmt == "jsonl"))
            return
        render_job_summary(s, files)
        render_job_insights(found)
        if plot:  # inside: a log's temporary warehouse lives until the figure is drawn
            from iosight.report.job import plot_job

            console.print(f"figure: {plot_job(wh, s, plot, insights=found)}")


def render_job_insights(found) -> None:
    """The findings ordered by level, then the rules the job's data could not evaluate
    and what each needs (a rule without its data is never judged)."""
    if not found.findings.empty:
        print_frame(found.table(), title="I/O insights (Drishti-style rules; iosight insights)")
    if not found.not_evaluated.empty:
        print_frame(
            found.not_evaluated, title="not evaluated: the job's data lacks what these rules need"
        )


def render_job_summary(s, files: int = 15) -> None:
    j = s.job
    console.print(
        f"[bold]job {escape(_or_unknown(j['jobid'], str))}[/] ({j['job_key'][:12]}) "
        + escape(
            f"{j['exe'][:80]}\n"
            f"  {_processes(j['nprocs'])}, start {_or_unknown(j['start_time'], _utc)}, "
            f"run time {_or_unknown(j['run_time'], _duration)}, "
            f"Darshan {j['lib_version'] or j['log_version']} ({j['source_format']})\n"
            f"  modules: {j['modules']}"
        ),
        markup=True,
        highlight=False,
    )
    for note in s.notes:
        console.print(f"  [yellow]note:[/] {escape(note)}", markup=True)
    if not s.modules.empty:
        print_frame(
            s.modules,
            title="per module: bytes, operations, I/O time (summed over ranks; its mean per rank)",
        )
    if not s.access_sizes.empty:
        print_frame(s.access_sizes, title="access sizes (operations per size bin)")
    if not s.files.empty:
        print_frame(s.files, title="per file (a shared record counts all ranks)", max_rows=files)
    if not s.osts.empty:
        print_frame(s.osts, title="Lustre OSTs: files, ranks and I/O time per OST")


def _or_unknown(value, show) -> str:
    """``show(value)``, or "unknown" for a job field the log did not hold (a garbage job
    record's, read as null: its warning line says which) or that ``show`` cannot show."""
    from iosight._units import missing

    shown = None if missing(value) else show(value)
    return "unknown" if shown is None else shown


def _utc(t: float | None, zone: str = " UTC") -> str | None:
    """``t`` (epoch s) as a UTC date and time to the second, followed by ``zone``;
    None for no time, or one out of the calendar's range (a garbage job record's)."""
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(t, dt.UTC).strftime(f"%Y-%m-%d %H:%M:%S{zone}")
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _duration(s: float) -> str:
    from iosight._units import human_duration

    return human_duration(s)


def _processes(nprocs: int) -> str:
    return f"{nprocs} processes" if nprocs > 0 else "processes unknown"


def sql(
    query: str = typer.Argument(..., help="DuckDB SQL over the warehouse views."),
    warehouse: Path = WAREHOUSE_OPT,
    fmt: str = FORMAT_OPT,
) -> None:
    """Run SQL over the warehouse (tables: jobs, posix, mpiio, names, ...)."""
    with cli_errors():
        print_frame(open_warehouse(warehouse).rows(query), fmt)


def errors(warehouse: Path = WAREHOUSE_OPT, fmt: str = FORMAT_OPT) -> None:
    """Sources that could not be ingested, and why."""
    from iosight.warehouse import Rows

    with cli_errors():
        wh = open_warehouse(warehouse)
        if not wh.has_table("ingest_errors"):
            if fmt == "table":
                console.print("no ingest errors")
                return
            # scripts get what they parse: [], nothing, or the header (a bad -f: an error)
            print_frame(Rows(["source_path", "error"], ["VARCHAR", "VARCHAR"], []), fmt)
            return
        rows = wh.rows("select source_path, error from ingest_errors order by 1")
        # readers name the file in their messages; show it once
        shown = [(p, e.removeprefix(f"{p}: ")) for p, e in rows.values]
        print_frame(Rows(rows.columns, rows.types, shown), fmt)


def tables(warehouse: Path = WAREHOUSE_OPT) -> None:
    """Tables in the warehouse with row and file counts."""
    from iosight.warehouse import Rows

    with cli_errors():
        wh = open_warehouse(warehouse)
        counts = [(t, rows, files) for t, (rows, files) in wh.row_counts().items()]
        types = ["VARCHAR", "BIGINT", "BIGINT"]
        print_frame(Rows(["table", "rows", "files"], types, counts), title=str(wh.path))


def compact(warehouse: Path = WAREHOUSE_OPT) -> None:
    """Merge each table's small files into sorted ones (ingest does it by itself)."""
    from iosight.warehouse import compact as compact_tables

    with cli_errors():
        report = compact_tables(open_warehouse(warehouse, write=True))
    console.print(report.line())


def register(app: typer.Typer) -> None:
    for fn in (ingest, jobs, job, sql, errors, tables, compact):
        app.command()(fn)
