"""Helpers importable by test modules (pytest puts tests/ on sys.path via rootdir conftest)."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("IOSIGHT_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def crash_or_echo(items: list[str], beat) -> list[str]:
    """A task for worker-pool tests: 'segv' kills the process, 'sleep' hangs, else echo."""
    out = []
    for i, arg in enumerate(items):
        beat(i)
        if arg == "segv":
            import ctypes

            ctypes.string_at(0)  # SIGSEGV
        if arg == "abort":
            os.abort()
        if arg == "sleep":
            import time

            time.sleep(60)
        if arg == "raise":
            raise ValueError("bad input\nsecond line")
        out.append(arg.upper())
    return out
