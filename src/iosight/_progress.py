"""Progress reporting for long loops, without the library importing Rich.

Library functions take ``progress: Progress | None``; the CLI passes one that draws a
Rich bar on a terminal and prints a plain line now and then when piped to a file.
``NullProgress`` is silent.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Receives ``start(total, description)``, ``advance(n, **fields)`` per item, ``finish()``.

    Work in phases (measure, then run cases) calls ``start`` again after ``finish``.
    """

    def start(self, total: int | None, description: str) -> None: ...

    def advance(self, n: int = 1, **fields: object) -> None: ...

    def finish(self) -> None: ...


class NullProgress:
    """A progress sink that shows nothing."""

    def start(self, total: int | None, description: str) -> None:
        pass

    def advance(self, n: int = 1, **fields: object) -> None:
        pass

    def finish(self) -> None:
        pass


def ensure_progress(progress: Progress | None) -> Progress:
    return NullProgress() if progress is None else progress
