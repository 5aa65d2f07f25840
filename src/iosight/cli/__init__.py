"""The ``iosight`` command: thin wrappers over the library.

Each command group lives in its own module here and exposes ``register(app)``;
modules are found with ``pkgutil``, so adding a subsystem's commands touches
only its own file. Every module registers one command of its own name, but for
:data:`WAREHOUSE_COMMANDS` (``cli/warehouse.py``).

Commands are registered lazily: ``iosight jobs`` imports ``cli/warehouse.py`` alone,
not the modules of the other fourteen commands (and the libraries they import at
their top), so a read command answers a small warehouse at once; ``iosight --help``
(or an unknown command) imports them all, to list each with its help. ``app`` is the
application with every command, for tests and tools that drive it in-process.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Sequence

import typer

#: the commands ``cli/warehouse.py`` registers (tests/cli/test_imports.py checks them)
WAREHOUSE_COMMANDS = frozenset({"ingest", "jobs", "job", "sql", "errors", "tables", "compact"})


def _show_version(value: bool) -> None:
    if value:
        from iosight import __version__

        typer.echo(__version__)
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", help="Show the version and exit.", is_eager=True, callback=_show_version
    ),
) -> None:
    """HPC I/O telemetry (Darshan logs first of all) into answers."""


def command_modules() -> list[str]:
    """The names of the modules here that register commands, sorted."""
    found = pkgutil.iter_modules(__path__)
    return sorted(m.name for m in found if not m.name.startswith("_"))


def module_of(command: str) -> str | None:
    """The module that registers top-level command ``command``; None if none does."""
    if command in WAREHOUSE_COMMANDS:
        return "warehouse"
    return command if command in command_modules() else None


def build_app(argv: Sequence[str] | None = None) -> typer.Typer:
    """The ``iosight`` application with the command ``argv`` names registered, or every
    command when ``argv`` is None or names none that exists (help, a typo: Click then
    lists them or suggests one). The root takes no option with a value, so the first
    argument that is no option is the command."""
    command = next((a for a in argv if not a.startswith("-")), None) if argv else None
    module = module_of(command) if command else None
    app = typer.Typer(
        name="iosight",
        help="HPC I/O telemetry (Darshan logs first of all) into answers.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    for name in [module] if module else command_modules():
        importlib.import_module(f"{__name__}.{name}").register(app)
    return app


def __getattr__(name: str) -> typer.Typer:
    """``app``: every command, built on first use (PEP 562), so that ``main`` need not."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()["app"] = built = build_app()
    return built


def main() -> None:
    """The console script: register the command named on the command line, run it."""
    build_app(sys.argv[1:])()
