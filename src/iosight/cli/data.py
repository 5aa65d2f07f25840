"""``iosight data``: the public data sets the workflows use, fetched on demand."""

from __future__ import annotations

from pathlib import Path

import typer

from iosight.cli._common import RichProgress, cli_errors, console, print_frame

group = typer.Typer(
    name="data",
    help="Public data sets (pinned URLs, sha256) in one data directory ($IOSIGHT_DATA).",
    no_args_is_help=True,
)

DIR_OPT = typer.Option(None, "--dir", help="Data directory (default $IOSIGHT_DATA or the cache).")


@group.command("list")
def list_cmd(directory: Path = DIR_OPT, fmt: str = typer.Option("table", "--format", "-f")):
    """Every data set a workflow or report uses, and whether it is here."""
    import pandas as pd

    from iosight.data import DATASETS, data_dir

    with cli_errors():
        root = directory or data_dir()
        rows = []
        for ds in DATASETS.values():
            have = sum((root / f.path).is_file() for f in ds.files)
            rows.append(
                {
                    "name": ds.name,
                    "files": len(ds.files),
                    "here": "yes" if have == len(ds.files) else f"{have}/{len(ds.files)}",
                    "used_by": ds.used_by,
                    "source": f"github.com/{ds.files[0].repo}@{ds.files[0].commit[:7]}",
                    "description": ds.description,
                }
            )
        print_frame(pd.DataFrame(rows), fmt, title=f"data sets (data directory {root})")


@group.command("fetch")
def fetch_cmd(
    names: list[str] = typer.Argument(..., help="Data set names (see `iosight data list`)."),
    directory: Path = DIR_OPT,
) -> None:
    """Download data sets, checking every file's sha256."""
    from iosight.data import fetch

    with cli_errors():
        for name in names:
            path = fetch(name, directory, progress=RichProgress())
            console.print(f"{name}: {path}", highlight=False)


@group.command("path")
def path_cmd(name: str, directory: Path = DIR_OPT) -> None:
    """Print a fetched data set's folder (for other commands: `iosight ingest $(...)`)."""
    from iosight.data import dataset_path

    with cli_errors():
        typer.echo(dataset_path(name, directory))


def register(app: typer.Typer) -> None:
    app.add_typer(group)
