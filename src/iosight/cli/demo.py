"""``iosight demo``: every capability end to end on data that ships with iosight."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from iosight.cli._common import cli_errors, console, print_frame


def demo(
    workdir: Path = typer.Option(
        None, help="Keep the demo warehouse and reports here (default: a temporary directory)."
    ),
    only: list[str] = typer.Option(None, help="Run only steps whose name contains this."),
) -> None:
    """Run every capability on data shipped with iosight and its dependencies."""
    from iosight.demo import DemoContext, run_demo
    from iosight.warehouse import Warehouse

    with cli_errors(), tempfile.TemporaryDirectory(prefix="iosight-demo-") as tmp:
        root = workdir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        ctx = DemoContext(
            workdir=root,
            warehouse=Warehouse(root / "warehouse"),
            say=lambda s: console.print(s, highlight=False),
            show=lambda df, title: print_frame(df, title=title, max_rows=15),
        )
        run_demo(ctx, only=only)
        console.print(
            f"\ndemo finished; warehouse at {ctx.warehouse.path}"
            + ("" if workdir else " (temporary: pass --workdir to keep it)")
        )
        for name, path in ctx.artifacts.items():
            console.print(f"  {name}: {path}")
        if workdir:
            console.print(f"browse it: iosight serve --warehouse {ctx.warehouse.path}")


def register(app: typer.Typer) -> None:
    app.command()(demo)
