"""Memory of follow mode over the replayed Summit year, one recorded day per batch:
Arrow's system allocator (what follow uses) beside the pyarrow wheels' default, mimalloc.

``benchmarks/replay.py`` replays in real time, so the load on the machine decides how
many tables a batch takes; here the recorded warehouse's job totals are replayed at once
(``iosight.warehouse.replay``, one table per recorded day) and handed to follow mode
one table per batch, so every run has the same batches. Each batch is followed by
insights and (unless ``--no-forecast``) a timeline update and the forecasts at every
boundary passed, as in ``benchmarks/replay.py``. Two processes run side by side (the
same load): ``follow``, as :func:`iosight.warehouse.follow` runs its batches (Arrow's
system allocator), and ``mimalloc``, with ``ARROW_DEFAULT_MEMORY_POOL=mimalloc``
(Arrow's pool before follow chose one; follow leaves a chosen pool alone). Each prints
its RSS after every tenth batch, the peaks over the first and last quarter of the
batches, the growth per batch over the second half (least squares), Arrow's live bytes
at the end and its CPU time; then the ratio of the growths and the load average.

    python benchmarks/replay_memory.py               # Summit's first 80 days (about 6 min)
    python benchmarks/replay_memory.py --days 366 --no-forecast   # the year, no forecasts
    python benchmarks/replay_memory.py --warehouse WH # another recorded warehouse (with a
                                                      # timeline when forecasting)
"""

from __future__ import annotations

import argparse
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
POOLS = ("follow", "mimalloc")


def landings(source, out: Path, days: float) -> list[list[Path]]:
    """The first ``days`` recorded days of ``source``'s jobs replayed into ``out`` at
    once, a table per day: the files of each landing, in order."""
    from iosight.warehouse import KNOWN_AT, replay

    first = source.sql(f"select min({KNOWN_AT}) t from jobs")["t"][0]
    got: list[list[Path]] = []
    replay(source, out, speed=0, since=first, until=first + days * 86400, group=86400,
           on_landing=lambda _, files: got.append(files))  # fmt: skip
    return got


def child(args) -> None:
    """One process: :func:`iosight.warehouse.follow` fed a recorded day per batch (each
    table renamed into the directory once the batch before is done), RSS after each."""
    import psutil
    import pyarrow as pa

    from iosight.insights import compute_insights
    from iosight.warehouse import Warehouse, follow
    from replay import Forecasting, forecaster

    with tempfile.TemporaryDirectory(prefix="iosight-replaymem-") as tmp:
        tmp = Path(tmp)
        source = Warehouse(args.warehouse, create=False)
        days = landings(source, tmp / "all", args.days)
        logs, wh = tmp / "logs", Warehouse(tmp / "followed", create=True)
        logs.mkdir()
        fc = None if args.no_forecast else Forecasting(forecaster(source, wh))
        me, rss, pools, done, stop = (
            psutil.Process(),
            [],
            set(),
            threading.Event(),
            threading.Event(),
        )

        def after(batch) -> None:
            compute_insights(wh)
            if fc is not None:
                fc.after(wh, batch)
            rss.append(me.memory_info().rss / MB)
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
        follow(logs, wh, interval=0.05, settle=1, workers=1, on_batch=after, stop=stop)
        _report(args.child, ", ".join(sorted(pools)), rss, time.process_time() - cpu,
                pa.total_allocated_bytes())  # fmt: skip


def _report(label: str, pool: str, rss: list[float], cpu: float, live: int) -> None:
    """The child's lines: RSS every tenth batch, quarter peaks, growth per batch."""
    q = max(1, len(rss) // 4)
    half = np.arange(len(rss) // 2, len(rss))
    slope = np.polyfit(half, np.array(rss)[half], 1)[0] if len(half) > 1 else 0.0
    print(f"{label} (Arrow's pool: {pool}): RSS MB after batch " +
          " ".join(f"{i}:{r:.0f}" for i, r in enumerate(rss) if i % 10 == 0))  # fmt: skip
    print(
        f"{label}: {len(rss)} batches, first / last quarter peak {max(rss[:q]):.0f} / "
        f"{max(rss[-q:]):.0f} MB ({max(rss[-q:]) - max(rss[:q]):+.0f}), second half "
        f"{slope:+.2f} MB per batch, Arrow's live bytes at the end {live}, CPU {cpu:.0f} s"
    )
    print(f"GROWTH {slope}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", help="recorded warehouse (default: Summit 2021, ingested)")
    p.add_argument("--days", type=float, default=80.0, help="recorded days, one per batch")
    p.add_argument("--no-forecast", action="store_true", help="insights only, no forecasts")
    p.add_argument("--child", choices=POOLS, help=argparse.SUPPRESS)
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
    """The two processes at once; their lines, and the ratio of their growths."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    options = [*sys.argv[1:], "--warehouse", args.warehouse]
    procs = {
        pool: subprocess.Popen(
            [sys.executable, __file__, *options, "--child", pool],
            env=env | ({"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"} if pool == "mimalloc" else {}),
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for pool in POOLS
    }
    growth = {}
    for pool, proc in procs.items():
        out, _ = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"the {pool} process failed (exit {proc.returncode})")
        lines = out.strip().splitlines()
        print("\n".join(line for line in lines if not line.startswith("GROWTH")))
        growth[pool] = float(lines[-1].split()[1])
    print(f"growth per batch, mimalloc / follow's system pool: "
          f"{growth['mimalloc'] / max(growth['follow'], 0.01):.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
