"""Ingest throughput: iosight (native and libdarshan readers) vs PyDarshan, in one run.

The corpus is every 3.x log in ../shared/darshan-logs that PyDarshan 3.5.0 reads
(MANIFEST.tsv status "ok"), replicated to --files copies. Each copy gets 8
trailing bytes so its content hash differs (iosight would otherwise ingest one
copy of each content; libdarshan-util ignores bytes after the last region).

* native:     ``iosight.warehouse.ingest`` (native 3.x reader), --workers workers,
              end to end into Parquet
* libdarshan: the same with ``reader="libdarshan"`` (libdarshan-util via PyDarshan's cffi)
* pool:       the fair baseline: a ``multiprocessing.Pool(--workers)`` mapping each file
              to ``darshan.DarshanReport(path, read_all=True)`` + ``to_df()`` of every
              module (what a competent user writes; same cores as iosight)
* plain:      the same calls in a one-process loop (for reference)

Each side runs in its own fresh process; peak memory is the maximum resident set
of that process and of its largest child (worker); CPU time is that of the side's
process and all its descendants (logs per CPU-second is what a loaded machine
distorts least; "cores busy" is CPU time over wall time). The ratio that matters
is native vs pool (same cores). The load average is printed before and after: on a
shared machine the numbers are only comparable within one run.

    python benchmarks/ingest.py --files 5000 --workers 2
    python benchmarks/ingest.py --quick      # 200 files, about a minute
    python benchmarks/ingest.py --files 1020 --corpus nodxt --sides native
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "darshan-logs"


def corpus(n: int, out: Path, start: int = 0, dxt: bool | None = None) -> list[Path]:
    """Copies ``start`` .. ``start + n - 1`` of the corpus, written into ``out``.

    ``dxt`` None takes every log; True only those with DXT traces (MANIFEST has_dxt=1),
    False only those without (the "nodxt" corpus: per-log fixed costs without DXT's bulk).
    """
    with open(SHARED / "MANIFEST.tsv", newline="") as fh:
        rows = [
            r
            for r in csv.DictReader(fh, delimiter="\t")
            if r["format"] == "darshan-3.x"
            and r["pydarshan_3_5_0_status"] == "ok"
            and (dxt is None or (r["has_dxt"] == "1") == dxt)
        ]
    sources = [SHARED / r["filename"] for r in rows]
    files = []
    for i in range(start, start + n):
        src = sources[i % len(sources)]
        dst = out / f"{i:06d}_{src.name[-60:]}"
        dst.write_bytes(src.read_bytes() + i.to_bytes(8, "little"))
        files.append(dst)
    return files


def pydarshan_one(path: str) -> int:
    """One log as a PyDarshan user reads it: every record, every module as a DataFrame."""
    import darshan

    with darshan.DarshanReport(path, read_all=True) as r:
        for mod in list(r.records):
            try:
                r.records[mod].to_df()
            except (KeyError, ValueError):  # some modules (HEATMAP, APMPI) have no to_df
                pass
    return 1


def plain(files: list[str]) -> dict:
    return {"ok": sum(pydarshan_one(f) for f in files)}


def pool(files: list[str], workers: int, forked: Callable[[], None]) -> dict:
    import multiprocessing

    with multiprocessing.Pool(workers) as p:
        forked()  # (the Pool forks its workers: no other thread may run before)
        ok = sum(p.imap_unordered(pydarshan_one, files, chunksize=8))
    return {"ok": ok}


def iosight_side(files: list[str], workers: int, wh: str, reader: str) -> dict:
    from iosight.warehouse import Warehouse, ingest

    rep = ingest(files, Warehouse(wh, create=True), workers=workers, reader=reader)
    return {"ok": rep.ingested, "failed": rep.failed}


def _sample_children(peak: dict, cpu: dict, stop: threading.Event) -> None:
    """Largest resident set of any descendant process (forkserver workers included), and
    the last CPU time (user + system) seen for each, sampled every 0.1 s."""
    import psutil

    me = psutil.Process()
    while not stop.wait(0.1):
        for child in me.children(recursive=True):
            try:
                peak["child"] = max(peak["child"], child.memory_info().rss)
                t = child.cpu_times()
                cpu[child.pid] = t.user + t.system
            except psutil.Error:
                pass


def _child(args) -> None:
    files = Path(args.list).read_text().split("\n")
    peak, cpu, stop = {"child": 0}, {}, threading.Event()
    sampler = threading.Thread(target=_sample_children, args=(peak, cpu, stop), daemon=True)
    t0 = time.perf_counter()
    if args.side == "pool":
        # fork the workers before the sampler thread runs: forking a process with a running
        # thread is unsafe (a --quick run hung once, a worker in a futex wait at 0% CPU)
        out = pool(files, args.workers, forked=sampler.start)
    else:
        sampler.start()
        out = (
            plain(files)
            if args.side == "plain"
            else iosight_side(files, args.workers, args.wh, args.side)
        )
    out["seconds"] = time.perf_counter() - t0
    me = resource.getrusage(resource.RUSAGE_SELF)
    out["peak_self_mb"] = me.ru_maxrss / 1024
    stop.set()
    out["cpu_s"] = me.ru_utime + me.ru_stime + sum(cpu.values())
    out["peak_child_mb"] = peak["child"] / 2**20
    print(json.dumps(out))


SIDES = {
    "native": "iosight ingest, native, {w} workers",
    "libdarshan": "iosight ingest, libdarshan, {w} workers",
    "pool": "PyDarshan Pool({w}) read_all+to_df",
    "plain": "PyDarshan loop, 1 process",
}


CORPORA = {"all": None, "nodxt": False, "dxt": True}


def _load(avg: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in avg)


def _report(results: dict, workers: int, size_mb: float) -> None:
    """The table of the sides run, and the ratios whose two sides both ran."""
    print(
        f"{'side':<40}{'logs/s':>9}{'MB/s':>9}{'logs/CPU-s':>12}{'CPU ms/log':>12}"
        f"{'cores busy':>12}{'peak RSS MB (parent / worker)':>32}"
    )
    for side, r in results.items():
        label = SIDES[side].format(w=workers)
        mem = f"{r['peak_self_mb']:.0f} / {r['peak_child_mb']:.0f}"
        print(
            f"{label:<40}{r['ok'] / r['seconds']:>9.1f}{size_mb / r['seconds']:>9.2f}"
            f"{r['ok'] / r['cpu_s']:>12.1f}{1000 * r['cpu_s'] / r['ok']:>12.2f}"
            f"{r['cpu_s'] / r['seconds']:>12.2f}{mem:>32}"
        )
    speed = {k: r["ok"] / r["seconds"] for k, r in results.items()}
    per_cpu = {k: r["ok"] / r["cpu_s"] for k, r in results.items()}
    for other, what in (("pool", "fair, same cores"), ("libdarshan", "reader"), ("plain", "loop")):
        if "native" in speed and other in speed:
            print(
                f"ratio native / {other} ({what}): {speed['native'] / speed[other]:.2f}x; "
                f"per CPU-second (robust to load) {per_cpu['native'] / per_cpu[other]:.2f}x"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="200 files (about a minute)")
    ap.add_argument(
        "--corpus",
        choices=list(CORPORA),
        default="all",
        help="all logs, only those without DXT (nodxt) or only those with (dxt)",
    )
    ap.add_argument(
        "--sides", default=",".join(SIDES), help="comma-separated subset of " + ",".join(SIDES)
    )
    ap.add_argument("--side", choices=list(SIDES), help=argparse.SUPPRESS)
    ap.add_argument("--list", help=argparse.SUPPRESS)
    ap.add_argument("--wh", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        return _child(args)
    if not SHARED.exists():
        sys.exit(f"needs {SHARED} (the shared Darshan log collection)")
    n = 200 if args.quick else args.files
    tmp = Path(tempfile.mkdtemp(prefix="iosight-bench-"))
    try:
        (tmp / "logs").mkdir()
        files = corpus(n, tmp / "logs", dxt=CORPORA[args.corpus])
        size_mb = sum(f.stat().st_size for f in files) / 2**20
        listing = tmp / "files.txt"
        listing.write_text("\n".join(map(str, files)))
        load_before = os.getloadavg()
        sides = args.sides.split(",")
        if unknown := set(sides) - set(SIDES):
            sys.exit(f"unknown sides: {', '.join(sorted(unknown))}")
        results = {}
        for side in sides:
            wh = tmp / f"wh-{side}"
            cmd = [sys.executable, __file__, "--side", side, "--list", str(listing)]
            cmd += ["--workers", str(args.workers), "--wh", str(wh)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                sys.exit(f"{side} side failed:\n{res.stderr[-3000:]}")
            results[side] = json.loads(res.stdout.strip().splitlines()[-1])
        load_after = os.getloadavg()
        print(
            f"corpus: {n} logs ({args.corpus}), {size_mb:.1f} MB "
            "(real logs from ../shared, replicated)"
        )
        print(
            f"cores: {os.cpu_count()}; load average before {_load(load_before)}, "
            f"after {_load(load_after)}"
        )
        _report(results, args.workers, size_mb)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
