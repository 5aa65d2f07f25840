"""Helpers importable by test modules (pytest puts tests/ on sys.path via rootdir conftest)."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

SHARED = Path(os.environ.get("IOSIGHT_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python that must import this iosight and these tests."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **extra}


def shared_path(*parts: str) -> Path:
    """A path under ../shared, skipping the test when it is absent (a fresh clone)."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} not present (../shared is only beside CI and dev checkouts)")
    return p


def summit_totals(folder: Path, jobs: int = 50) -> Path:
    """A job-total table of the first ``jobs`` jobs of Summit's 2021 App1 totals (real),
    written in ``folder``. Skips the test without ../shared."""
    import pyarrow.parquet as pq

    app1 = shared_path("datasets", "summit_darshan_total_2021", "darshan_total", "App1.parquet")
    out = Path(folder) / "App1-head.parquet"
    pq.write_table(pq.read_table(app1).slice(0, jobs), out)
    return out


def wait_for_sync(partial: Path, timeout: float = 30.0) -> None:
    """Wait until the tracer has copied, into every state file in ``partial``, what its
    process did before this call: until each file's sync time has changed twice. A sync
    stamps its time first, then copies, one after the other: the first change is a sync
    that began after this call, the second says it ended. At most ``timeout`` seconds."""
    import time

    from iosight.trace._state import STATE_SUFFIX, recover_state

    def stamp(state: Path) -> tuple[int, int]:
        job = recover_state(state)[0].job
        return job.end_time_sec, job.end_time_nsec

    deadline = time.monotonic() + timeout
    states = sorted(Path(partial).glob(f"*{STATE_SUFFIX}"))
    assert states, f"no trace state file in {partial}"
    for state in states:
        seen = [stamp(state)]
        while len(seen) < 3:
            assert time.monotonic() < deadline, f"{state}: no whole sync in {timeout} s"
            time.sleep(0.01)
            if (now := stamp(state)) != seen[-1]:
                seen.append(now)


def exact_bins(start, end, values, width: float, bin_starts) -> list[Fraction]:
    """An independent, exact (``Fraction``) timeline of the bins ``[b, b + width)`` for
    ``b`` in ``bin_starts``: each interval ``[start, end]`` puts its value times the share
    of its duration inside the bin; a zero-length interval puts all of it in the bin that
    holds it. Slow, for samples of bins."""
    start, end, values = (np.asarray(a, dtype=np.float64) for a in (start, end, values))
    sums = []
    for b in bin_starts:
        lo, hi = Fraction(float(b)), Fraction(float(b)) + Fraction(float(width))
        total = Fraction(0)
        for i in np.flatnonzero((start < float(hi)) & (end >= float(lo))):
            s, e = Fraction(start[i]), Fraction(end[i])
            if e == s:
                share = Fraction(int(lo <= s < hi))
            else:
                share = max(Fraction(0), min(e, hi) - max(s, lo)) / (e - s)
            total += Fraction(values[i]) * share
        sums.append(total)
    return sums


def max_abs_error(got, exact: list[Fraction]) -> Fraction:
    """The largest ``|got - exact|``, computed exactly."""
    return max(abs(Fraction(float(g)) - w) for g, w in zip(got, exact, strict=True))


def raise_on_bad(item: str) -> str:
    """An item function for map tests: 'bad' raises an iosight error, else echo."""
    if item == "bad":
        from iosight._errors import IosightError

        raise IosightError("a bad item")
    return item


def blas_threads(_item) -> int:
    """The threads of this process's BLAS pools (threadpoolctl), for map tests."""
    from threadpoolctl import threadpool_info

    return max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")


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


_KILLED_INGEST = (
    "import json, sys; from iosight.warehouse import Warehouse, ingest\n"
    "ingest(sys.argv[3:], Warehouse(sys.argv[1], create=True), **json.loads(sys.argv[2]))\n"
)


def killed_ingest(target, crash_at: str, **options) -> None:
    """Ingest PyDarshan's example logs into a new warehouse at ``target`` (``options``:
    :func:`~iosight.warehouse.ingest`'s) in a child killed by SIGKILL at the crash point
    ``crash_at`` (``IOSIGHT_TEST_CRASH_AT``, e.g. ``"staged:2"``)."""
    import json
    import signal

    from iosight.data import example_logs

    run = subprocess.run(
        [sys.executable, "-c", _KILLED_INGEST, str(target), json.dumps(options),
         *map(str, example_logs())],
        env=child_env(IOSIGHT_TEST_CRASH_AT=crash_at),
        timeout=300,
    )  # fmt: skip
    assert run.returncode == -signal.SIGKILL


def hold_warehouse_lock(path):
    """A process holding the write lock of the warehouse at ``path`` until a line on its stdin."""
    import subprocess
    import sys

    env = child_env()
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
    """Known-at sums (``iosight.timeline.known_sums`` columns) of a jobs frame
    (``load_jobs`` columns, and ``known_at`` where present, else the end time) on the bins
    ``bin_start``, computed independently: each job's bytes split over its run by explicit
    fractions (``spread_fractions``), known in the bin holding its known-at time; ops and
    times are bytes / 1e6 and bytes / 1e9 (SYNTHETIC)."""
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


def garbage_job_logs() -> list[Path]:
    """The six pre-release 3.4 Darshan logs of ../shared whose job record is not in the
    3.41 layout (libdarshan-util reads nprocs 4427712942739450220); the native reader
    keeps their records, the job fields unknown. Skips the test without ../shared."""
    logs = sorted(shared_path("darshan-logs").glob("*example_logs*_ior-*"))
    assert len(logs) == 6, logs
    return logs


_AUDIT = """
import atexit, sys
_out = sys.argv.pop(1)
atexit.register(lambda: open(_out, "w").write("\\n".join(sys.modules)))
"""


def imported_modules(
    code: str, *args: str, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``code`` in a fresh interpreter with ``args`` as its ``sys.argv[1:]``; its
    result and the modules it had imported when it exited, top-level packages and
    dotted names both (what a command costs to start: a test of which modules load
    times nothing)."""
    out = tmp_path / "modules.txt"
    env = child_env()
    result = subprocess.run(
        [sys.executable, "-c", _AUDIT + code, str(out), *args],
        capture_output=True,
        text=True,
        env=env,
    )
    names = set(out.read_text().split())
    return result, names | {name.split(".")[0] for name in names}


def daily_spikes(days: int = 20, width: float = 300.0, seed: int = 0, anytime: bool = False):
    """A SYNTHETIC timeline: background noise plus a write burst at 08:20 UTC every day
    (``anytime``: at a random time of each day, so the clock cannot foretell it),
    announced by a storm of write operations in the bin before (so feature sets 2 and 3
    can see it coming)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    n = int(days * 86400 / width)
    t0 = pd.Timestamp("2021-06-01", tz="UTC").timestamp()
    start = t0 + width * np.arange(n)
    write = rng.lognormal(20, 0.5, n)
    burst = np.flatnonzero((start % 86400) == 8 * 3600 + 1200)
    if anytime:
        per_day = int(86400 / width)
        burst = per_day * np.arange(days) + rng.integers(1, per_day, days)
    write[burst] = 1e12
    ops = write / 1e6
    ops[burst - 1] = 1e9
    return pd.DataFrame(
        {
            "bin_start": start,
            "bin_width": width,
            "read_bytes": rng.lognormal(20, 1, n),
            "write_bytes": write,
            "read_ops": 1.0,
            "write_ops": ops,
            "read_time": 1.0,
            "write_time": write / 1e9,
            "active_jobs": 3,
        }
    )


class _Planted:
    """Unpickling it creates the folder ``marker``: proof that a pickle was run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


def planted_pickle(marker: Path) -> bytes:
    """A pickle that creates ``marker`` when loaded (what an attacker could plant)."""
    import pickle

    return pickle.dumps(_Planted(marker))


def assert_same_timeline(got, want) -> None:
    """Two timeline frames agree: the same bins and active jobs; the same empty bins,
    exactly; every sum within 1e-12 of its column's largest (jobs summed in another
    order)."""
    from iosight.timeline import VALUE_COLUMNS

    assert list(got.columns) == list(want.columns) and len(got) == len(want)
    for col in ("bin_start", "bin_width", "active_jobs"):
        np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy(), err_msg=col)
    for col in VALUE_COLUMNS:
        g, w = got[col].to_numpy(), want[col].to_numpy()
        np.testing.assert_array_equal(g == 0, w == 0, err_msg=col)
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12 * np.abs(w).max(), err_msg=col)


def follow_until(logs, wh, files: int, timeout: float, after=None, **options):
    """Follow ``logs`` into ``wh`` until ``files`` sources came in (or ``timeout``
    seconds passed), calling ``after(batch)`` after each batch; ``options`` go to
    :func:`iosight.warehouse.follow`. Returns its report."""
    import threading

    from iosight.warehouse import follow

    stop, seen = threading.Event(), []

    def batch(b) -> None:
        if after is not None:
            after(b)
        seen.append(b.report.sources)
        if sum(seen) >= files:
            stop.set()

    timer = threading.Timer(timeout, stop.set)
    timer.start()
    try:
        return follow(logs, wh, workers=1, on_batch=batch, stop=stop, **options)
    finally:
        timer.cancel()


def recent_facility(root: Path, width: float = 300.0, days_ago: int = 0) -> Path:
    """A warehouse at ``root / "wh"`` of two days of SYNTHETIC facility jobs ending at
    midnight UTC today (``days_ago`` days before), its timeline and a ``live`` write
    forecaster ``bursts-write`` (logreg, leads of 5 to 120 minutes) trained on it: a
    history the live feeds of today can follow."""
    import datetime as dt

    from iosight.bursts import train_forecaster
    from iosight.synth.facility import FacilityConfig, generate_facility
    from iosight.timeline import build_timeline, load_timeline
    from iosight.warehouse import Warehouse

    today = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=days_ago)
    wh = Warehouse(root / "wh", create=True)
    start = (today - dt.timedelta(days=2)).isoformat()
    generate_facility(wh, FacilityConfig(months=2 / 30, seed=5, start=start, jobs_per_day=120))
    build_timeline(wh, bin_width=width)
    fc = train_forecaster(load_timeline(wh), direction="write", model="logreg", max_lead=24,
                          severity=False, workers=1, name="bursts-write")  # fmt: skip
    fc.save(wh)
    return wh.path


def cli(*args: object):
    """Run ``iosight ARGS`` in process (Typer's runner). A string argument is split on
    whitespace (``"perfmodel fit --samples"``); a list is kept item by item, so an argument
    with spaces goes in a list; anything else (a path, a number) is one argument."""
    from typer.testing import CliRunner

    from iosight.cli import app

    flat: list[str] = []
    for a in args:
        flat += (
            a.split()
            if isinstance(a, str)
            else [str(x) for x in a]
            if isinstance(a, list)
            else [str(a)]
        )
    return CliRunner().invoke(app, flat)


def same_rows(a, b) -> None:
    """``a`` and ``b`` hold the same rows and columns; rows tied on the sort column of
    their query may come in either order (DuckDB scans files in parallel)."""
    import pandas

    def ordered(df):
        keys = [tuple(map(str, row)) for row in df.itertuples(index=False)]
        return df.iloc[sorted(range(len(df)), key=keys.__getitem__)].reset_index(drop=True)

    pandas.testing.assert_frame_equal(ordered(a), ordered(b))


def jobs_in_small_groups(path: Path, rows: int = 2) -> int:
    """Rewrite the ``jobs`` table of the warehouse at ``path`` as one file in row groups
    of ``rows`` rows, sorted by start time as compaction leaves it, written without
    statistics: no row group can be skipped by a key's min/max. Returns how many row
    groups it has."""
    import shutil

    import pyarrow.parquet as pq

    from iosight.warehouse import Warehouse

    table = Warehouse(path).arrow("select * from jobs order by start_time, job_key")
    folder = Path(path) / "tables" / "jobs"
    shutil.rmtree(folder)
    folder.mkdir()
    out = folder / "part-99999999999999999999-groups.parquet"
    pq.write_table(table, out, row_group_size=rows, write_statistics=False)
    return pq.read_metadata(out).num_row_groups
