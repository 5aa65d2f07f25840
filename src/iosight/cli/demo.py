"""``iosight demo``: every capability end to end on data that ships with iosight."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from iosight.cli._common import cli_errors, console, print_frame


def demo(
    workdir: Path = typer.Option(
        Path("iosight-demo"), help="Where the demo's warehouse and reports are kept."
    ),
    only: list[str] = typer.Option(
        None, help="Run only steps whose name contains this (e.g. characterization, trace)."
    ),
) -> None:
    """Run every capability on data shipped with iosight and its dependencies."""
    from iosight.demo import DemoContext, run_demo, select_steps
    from iosight.warehouse import Warehouse

    with cli_errors():
        select_steps(only)  # an unknown step fails before an earlier demo folder is replaced
        root = fresh_workdir(workdir)
        ctx = DemoContext(
            workdir=root,
            warehouse=Warehouse(root / "warehouse", create=True),
            say=lambda s: console.print(s, highlight=False),
            show=lambda df, title: print_frame(df, title=title, max_rows=15),
        )
        run_demo(ctx, only=only)
        console.print(
            f"\ndemo finished; everything it wrote is in {root}/ (warehouse: "
            f"{ctx.warehouse.path}); delete the folder when done",
            highlight=False,
        )
        for name, path in ctx.artifacts.items():
            console.print(f"  {name}: {path}")
        console.print(f"browse it: iosight serve --warehouse {ctx.warehouse.path}")


MARK = ".iosight-demo"  # marks a folder the demo made, so a re-run may replace it


def fresh_workdir(root: Path) -> Path:
    """An empty ``root`` for the demo: created, or emptied when an earlier demo made it.

    A non-empty folder the demo did not make is refused, never deleted.
    """
    from iosight._errors import IosightError

    if root.exists() and not root.is_dir():
        raise IosightError(f"{root} exists and is not a folder; pass --workdir NEW_FOLDER")
    if root.exists() and any(root.iterdir()):
        if not (root / MARK).exists():
            raise IosightError(
                f"{root} exists and was not made by 'iosight demo'; pass --workdir NEW_FOLDER"
            )
        shutil.rmtree(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise IosightError(
            f"cannot create {root}: {err.strerror}; pass --workdir NEW_FOLDER"
        ) from None
    (root / MARK).write_text("written by 'iosight demo'; a re-run replaces this folder\n")
    return root


def register(app: typer.Typer) -> None:
    app.command()(demo)
