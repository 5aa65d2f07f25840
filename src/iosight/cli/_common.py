"""Pieces every command shares: the warehouse option, error handling, progress bars."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from iosight._errors import IosightError

# off a terminal Rich assumes 80 columns; tables of counters need more
# markup off: what iosight prints holds paths, exe names and values such as "[nan, 3.0]"
# (data, not Rich markup; "[/x]" in an exe would even raise); styled lines pass
# markup=True and escape() what they interpolate
console = Console(width=None if sys.stdout.isatty() else 160, markup=False)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160, markup=False)

WAREHOUSE_OPT = typer.Option(
    None,
    "--warehouse",
    "-w",
    envvar="IOSIGHT_WAREHOUSE",
    help="Warehouse directory (default ./iosight-warehouse).",
)


def _workers_option(value: int) -> int:
    """``--workers`` checked while the command line is parsed: a bad count is one error
    line before any work."""
    if value:  # 0, the default, needs no check (nor the import)
        from iosight.parallel import check_workers

        with cli_errors():
            check_workers(value)
    return value


# where heavy work runs, the same two options on every command that has it
# (iosight.parallel: local workers, or a Dask cluster)
WORKERS_OPT = typer.Option(
    0, "--workers", help="Local workers (0: one per core).", callback=_workers_option
)
SCHEDULER_OPT = typer.Option(
    None, "--scheduler", help="Dask scheduler address: run the work on that cluster instead."
)


def _format_option(value: str) -> str:
    """Every command's ``--format``, checked while the command line is parsed, so a bad
    one is one error line before any work (also where the work prints no frame)."""
    with cli_errors():
        return check_format(value)


FORMAT_OPT = typer.Option(
    "table",
    "--format",
    "-f",
    help="table (human units), csv, json (one array of objects) or jsonl (JSON Lines).",
    callback=_format_option,
)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Show user-caused errors as one line and exit 1, never a traceback."""
    try:
        yield
    except IosightError as err:
        err_console.print(
            f"[bold red]error:[/] {escape(str(err))}", markup=True, highlight=False, soft_wrap=True
        )
        raise typer.Exit(code=1) from None
    except KeyboardInterrupt:
        err_console.print("interrupted; everything committed so far is kept")
        raise typer.Exit(code=130) from None


def open_warehouse(path: Path | None, *, create: bool = False, write: bool = False, **options):
    """Open the warehouse named on the command line (an error if it is none, unless
    ``create``); ``options`` go to :class:`~iosight.warehouse.Warehouse`. A command
    that writes it (``write``, or ``create``) learns now, before its work, whether it
    can (:meth:`~iosight.warehouse.Warehouse.check_writable`)."""
    from iosight.warehouse import Warehouse

    wh = Warehouse(path, create=create, **options)
    if create or write:
        wh.check_writable()
    return wh


class RichProgress:
    """The library's ``Progress`` on the command line.

    In a terminal: a Rich bar. Otherwise (piped, redirected to a log file): a plain line on
    stderr at most every ``every`` seconds (default ``$IOSIGHT_PROGRESS_SECONDS`` or 10) with
    done/total, rate and ETA, and one when the
    work finishes, so a log file shows how far a long run got. Both show the ETA of
    :class:`Eta`, smoothed over the whole run rather than the last few items.
    """

    def __init__(
        self,
        *,
        fields: tuple[str, ...] = (),
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        terminal: bool | None = None,
    ) -> None:
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        if every is None:
            every = float(os.environ.get("IOSIGHT_PROGRESS_SECONDS", "10"))
        self._fields, self._every, self._clock = fields, every, clock
        self._bar = None
        self._task = None
        self._eta: Eta | None = None
        self._description = ""
        self._values: dict[str, object] = {}
        self._printed = 0.0

    def start(self, total: int | None, description: str) -> None:
        self._eta = Eta(total, self._clock)
        self._description, self._values = description, {f: "" for f in self._fields}
        self._printed = self._eta.t0
        if self.terminal:
            self._start_bar(total, description)

    def advance(self, n: int = 1, **fields: object) -> None:
        if self._eta is None:
            return
        self._eta.advance(n)
        self._values.update(fields)
        if self._bar is not None:
            self._bar.update(self._task, advance=n, **fields)
        elif self._clock() - self._printed >= self._every:
            self._line()

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self._eta is not None:
            self._line(final=True)
        self._eta = None

    def _line(self, final: bool = False) -> None:
        self._printed = self._clock()
        extra = "".join(f", {k}: {v}" for k, v in self._values.items() if v != "")
        text = self._eta.describe(final=final)
        err_console.print(f"{self._description}: {text}{extra}", highlight=False, soft_wrap=True)

    def _start_bar(self, total: int | None, description: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        extra = [TextColumn(f"{f}: {{task.fields[{f}]}}") for f in self._fields]
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _eta_column(self._eta),
            *extra,
            console=err_console,
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task(description, total=total, **self._values)


class Eta:
    """Rate and time left of a run, from the rate over the whole run so far.

    Per-item times of real work vary by orders of magnitude (a 5 GB DXT log beside 1 kB
    ones, a boosted model beside a linear one), so a rate over the last few items swings
    the ETA between seconds and minutes; the mean rate since the start does not.
    """

    def __init__(self, total: int | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.done, self._clock = total, 0, clock
        self.t0 = clock()

    def advance(self, n: int = 1) -> None:
        self.done += n

    def rate(self) -> float | None:
        """Items per second so far (``None`` before the first item)."""
        elapsed = self._clock() - self.t0
        return self.done / elapsed if self.done and elapsed > 0 else None

    def seconds_left(self) -> float | None:
        rate = self.rate()
        if rate is None or not self.total:
            return None
        return max(0, self.total - self.done) / rate

    def describe(self, final: bool = False) -> str:
        """``12/100 (12%), 3.4/s, ETA 26 s`` (or ``... in 29 s`` once finished)."""
        from iosight._units import human_duration

        rate = self.rate()
        done = f"{self.done}/{self.total}" if self.total else f"{self.done}"
        if self.total:
            done += f" ({100 * self.done / self.total:.0f}%)"
        speed = f", {rate:.3g}/s" if rate else ""
        if final:
            return f"{done} in {human_duration(self._clock() - self.t0)}{speed}"
        left = self.seconds_left()
        return done + speed + (f", ETA {human_duration(left)}" if left is not None else "")


def _eta_column(eta: Eta):
    from rich.progress import ProgressColumn
    from rich.text import Text

    from iosight._units import human_duration

    class EtaColumn(ProgressColumn):
        """Items per second and time left, smoothed over the whole run."""

        def render(self, task) -> Text:
            rate, left = eta.rate(), eta.seconds_left()
            text = f"{rate:.3g}/s" if rate else "-/s"
            return Text(text + (f" ETA {human_duration(left)}" if left is not None else ""))

    return EtaColumn()


FORMATS = ("table", "csv", "json", "jsonl")


def check_format(fmt: str) -> str:
    """``fmt`` when it is one of :data:`FORMATS` (:data:`FORMAT_OPT` checks every
    command's option with it; :func:`print_frame` checks library callers)."""
    if fmt not in FORMATS:
        raise IosightError(
            f"the 'format' option must be table, csv, json or jsonl. Got {fmt!r} instead."
        )
    return fmt


def print_frame(df, fmt: str = "table", title: str | None = None, max_rows: int = 50) -> None:
    """Render a DataFrame, or the warehouse's :class:`~iosight.warehouse.Rows` (what a
    command prints without importing pandas), as a table, CSV, one JSON array or JSON
    Lines on stdout.

    Tables show human units (bytes, rates, durations) and elide long paths in the middle:
    in a terminal a Rich table fitted to its width, elsewhere (a file, a pipe) plain text
    that never wraps (:func:`plain_table`). CSV and JSON keep raw values, integers as
    integers.
    """
    from iosight.warehouse import Rows

    check_format(fmt)
    if fmt == "csv":
        sys.stdout.write(rows_csv(df) if isinstance(df, Rows) else df.to_csv(index=False))
        return
    if fmt in ("json", "jsonl"):
        sys.stdout.write(frame_json(df, lines=fmt == "jsonl"))
        return
    from iosight._units import cell

    if isinstance(df, Rows):
        columns, head, numeric = df.columns, df.values[:max_rows], df.numeric()
    else:
        columns = [str(c) for c in df.columns]
        head = df.head(max_rows).itertuples(index=False)
        numeric = [dtype.kind in "iufb" for dtype in df.dtypes]
    rows = [[cell(col, v) for col, v in zip(columns, row, strict=True)] for row in head]
    if on_terminal():
        _rich_table(columns, rows, numeric, title)
    else:
        console.print(plain_table(columns, rows, numeric, title), soft_wrap=True, highlight=False)
    if len(df) > max_rows:
        console.print(f"... {len(df) - max_rows} more rows (use --format csv for all)")


def on_terminal() -> bool:
    """Whether standard output is a terminal (Rich tables), not a file or a pipe."""
    return console.is_terminal


# off a terminal, the widest line of a plain table: a wider one prints one record per block
PLAIN_WIDTH = 200


def plain_table(
    columns: list[str], rows: list[list[str]], numeric: list[bool], title: str | None = None
) -> str:
    """Cells as plain text for a file or a pipe: aligned columns (numbers to the right)
    under a header, no line wrapped; wider than :data:`PLAIN_WIDTH`, one record per block
    (one ``column  value`` line each), so no header is broken over lines."""
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    if sum(widths) + 2 * (len(widths) - 1) > PLAIN_WIDTH:
        return _record_blocks(columns, rows, title)

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    lines = ["", title] if title else []  # a blank line parts titled tables
    lines += [line(columns), line(["-" * w for w in widths]), *map(line, rows)]
    return "\n".join(lines)


def _record_blocks(columns: list[str], rows: list[list[str]], title: str | None) -> str:
    key = max(map(len, columns))
    lines = ["", f"{title or 'records'} (one record per block)"]
    for i, row in enumerate(rows, 1):
        lines += ["", f"[{i}]"]
        lines += [f"{c.ljust(key)}  {v}".rstrip() for c, v in zip(columns, row, strict=True)]
    return "\n".join(lines)


def _rich_table(
    columns: list[str], rows: list[list[str]], numeric: list[bool], title: str | None
) -> None:
    """A Rich table fitted to the terminal: columns narrowed in proportion, never to nothing."""
    from rich.table import Table

    longest = [max([len(col), *(len(r[i]) for r in rows)]) for i, col in enumerate(columns)]
    # numbers never break mid-token (their header may wrap); text keeps a readable width
    narrowest = [
        max([1, *(len(r[i]) for r in rows)]) if num else min(n, 12)
        for i, (num, n) in enumerate(zip(numeric, longest, strict=True))
    ]
    # each column adds its padding and right border, the table its left border
    fits = 1 + sum(n + 3 for n in longest) <= console.width
    needed = 1 + sum(n + 3 for n in narrowest)
    widths = None if fits else _share_width(narrowest, longest, console.width - needed)
    table = Table(title=title, show_lines=False)
    for i, col in enumerate(columns):
        # too wide for the console: widths set here and, if still too wide, an overflowing
        # line, rather than Rich squeezing a column to nothing
        table.add_column(col, overflow="fold", width=None if fits else widths[i])
    for r in rows:
        table.add_row(*r)
    too_wide = needed > console.width
    console.print(table, width=needed if too_wide else None, crop=not too_wide)


def _share_width(narrowest: list[int], longest: list[int], spare: int) -> list[int]:
    """Column widths: each its narrowest, plus ``spare`` shared in proportion to what it
    lacks. Called only for a table that does not fit, so ``spare`` is less than what the
    columns lack together (and, when even the narrowest widths do not fit, not positive).
    """
    if spare <= 0:
        return narrowest
    lacking = [b - a for a, b in zip(narrowest, longest, strict=True)]
    total = sum(lacking)
    return [a + lack * spare // total for a, lack in zip(narrowest, lacking, strict=True)]


def rows_csv(rows) -> str:
    """:class:`~iosight.warehouse.Rows` as CSV with a header, as pandas writes a frame:
    a missing value is an empty field."""
    import csv
    import io

    from iosight._units import missing

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(rows.columns)
    writer.writerows(["" if missing(v) else v for v in row] for row in rows.values)
    return out.getvalue()


def frame_json(df, *, lines: bool = False) -> str:
    """``df`` (a DataFrame or :class:`~iosight.warehouse.Rows`) as one JSON array of
    objects, or JSON Lines; ints stay ints, NaN is null."""
    from iosight.warehouse import Rows

    records = df.records() if isinstance(df, Rows) else df.to_dict("records")
    if lines:
        return "".join(document_json(r, one_line=True) for r in records)
    return document_json(records)


def document_json(doc, *, one_line: bool = False) -> str:
    """``doc`` (dicts and lists of numpy, pandas and plain values) as one JSON document,
    indented or on ``one_line``; ints stay ints, NaN is null."""
    import json

    return json.dumps(_json_value(doc), ensure_ascii=False, indent=None if one_line else 1) + "\n"


def _json_value(v):
    import datetime as dt
    import math

    from iosight._units import missing

    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    # a numpy value exists only where numpy is imported: a pandas-free command skips it
    np = sys.modules.get("numpy")
    if isinstance(v, list | tuple) or (np is not None and isinstance(v, np.ndarray)):
        return [_json_value(x) for x in v]
    if np is not None and isinstance(v, np.generic):
        v = v.item()
    if missing(v):  # None, NaN, pandas' NaT and NA
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()
    return str(v)
