"""``iosight demo``: every capability end to end on data that ships with iosight.

Each capability adds one ``step_NN_<name>.py`` module here with a ``TITLE`` and a
``run(ctx: DemoContext)`` function; steps run in the order of their number and share
one temporary warehouse.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iosight._errors import IosightError
from iosight.warehouse import Warehouse


@dataclass
class DemoContext:
    """What a demo step may use: a work directory, the shared warehouse, output callbacks."""

    workdir: Path
    warehouse: Warehouse
    say: Callable[[str], None]
    show: Callable[[Any, str], None]  # (DataFrame, title)
    quick: bool = False
    artifacts: dict[str, Path] = field(default_factory=dict)


def steps() -> list[tuple[str, Any]]:
    """The demo steps in order, as (module name, module)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("step_"))
    return [(n, importlib.import_module(f"{__name__}.{n}")) for n in names]


def select_steps(only: list[str] | None = None) -> list[tuple[str, Any]]:
    """Every step, or those whose name contains one of ``only``; an error naming the
    steps when some word of ``only`` matches none."""
    every = steps()
    if not only:
        return every
    unknown = [o for o in only if not any(o in name for name, _ in every)]
    if unknown:
        names = ", ".join(name.split("_", 2)[2] for name, _ in every)
        raise IosightError(f"no demo step matches {', '.join(map(repr, unknown))}; steps: {names}")
    return [(name, mod) for name, mod in every if any(o in name for o in only)]


def run_demo(ctx: DemoContext, only: list[str] | None = None) -> None:
    """Run every step (or those whose name contains one of ``only``)."""
    for _, mod in select_steps(only):
        ctx.say(f"\n== {mod.TITLE} ==")
        mod.run(ctx)
