"""``iosight timeline``: build and show the system-level I/O timeline (§IV)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from iosight._units import human_bytes, human_duration
from iosight.cli._common import (
    FORMAT_OPT,
    WAREHOUSE_OPT,
    RichProgress,
    cli_errors,
    console,
    open_warehouse,
    print_frame,
)

group = typer.Typer(help="System-level I/O timeline in fixed-width bins.", no_args_is_help=True)


@group.command("build")
def build(
    warehouse: Path = WAREHOUSE_OPT,
    bin: str = typer.Option("5min", "--bin", help="Bin width: 300, 5min, 1h, ..."),
    spread: str = typer.Option(
        "overlap", help="overlap (exact) or equal (the paper's split among touched bins)."
    ),
    since: str = typer.Option(None, help="Only jobs starting at or after this time (UTC)."),
    until: str = typer.Option(None, help="Only jobs starting before this time (UTC)."),
    span: str = typer.Option(
        "dense",
        help="dense: leave out the few jobs whose start is far outside the others' "
        "(3 interquartile ranges past the quartiles, at least 30 days) and say so; all: "
        "every job.",
    ),
    as_of: str = typer.Option(
        None,
        "--as-of",
        help="The timeline as it could have been seen at this time (UTC): only the jobs "
        "known by then (a Darshan log exists once its job ended).",
    ),
    scheduler: str = typer.Option(
        None, help="Dask scheduler address: build job partitions there and sum them."
    ),
    partitions: int = typer.Option(16, help="Job partitions with --scheduler."),
    chunk_jobs: int = typer.Option(
        None,
        help="About this many jobs per streamed chunk (default 131,072): larger is "
        "faster, as every chunk rescans the records, and holds more memory.",
    ),
) -> None:
    """Spread every record's bytes, operations and I/O time over time bins."""
    from iosight._memory import lean_allocators

    lean_allocators()  # before pyarrow's import: what a chunk freed goes back
    with cli_errors():
        import pandas as pd

        from iosight.timeline import (
            build_timeline,
            left_out,
            parse_duration,
            parse_time,
            undated_jobs,
        )

        wh = open_warehouse(warehouse, write=True)
        t = build_timeline(
            wh,
            bin_width=parse_duration(bin),
            spread=spread,
            since=None if since is None else parse_time(since),
            until=None if until is None else parse_time(until),
            span=span,
            as_of=None if as_of is None else parse_time(as_of),
            scheduler=scheduler,
            partitions=partitions,
            **({} if chunk_jobs is None else {"chunk_jobs": chunk_jobs}),
            progress=RichProgress(),
        )
        df = t.to_pandas()
        seen = "" if as_of is None else f" as of {_utc(parse_time(as_of))}"
        console.print(
            f"timeline{seen}: {len(df)} bins of {human_duration(df['bin_width'].iloc[0])}, "
            f"{human_bytes(df['read_bytes'].sum())} read, "
            f"{human_bytes(df['write_bytes'].sum())} written"
        )
        left = left_out(t)
        if left is not None:
            console.print(_left_out_line(left))
        undated = undated_jobs(t)
        if undated:
            console.print(
                f"left out {undated:,} job{'s' if undated != 1 else ''} without a start time "
                "(a garbage job record; iosight jobs --where 'start_time is null')"
            )
        if len(df) > 1_000_000:  # years of 5-min bins
            first, last = (pd.to_datetime(df["bin_start"].iloc[i], unit="s") for i in (0, -1))
            console.print(
                f"note: the jobs span {first:%Y-%m-%d} to {last:%Y-%m-%d}; "
                "--since/--until restrict the timeline to a window"
            )


def _utc(t: float) -> str:
    """``t`` (epoch s) as a UTC time to the second."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


@group.command("update")
def update(warehouse: Path = WAREHOUSE_OPT) -> None:
    """Add the jobs ingested since the timeline was built, rewriting only the bins they
    touch (a full rebuild, saying why, when an update cannot equal one)."""
    with cli_errors():
        from iosight.timeline import update_timeline

        wh = open_warehouse(warehouse, write=True)
        console.print(update_timeline(wh, progress=RichProgress()).line(), highlight=False)


def _left_out_line(left) -> str:
    """One line: which jobs the dense span left out, and how to keep them."""
    from iosight._units import human_bytes

    def day(t: float) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(t))

    return (
        f"left out {left.jobs:,} job{'s' if left.jobs != 1 else ''} "
        f"({human_bytes(left.bytes)} read and written) that "
        f"started {day(left.first)} to {day(left.last)}, far from the others' starts "
        f"({day(left.kept[0])} to {day(left.kept[1])}); --span all keeps them"
    )


@group.command("show")
def show(
    warehouse: Path = WAREHOUSE_OPT,
    rebin: str = typer.Option("", help="Re-bin to a coarser width (1h, 1d, month)."),
    fmt: str = FORMAT_OPT,
    rows: int = typer.Option(50, min=0, help="Rows shown in table format (0 or more)."),
) -> None:
    """Print the timeline, optionally re-binned to hourly, daily or monthly totals."""
    with cli_errors():
        wh = open_warehouse(warehouse)
        if rebin:
            from iosight.timeline import load_timeline
            from iosight.timeline import rebin as rebin_frame

            table = rebin_frame(load_timeline(wh), rebin)
        else:  # the stored bins as they are: DuckDB's rows, no pandas to import
            wh.require("timeline")
            table = wh.rows("select * from timeline order by bin_start")
        print_frame(table, fmt, title="timeline", max_rows=rows)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="timeline")
