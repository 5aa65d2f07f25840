"""The ``iosight`` command: thin wrappers over the library.

Each command group lives in its own module here and exposes ``register(app)``;
modules are found with ``pkgutil``, so adding a subsystem's commands touches
only its own file.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

app = typer.Typer(
    name="iosight",
    help="HPC I/O telemetry (Darshan logs first of all) into answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_all() -> None:
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}").register(app)


def _show_version(value: bool) -> None:
    if value:
        from iosight import __version__

        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Show the version and exit.", is_eager=True, callback=_show_version
    ),
) -> None:
    """HPC I/O telemetry (Darshan logs first of all) into answers."""


_register_all()


def main() -> None:
    app()
