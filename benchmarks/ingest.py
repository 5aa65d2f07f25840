"""Ingest throughput: iosight vs a plain PyDarshan loop, side by side in one run.

The corpus is every 3.x log in ../shared/darshan-logs that PyDarshan 3.5.0 reads
(MANIFEST.tsv status "ok"), replicated to --files copies. Each copy gets 8
trailing bytes so its content hash differs (iosight would otherwise ingest one
copy of each content; libdarshan-util ignores bytes after the last region).

* plain:   for each file, ``darshan.DarshanReport(path, read_all=True)`` and
           ``to_df()`` for every module (one process, as most scripts do)
* iosight: ``iosight.warehouse.ingest`` with --workers workers, end to end into Parquet

Each side runs in its own fresh process; peak memory is the maximum resident set
of that process (plain) or of the parent and of the largest worker (iosight).

    python benchmarks/ingest.py --files 5000 --workers 2
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "darshan-logs"


def corpus(n: int, out: Path) -> list[Path]:
    with open(SHARED / "MANIFEST.tsv", newline="") as fh:
        rows = [
            r
            for r in csv.DictReader(fh, delimiter="\t")
            if r["format"] == "darshan-3.x" and r["pydarshan_3_5_0_status"] == "ok"
        ]
    sources = [SHARED / r["filename"] for r in rows]
    files = []
    for i in range(n):
        src = sources[i % len(sources)]
        dst = out / f"{i:06d}_{src.name[-60:]}"
        dst.write_bytes(src.read_bytes() + i.to_bytes(8, "little"))
        files.append(dst)
    return files


def plain(files: list[str]) -> dict:
    import darshan

    ok = 0
    for f in files:
        with darshan.DarshanReport(f, read_all=True) as r:
            for mod in list(r.records):
                try:
                    r.records[mod].to_df()
                except (KeyError, ValueError):  # some modules (HEATMAP, APMPI) have no to_df
                    pass
        ok += 1
    return {"ok": ok}


def iosight_side(files: list[str], workers: int, wh: str) -> dict:
    from iosight.warehouse import Warehouse, ingest

    rep = ingest(files, Warehouse(wh), workers=workers)
    return {"ok": rep.ingested, "failed": rep.failed}


def _sample_children(peak: dict, stop: threading.Event) -> None:
    """Largest resident set of any descendant process (forkserver workers included)."""
    import psutil

    me = psutil.Process()
    while not stop.wait(0.1):
        for child in me.children(recursive=True):
            try:
                peak["child"] = max(peak["child"], child.memory_info().rss)
            except psutil.Error:
                pass


def _child(args) -> None:
    files = Path(args.list).read_text().split("\n")
    peak, stop = {"child": 0}, threading.Event()
    sampler = threading.Thread(target=_sample_children, args=(peak, stop), daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    if args.side == "plain":
        out = plain(files)
    else:
        out = iosight_side(files, args.workers, args.wh)
    out["seconds"] = time.perf_counter() - t0
    out["peak_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    stop.set()
    out["peak_child_mb"] = peak["child"] / 2**20
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="500 files")
    ap.add_argument("--side", choices=["plain", "iosight"], help=argparse.SUPPRESS)
    ap.add_argument("--list", help=argparse.SUPPRESS)
    ap.add_argument("--wh", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        return _child(args)
    if not SHARED.exists():
        sys.exit(f"needs {SHARED} (the shared Darshan log collection)")
    n = 500 if args.quick else args.files
    tmp = Path(tempfile.mkdtemp(prefix="iosight-bench-"))
    try:
        (tmp / "logs").mkdir()
        files = corpus(n, tmp / "logs")
        size_mb = sum(f.stat().st_size for f in files) / 2**20
        listing = tmp / "files.txt"
        listing.write_text("\n".join(map(str, files)))
        results = {}
        for side in ("plain", "iosight"):
            cmd = [
                sys.executable,
                __file__,
                "--side",
                side,
                "--list",
                str(listing),
                "--workers",
                str(args.workers),
                "--wh",
                str(tmp / "wh"),
            ]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                sys.exit(f"{side} side failed:\n{res.stderr[-3000:]}")
            results[side] = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"corpus: {n} logs, {size_mb:.1f} MB (real logs from ../shared, replicated)")
        print(f"{'side':<28}{'logs/s':>10}{'MB/s':>10}{'peak MB (parent / worker)':>30}")
        for side, label in (
            ("plain", "plain PyDarshan loop"),
            ("iosight", f"iosight ingest, {args.workers} workers"),
        ):
            r = results[side]
            mem = f"{r['peak_self_mb']:.0f}" + (
                f" / {r['peak_child_mb']:.0f}" if side == "iosight" else ""
            )
            print(
                f"{label:<28}{r['ok'] / r['seconds']:>10.1f}"
                f"{size_mb / r['seconds']:>10.2f}{mem:>30}"
            )
        ratio = results["plain"]["seconds"] / results["iosight"]["seconds"]
        print(f"ratio (iosight logs/s / plain logs/s): {ratio:.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
