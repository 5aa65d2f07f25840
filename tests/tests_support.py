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


_HOLD_LOCK = """
import sys
from iosight.warehouse import Warehouse

with Warehouse(sys.argv[1]).writer_lock():
    print("locked", flush=True)
    sys.stdin.readline()  # hold the lock until the test says so
"""


def hold_warehouse_lock(path):
    """A process holding the write lock of the warehouse at ``path`` until a line on its stdin."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout.readline() == "locked\n"
    return proc


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a server a test starts)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
