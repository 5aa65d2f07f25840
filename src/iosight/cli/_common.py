"""Pieces every command shares: the warehouse option, error handling, progress bars."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

from iosight._errors import IosightError

# off a terminal Rich assumes 80 columns; tables of counters need more
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

WAREHOUSE_OPT = typer.Option(
    None,
    "--warehouse",
    "-w",
    envvar="IOSIGHT_WAREHOUSE",
    help="Warehouse directory (default ./iosight-warehouse).",
)
FORMAT_OPT = typer.Option(
    "table",
    "--format",
    "-f",
    help="table (human units), csv, json (one array of objects) or jsonl (JSON Lines).",
)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Show user-caused errors as one line and exit 1, never a traceback."""
    try:
        yield
    except IosightError as err:
        err_console.print(f"[bold red]error:[/] {err}", highlight=False)
        raise typer.Exit(code=1) from None
    except KeyboardInterrupt:
        err_console.print("interrupted; everything committed so far is kept")
        raise typer.Exit(code=130) from None


def open_warehouse(path: Path | None, *, create: bool = False):
    """Open the warehouse named on the command line (an error if it does not exist)."""
    from iosight.warehouse import Warehouse

    return Warehouse(path, create=create)


class RichProgress:
    """A Rich progress bar behind the library's ``Progress`` protocol; silent off a terminal."""

    def __init__(self, *, fields: tuple[str, ...] = ()) -> None:
        self.enabled = sys.stderr.isatty()
        self._fields = fields
        self._bar = None
        self._task = None

    def start(self, total: int | None, description: str) -> None:
        if not self.enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        extra = [TextColumn(f"{f}: {{task.fields[{f}]}}") for f in self._fields]
        rate = _rate_column()
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            rate,
            *extra,
            console=err_console,
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task(description, total=total, **{f: "" for f in self._fields})

    def advance(self, n: int = 1, **fields: object) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=n, **fields)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _rate_column():
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Items per second."""

        def render(self, task) -> Text:
            return Text(f"{task.speed:.1f}/s" if task.speed else "-/s")

    return RateColumn()


def print_frame(df, fmt: str = "table", title: str | None = None, max_rows: int = 50) -> None:
    """Render a DataFrame as a Rich table, CSV, one JSON array or JSON Lines on stdout.

    Tables show human units (bytes, rates, durations) and elide long paths in the middle;
    CSV and JSON keep raw values, integers as integers.
    """
    if fmt == "csv":
        sys.stdout.write(df.to_csv(index=False))
        return
    if fmt in ("json", "jsonl"):
        sys.stdout.write(frame_json(df, lines=fmt == "jsonl"))
        return
    if fmt != "table":
        raise IosightError(
            f"the 'format' option must be table, csv, json or jsonl. Got {fmt!r} instead."
        )
    from rich.table import Table

    from iosight.cli._units import cell

    table = Table(title=title, show_lines=False)
    columns = [str(c) for c in df.columns]
    for col, dtype in zip(columns, df.dtypes, strict=True):
        numeric = dtype.kind in "iufb"  # numbers never wrap mid-token
        table.add_column(col, no_wrap=numeric, overflow="ellipsis" if numeric else "fold")
    for row in df.head(max_rows).itertuples(index=False):
        table.add_row(*(cell(col, v) for col, v in zip(columns, row, strict=True)))
    console.print(table)
    if len(df) > max_rows:
        console.print(f"... {len(df) - max_rows} more rows (use --format csv for all)")


def frame_json(df, *, lines: bool = False) -> str:
    """``df`` as one JSON array of objects, or JSON Lines; ints stay ints, NaN is null."""
    import json

    records = [{str(k): _json_value(v) for k, v in r.items()} for r in df.to_dict("records")]
    if lines:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return json.dumps(records, ensure_ascii=False, indent=1) + "\n"


def _json_value(v):
    import datetime as dt
    import math

    import numpy as np
    import pandas as pd

    if isinstance(v, np.ndarray | list | tuple):
        return [_json_value(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or v is pd.NaT or v is pd.NA:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()
    return str(v)
