"""Helpers importable by test modules (pytest puts tests/ on sys.path via rootdir conftest)."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("IOSIGHT_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def crash_or_echo(items: list[str], beat) -> list[str]:
    """A task for worker-pool tests: 'segv' kills the process, 'sleep' hangs, 'SIGINT'
    and 'SIGTERM' signal the worker itself, else echo."""
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
        if arg in ("SIGINT", "SIGTERM"):  # what a Ctrl-C or `kill` of the group sends
            import signal
            import time

            os.kill(os.getpid(), getattr(signal, arg))
            time.sleep(0.2)  # a handler that raises would do so here
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


def assert_same_warehouse(got, want, ignore=("ingested_at",)) -> None:
    """Every table equal, sorted, value for value, apart from the columns ``ignore``
    names (those that record when, not what: they differ between any two ingests)."""
    assert got.tables() == want.tables()
    for name in want.tables():
        cols = [c for c in want.column_names(name) if c not in ignore]
        # the same columns; their order follows whichever batch file DuckDB reads first
        assert sorted(got.column_names(name)) == sorted(want.column_names(name)), name
        q = f'select {", ".join(f"{chr(34)}{c}{chr(34)}" for c in cols)} from "{name}" order by all'
        a, b = got.arrow(q), want.arrow(q)
        assert a.num_rows == b.num_rows, name
        assert a.equals(b), f"table {name} differs"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a server a test starts)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def read_only_lock(monkeypatch, wh_path):
    """The lock file of ``wh_path`` cannot be opened to write, as on a read-only mount
    (chmod does not stop root, who runs these tests in CI; :func:`read_only_mount` does,
    where the system allows it)."""
    import builtins
    import errno

    from iosight.warehouse import _store

    def fake_open(file, mode="r", *args, **kwargs):
        if str(file) == str(wh_path / "_lock") and mode != "r":
            raise OSError(errno.EROFS, "Read-only file system", str(file))
        return builtins.open(file, mode, *args, **kwargs)

    monkeypatch.setattr(_store, "open", fake_open, raising=False)


_RO_MOUNT = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'


def read_only_mount(folder) -> list[str] | None:
    """A command prefix that runs a command with ``folder`` mounted read-only in a
    private mount namespace (read-only for root too: what chmod cannot give), or None
    where this system allows no such namespace (no ``unshare``, or it is refused)."""
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        return None
    prefix = ["unshare", "--map-root-user", "--mount", "sh", "-c", _RO_MOUNT, str(folder)]
    probe = subprocess.run([*prefix, "true"], capture_output=True)
    return prefix if probe.returncode == 0 else None


def known_frame(jobs, bin_start):
    """SYNTHETIC ``timeline_known`` rows of a jobs frame (``load_jobs`` columns, and
    ``known_at`` where present, else the end time) on the bins ``bin_start``: each job's
    bytes spread over its run, known in the bin holding its known-at time; ops and times
    are bytes / 1e6 and bytes / 1e9. A stand-in for the timeline's own known-at table."""
    import numpy as np
    import pandas as pd

    from iosight.timeline import spread_fractions

    t0, width, n = float(bin_start[0]), float(bin_start[1] - bin_start[0]), len(bin_start)
    start, end = (jobs[c].to_numpy(np.float64) - t0 for c in ("start_time", "end_time"))
    rows, bins, frac = spread_fractions(start, end, width)
    at = jobs["known_at"] if "known_at" in jobs else jobs["end_time"]
    kb = np.maximum(np.floor((at.to_numpy(np.float64)[rows] - t0) / width), bins)
    out = pd.DataFrame({"b": bins, "k": kb.astype(np.int64)})
    for d in ("read", "write"):
        v = jobs[f"{d}_bytes"].to_numpy(np.float64)[rows] * frac
        out[f"{d}_bytes"], out[f"{d}_ops"], out[f"{d}_time"] = v, v / 1e6, v / 1e9
    out["active_jobs"] = 1
    out = out[(out["b"] >= 0) & (out["b"] < n)].groupby(["b", "k"]).sum().reset_index()
    out.insert(0, "bin_start", t0 + width * out.pop("b"))
    out.insert(1, "bin_width", width)
    out.insert(2, "known_start", t0 + width * out.pop("k"))
    return out
