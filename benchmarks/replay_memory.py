"""Memory of follow mode over the replayed Summit year, fed a fixed sequence of batches:
follow as it runs beside variants of it, and where each one's memory is.

``benchmarks/replay.py`` replays in real time, so the load on the machine decides how
many tables a batch takes; here the recorded warehouse's job totals are replayed at once
(``iosight.warehouse.replay``, one table per ``--hours-per-batch`` recorded hours, a day
by default) and handed to follow mode one table per batch, so every run has the same
batches whatever the load. Each batch is followed by insights and (unless
``--no-forecast``) a timeline update and the forecasts at every boundary passed, as in
``benchmarks/replay.py``. The ``--variants`` run side by side (the same load), each in a
process of its own: ``follow`` as ``iosight ingest --follow`` runs (Arrow's system
allocator chosen at start; glibc's free pages given back after each batch),
``mimalloc`` with the pyarrow wheels' default pool (``ARROW_DEFAULT_MEMORY_POOL=mimalloc``),
``arenas2`` with glibc's malloc limited to two arenas (``MALLOC_ARENA_MAX=2``),
``thresholds`` with glibc's mmap and trim thresholds fixed at 128 KiB (by default a
freed large block raises them, up to 32 and 64 MiB),
``no-compact`` and ``no-insights``. Each prints its RSS after every tenth batch, the
peaks over the first, middle and last quarter of the batches, the growth per batch over
the second half (least squares), Arrow's live bytes at the end, its CPU time, and after
the first quarter and the last batch where its memory is: resident MB of glibc's main
heap, its other arenas, other anonymous memory and files (``/proc/self/smaps``), glibc's
bytes in use and free (``mallinfo2``), DuckDB's allocator (jemalloc: allocated,
resident) and Python's small-object arenas; then the ratios of the growths and the load
average.

    python benchmarks/replay_memory.py               # Summit's first 80 days (about 6 min)
    python benchmarks/replay_memory.py --days 366 --no-forecast   # the year, no forecasts
    python benchmarks/replay_memory.py --days 366 --variants follow,no-compact
    python benchmarks/replay_memory.py --warehouse WH # another recorded warehouse (with a
                                                      # timeline when forecasting)
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

MB = 2**20


#: the processes a run may compare: environment set before start, follow's options
VARIANTS = {
    "follow": ({"ARROW_DEFAULT_MEMORY_POOL": "system"}, {}),  # as `ingest --follow`
    "mimalloc": ({"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}, {}),  # the wheels' default
    "arenas2": ({"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2"}, {}),
    "thresholds": (  # glibc's mmap and trim thresholds fixed: not raised by large frees
        {
            "ARROW_DEFAULT_MEMORY_POOL": "system",
            "MALLOC_MMAP_THRESHOLD_": "131072",
            "MALLOC_TRIM_THRESHOLD_": "131072",
        },
        {},
    ),  # fmt: skip
    "no-compact": ({"ARROW_DEFAULT_MEMORY_POOL": "system"}, {"compact": False}),
    "no-insights": ({"ARROW_DEFAULT_MEMORY_POOL": "system"}, {"insights": False}),
}


def landings(source, out: Path, days: float, hours: float) -> list[list[Path]]:
    """The first ``days`` recorded days of ``source``'s jobs replayed into ``out`` at
    once, a table per ``hours`` recorded hours: the files of each landing, in order."""
    from iosight.warehouse import KNOWN_AT, replay

    first = source.sql(f"select min({KNOWN_AT}) t from jobs")["t"][0]
    got: list[list[Path]] = []
    replay(source, out, speed=0, since=first, until=first + days * 86400, group=hours * 3600,
           on_landing=lambda _, files: got.append(files))  # fmt: skip
    return got


def smaps() -> dict[str, float]:
    """This process's resident MB by kind of mapping (``/proc/self/smaps``): glibc's main
    heap, its other arenas (anonymous, at 64 MiB boundaries), other anonymous memory
    (large blocks, DuckDB's and Arrow's own allocators, stacks) and files."""
    kinds = dict.fromkeys(("heap", "arenas", "anon", "files"), 0.0)
    kind = "files"
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and not head[0].endswith(":"):
            start, name = int(head[0].split("-")[0], 16), head[5] if len(head) > 5 else ""
            kind = ("heap" if name == "[heap]" else "files" if name else
                    "arenas" if start % (64 * MB) == 0 else "anon")  # fmt: skip
        elif head[0] == "Rss:":
            kinds[kind] += int(head[1]) / 1024
    objects = {"Python objects (thousands)": len(gc.get_objects()) / 1000}
    return kinds | mallinfo() | duckdb_jemalloc() | pymalloc() | objects


def duckdb_jemalloc() -> dict[str, float]:
    """DuckDB's own allocator (jemalloc, linked into its module): MB allocated and
    resident."""
    import _duckdb

    mallctl = ctypes.CDLL(_duckdb.__file__).duckdb_je_mallctl
    epoch = ctypes.c_uint64(1)
    mallctl(b"epoch", None, None, ctypes.byref(epoch), ctypes.c_size_t(8))
    got = {}
    for name in ("allocated", "resident"):
        value, size = ctypes.c_size_t(), ctypes.c_size_t(8)
        mallctl(f"stats.{name}".encode(), ctypes.byref(value), ctypes.byref(size), None, 0)
        got[f"duckdb {name}"] = value.value / MB
    return got


def pymalloc() -> dict[str, float]:
    """Python's small-object allocator: MB in its arenas and in blocks in use
    (``sys._debugmallocstats``)."""
    with tempfile.TemporaryFile() as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode()
    stats = {x[2:].split("=")[0].strip(): x.split("=")[1] for x in text.splitlines()
             if x.startswith("# ") and "=" in x}  # fmt: skip
    return {
        "pymalloc arenas": float(stats["arenas allocated current"]),  # of 1 MiB (3.10 on)
        "pymalloc in use": int(stats["bytes in allocated blocks"].replace(",", "")) / MB,
    }


class _Mallinfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]  # fmt: skip


def mallinfo() -> dict[str, float]:
    """glibc malloc's bytes in use and held free (all arenas, MB; ``mallinfo2``)."""
    f = ctypes.CDLL(None).mallinfo2
    f.restype = _Mallinfo
    m = f()
    return {"malloc in use": m.uordblks / MB, "malloc free": m.fordblks / MB}


def child(args) -> None:
    """One variant's process: :func:`iosight.warehouse.follow` fed a recorded table per
    batch (renamed into the directory once the batch before is done), RSS after each."""
    import psutil
    import pyarrow as pa

    from iosight.insights import compute_insights
    from iosight.warehouse import Warehouse, follow
    from replay import AfterBatch, Forecasting, forecaster

    options = VARIANTS[args.child][1]
    with tempfile.TemporaryDirectory(prefix="iosight-replaymem-") as tmp:
        tmp = Path(tmp)
        source = Warehouse(args.warehouse, create=False)
        days = landings(source, tmp / "all", args.days, args.hours_per_batch)
        logs, wh = tmp / "logs", Warehouse(tmp / "followed", create=True)
        logs.mkdir()
        fc = None if args.no_forecast else Forecasting(forecaster(source, wh))
        me, rss, pools = psutil.Process(), [], set()
        done, stop = threading.Event(), AfterBatch(smaps, len(days) // 4, len(days))

        def after(batch) -> None:
            if options.get("insights", True):
                compute_insights(wh)
            if fc is not None:
                fc.after(wh, batch)
            rss.append(me.memory_info().rss / MB)
            stop.pending = threading.get_ident()  # this thread's next is_set
            pools.add(pa.default_memory_pool().backend_name)
            done.set()

        def feed() -> None:
            for files in days:
                done.clear()
                for f in files:  # whole when it appears: follow reads it at first sight
                    shutil.copy(f, tmp / f.name)
                    os.renames(tmp / f.name, logs / f.relative_to(tmp / "all"))
                done.wait()
            stop.set()

        threading.Thread(target=feed, daemon=True).start()
        cpu = time.process_time()
        follow(logs, wh, interval=0.05, settle=1, workers=1, on_batch=after, stop=stop,
               compact=options.get("compact", True))  # fmt: skip
        _report(args.child, ", ".join(sorted(pools)), rss, time.process_time() - cpu,
                pa.total_allocated_bytes())  # fmt: skip
        _report(f"{args.child}, after follow's trim", "", stop.rss, 0, 0)
        for i, kinds in stop.maps.items():
            print(f"{args.child}: resident MB after batch {i}: " +
                  ", ".join(f"{k} {v:.1f}" for k, v in kinds.items()))  # fmt: skip


def _report(label: str, pool: str, rss: list[float], cpu: float, live: int) -> None:
    """The child's lines: RSS every tenth batch, quarter peaks, growth per batch."""
    q = max(1, len(rss) // 4)
    half = np.arange(len(rss) // 2, len(rss))
    slope = np.polyfit(half, np.array(rss)[half], 1)[0] if len(half) > 1 else 0.0
    print(f"{label} (Arrow's pool: {pool}): RSS MB after batch " +
          " ".join(f"{i}:{r:.0f}" for i, r in enumerate(rss) if i % 10 == 0))  # fmt: skip
    mid = max(rss[len(rss) // 2 - q // 2 : len(rss) // 2 + q // 2 + 1])
    first, last = max(rss[:q]), max(rss[-q:])
    print(
        f"{label}: {len(rss)} batches, first / middle / last quarter peak {first:.0f} / "
        f"{mid:.0f} / {last:.0f} MB ({last - first:+.0f}), second half "
        f"{slope:+.2f} MB per batch, Arrow's live bytes at the end {live}, CPU {cpu:.0f} s"
    )
    print(f"GROWTH {slope}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", help="recorded warehouse (default: Summit 2021, ingested)")
    p.add_argument("--days", type=float, default=80.0, help="recorded days replayed")
    p.add_argument("--hours-per-batch", type=float, default=24.0, help="recorded hours a batch")
    p.add_argument("--variants", default="follow,mimalloc", help="processes side by side, "
                   f"comma-separated, of: {', '.join(VARIANTS)}")  # fmt: skip
    p.add_argument("--no-forecast", action="store_true", help="insights only, no forecasts")
    p.add_argument("--child", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="iosight-replaymem-") as tmp:
        if not args.warehouse:
            args.warehouse = str(summit(Path(tmp)))
        side_by_side(args)
    print(f"load average after: {os.getloadavg()[0]:.1f} (a shared machine: compare within a run)")


def summit(tmp: Path) -> Path:
    """Summit 2021's job totals batch-ingested, with their timeline (built once here,
    not by the two processes at once)."""
    from iosight.timeline import build_timeline
    from replay import recorded

    wh = recorded(None, tmp)
    build_timeline(wh)
    return wh.path


def side_by_side(args) -> None:
    """The variants' processes at once; their lines, and the ratio of their growths."""
    chosen = {k for env, _ in VARIANTS.values() for k in env}
    env = {k: v for k, v in os.environ.items() if k not in chosen}
    options = [*sys.argv[1:], "--warehouse", args.warehouse]
    names = args.variants.split(",")
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"unknown variants {unknown}: choose among {', '.join(VARIANTS)}")
    procs = {
        name: subprocess.Popen([sys.executable, __file__, *options, "--child", name],
                               env=env | VARIANTS[name][0], stdout=subprocess.PIPE, text=True)
        for name in names
    }  # fmt: skip
    growth = {}
    for name, proc in procs.items():
        out, _ = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"the {name} process failed (exit {proc.returncode})")
        lines = out.strip().splitlines()
        print("\n".join(line for line in lines if not line.startswith("GROWTH")))
        growth[name] = float(next(x for x in lines if x.startswith("GROWTH")).split()[1])
    base = names[0]
    for name in names[1:]:
        print(f"growth per batch, {name} / {base}: "
              f"{growth[name] / max(growth[base], 0.01):.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
