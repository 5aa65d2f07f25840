"""The one exception root of iosight: problems a user can cause.

The command line shows these as one line and exits non-zero; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class IosightError(Exception):
    """A problem the user can cause; shown without traceback."""


class CorruptLogError(IosightError, ValueError):
    """A source that cannot be read as the format it claims to be."""


def read_naming_file(path: Path, read: Callable[[Path], T]) -> T:
    """``read(path)`` with every :class:`CorruptLogError` naming the file once."""
    if not path.is_file():
        raise CorruptLogError(f"{path}: not a file")
    try:
        return read(path)
    except CorruptLogError as err:
        if str(err).startswith(f"{path}: "):
            raise
        raise CorruptLogError(f"{path}: {err}") from None


class MissingTableError(IosightError, LookupError):
    """A warehouse table an analysis needs has not been built yet."""

    def __init__(self, table: str, hint: str = "") -> None:
        msg = f"no {table!r} table in the warehouse"
        super().__init__(f"{msg}; {hint}" if hint else msg)
        self.table = table


class UnknownNameError(IosightError, KeyError):
    """A name that is not one of a family's registered implementations."""

    def __init__(self, family: str, name: str, known: list[str]) -> None:
        super().__init__(f"unknown {family} {name!r}; choose one of: {', '.join(known)}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def check_param(name: str, value: object, ok: bool, expected: str) -> None:
    """Raise the one-shape parameter error when ``ok`` is false."""
    if not ok:
        raise IosightError(f"the {name!r} parameter must be {expected}. Got {value!r} instead.")


MAX_SEED = 2**32 - 1


def is_integer(value: object) -> bool:
    """An integer, Python's or NumPy's; a bool is not one (``True`` is no count)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_seed(seed: object, name: str = "seed") -> None:
    """Refuse a seed NumPy's generators cannot take: it must be an integer in 0..2**32-1."""
    ok = is_integer(seed) and 0 <= seed <= MAX_SEED
    check_param(name, seed, ok, f"an integer in 0..{MAX_SEED}")


def parse_list(value, cast=str, name: str = "value") -> list:
    """A comma-separated string, a scalar or a list as a non-empty list of ``cast`` values
    (options such as ``--horizons 5,30``); anything else is an :class:`IosightError`
    naming the parameter ``name``."""
    from collections.abc import Iterable

    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        items = [value]
    expected = "a non-empty comma-separated list" + (
        " of numbers" if cast is float else " of integers" if cast is int else ""
    )
    try:
        out = [cast(v) for v in items]
    except (TypeError, ValueError):
        out = []
    check_param(name, value, len(out) > 0, expected)
    return out
