"""How the warehouse keeps up as it grows: one warehouse of replicated real logs,
grown to each size, with compaction automatic, and the common questions timed at each.

The logs are those of ``benchmarks/ingest.py`` (every 3.x log of ../shared/darshan-logs
that PyDarshan reads, each copy made unique by 8 trailing bytes): ``--corpus all`` (the
default) takes every one, a DXT-heavy corpus (about 94 KB a job in the warehouse);
``--corpus nodxt`` only the 68 without DXT traces (MANIFEST has_dxt=0: DXT is off by
default, so most of a facility's logs look like these; about 11 KB a job). The corpus
is printed in the header and in every size's figures: the two are not comparable. They go in as a
facility's archive does, in ingests of ``--chunk`` logs (2 workers); after each, the
tables with 16 or more small files are compacted (what ``iosight ingest`` does by
itself; the driver calls the same :func:`iosight.warehouse.auto_compact` separately
only to time it and sample its memory apart from the ingest's). At each size it prints:

* ingest: wall seconds and logs/s of the ingests to that size; compaction's seconds
  and the peak resident memory of the process while it compacted; the CPU seconds of
  ingests and compactions together (every process of each);
* files per table (mean and most) and the files of all tables;
* ``iosight serve``: p95 of the Jobs page, the Jobs page with a ``where`` condition and
  one job's page (a server started per size, requests in a row);
* the wall time of ``iosight jobs --where 'start_time >= T'`` (the newest 1% of jobs),
  a grouped ``iosight sql``, and ``iosight --help`` (start-up alone) for reference;
* ``iosight timeline build`` and ``iosight insights``: wall seconds and peak memory
  (each command also its CPU seconds, what a shared machine distorts least);
* the load average before and after (the machine may be shared).

    python benchmarks/scale.py                      # 10,000 logs
    python benchmarks/scale.py --sizes 10000 100000 # grown to 10k, measured, then 100k
    python benchmarks/scale.py --corpus nodxt --sizes 10000 100000 --keep WH
    python benchmarks/scale.py --keep WH --sizes 100000 1000000 --skip timeline insights
        # unattended: grows WH (on from the logs it has), a progress line per ingest,
        # each size printed as it is reached; stops short of a full disk
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ingest import CORPORA, SHARED, _sample_children, corpus  # noqa: E402
from serve import _free_port, _get  # noqa: E402

CORPUS_TEXT = {
    "all": "every 3.x log PyDarshan reads: DXT-heavy",
    "nodxt": "only the logs without DXT traces, MANIFEST has_dxt=0",
}
_DRIVER = """
import json, sys, threading, time
from iosight.warehouse import Warehouse, auto_compact, ingest

def rss_mb():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS")) / 1024

peak = [0.0]
def sample(stop):
    while not stop.wait(0.02):
        peak[0] = max(peak[0], rss_mb())

wh = Warehouse(sys.argv[1], create=True)
report = ingest([sys.argv[2]], wh, workers=2, compact=False)
stop = threading.Event(); peak[0] = rss_mb()
threading.Thread(target=sample, args=(stop,), daemon=True).start()
t0 = time.monotonic()
compaction = auto_compact(wh)
seconds = time.monotonic() - t0
stop.set()
print(json.dumps({"ingest_s": report.seconds, "ingested": report.ingested,
                  "failed": report.failed, "compact_s": seconds,
                  "compact_peak_mb": peak[0] if compaction else None,
                  "compaction": compaction.line() if compaction else None}))
"""


def timed(cmd: list[str]) -> tuple[float, float, str, float]:
    """Run ``cmd``; its wall seconds, peak resident MB (its own and its children's),
    standard output and CPU seconds (all its threads and descendants: what load distorts
    least; the workers of a forkserver pool, which the command never reaps, as sampled
    every 0.1 s by ``benchmarks/ingest.py``'s sampler)."""
    seen, stop = {}, threading.Event()
    sampler = threading.Thread(target=_sample_children, args=({"child": 0}, seen, stop))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        stop.set()
        sampler.join()
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed: {err.read()[-2000:]}")
        out.seek(0)
        cpu = max(usage.ru_utime + usage.ru_stime, sum(seen.values()))
        return seconds, usage.ru_maxrss / 1024, out.read(), cpu


def iosight(*args: str) -> list[str]:
    return [sys.executable, "-m", "iosight", *args]


def grow(
    wh: Path, logs: Path, span: tuple[int, int], chunk: int, min_free_gb: float, dxt: bool | None
) -> list[dict]:
    """Ingest copies ``span`` (start, stop) of the corpus (``dxt``: :func:`corpus`'s
    filter) in ingests of ``chunk``, made just before and deleted after each, one
    progress line each (with the time left at the pace so far). A failed ingest is
    reported and the next one goes on (commits are atomic: the warehouse stays whole);
    it stops when the disk has less than ``min_free_gb`` free."""
    (start, stop), runs, t0 = span, [], time.monotonic()
    for at in range(start, stop, chunk):
        free = shutil.disk_usage(wh.parent).free / 2**30
        if free < min_free_gb:
            print(f"  stopped at {at:,} logs: {free:.1f} GB free (< {min_free_gb})", flush=True)
            break
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir()
        corpus(min(chunk, stop - at), logs, start=at, dxt=dxt)
        try:
            _, _, out, cpu = timed([sys.executable, "-c", _DRIVER, str(wh), str(logs)])
        except SystemExit as err:  # reported; the next ingest goes on
            print(f"  ingest of copies {at:,}.. failed: {err}", flush=True)
            continue
        runs.append(json.loads(out.splitlines()[-1]) | {"cpu_s": cpu})
        done, spent = min(at + chunk, stop), time.monotonic() - t0
        left = spent / (done - start) * (stop - done)
        pace = f"{spent / 60:.1f} min, about {left / 60:.0f} min to {stop:,}"
        state = f"{free:.0f} GB free, load {os.getloadavg()[0]:.1f}"
        print(f"  {done:,} logs ({pace}; {state}): {runs[-1]}", flush=True)
    return runs


def logs_in(wh: Path) -> int:
    """Sources already in the warehouse at ``wh`` (0 when there is none): a run given
    ``--keep`` of an earlier run's warehouse goes on from there."""
    from iosight.warehouse import Warehouse

    if not (wh / "tables" / "sources").exists():
        return 0
    return int(Warehouse(wh).sql("select count(*) n from sources")["n"][0])


def check_corpus(wh: Path, name: str) -> None:
    """Stop where a kept warehouse holds logs of the other corpus (one with DXT tables is
    ``all``'s, one without ``nodxt``'s): growing it on would mix the two."""
    from iosight.warehouse import Warehouse

    if logs_in(wh) == 0:
        return
    has_dxt = any(t.startswith("dxt_") for t in Warehouse(wh).tables())
    if has_dxt != (CORPORA[name] is not False):
        held = "all" if has_dxt else "nodxt"
        sys.exit(f"{wh} holds the {held} corpus's logs, not {name}'s: give --corpus {held}")


def file_counts(wh: Path) -> dict[str, int]:
    from iosight.warehouse import Warehouse

    w = Warehouse(wh)
    return {t: len(w.table_files(t)) for t in w.tables()}


def serve_p95(wh: Path, keys: list[str], repeat: int, warm_s: float) -> dict[str, float]:
    """p95 (ms) of the Jobs page, a filtered Jobs page and job pages, one server, from its
    start (its key index of which file holds which job still filling: a page reads the
    files not yet read whole), and job pages of other jobs again ``warm_s`` seconds later."""
    port = _free_port()
    server = subprocess.Popen(
        iosight("serve", "-w", str(wh), "--port", str(port)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                _get(base + "/jobs")
                break
            except OSError:
                time.sleep(0.1)
        where = urllib.parse.quote("nprocs >= 4 and run_time > 60")
        pages = {
            "/jobs": ["/jobs"] * repeat,
            "/jobs?where": [f"/jobs?where={where}"] * repeat,
            "/job/KEY": [f"/job/{k}" for k in keys[:repeat]],
            f"/job/KEY after {warm_s:g} s": [f"/job/{k}" for k in keys[repeat : 2 * repeat]],
        }
        out = {}
        for name, paths in pages.items():
            if name.startswith("/job/KEY after"):
                time.sleep(warm_s)
            times = sorted(_get(base + p) for p in paths)
            out[name] = times[min(len(times) - 1, int(0.95 * len(times)))]
        return out
    finally:
        server.terminate()
        server.wait()


def measure(wh: Path, runs: list[dict], repeat: int, skip: set[str], warm_s: float) -> dict:
    """Every figure of one size (but the commands in ``skip``); ingest and compaction
    figures are those of the ingests of this run."""
    from iosight.warehouse import Warehouse

    w = Warehouse(wh)
    jobs = int(w.sql("select count(*) n from jobs")["n"][0])
    cut = float(w.sql("select quantile_disc(start_time, 0.99) t from jobs")["t"][0])  # >= it
    keys = list(w.sql("select job_key from jobs using sample 100 rows (reservoir, 1)")["job_key"])
    random.Random(0).shuffle(keys)
    counts = file_counts(wh)
    grouped = (
        "select exe, count(*) jobs, sum(run_time) run_time, sum(total_POSIX_BYTES_READ) bytes "
        "from jobs left join job_totals using (job_key) group by exe order by jobs desc limit 10"
    )
    figures = {
        "jobs": jobs,
        "ingest_s": (ingest_s := sum(r["ingest_s"] for r in runs)),
        "logs_per_s": sum(r["ingested"] for r in runs) / max(ingest_s, 1e-9),
        "compactions": sum(1 for r in runs if r["compaction"]),
        "compact_s": sum(r["compact_s"] for r in runs),
        "ingest_compact_cpu_s": sum(r["cpu_s"] for r in runs),
        "compact_peak_mb": max((r["compact_peak_mb"] or 0 for r in runs), default=0),
        "disk_gb": sum(f.stat().st_size for f in wh.rglob("*.parquet")) / 2**30,
        "files": sum(counts.values()),
        "files_per_table_mean": sum(counts.values()) / len(counts),
        "files_per_table_max": max(counts.values()),
        "serve_p95_ms": serve_p95(wh, keys, repeat, warm_s),
        "help_s": timed(iosight("--help"))[0],
    }
    commands = {
        "jobs_where": iosight(
            "jobs", "-w", str(wh), "--where", f"start_time >= {cut}", "-f", "csv"
        ),
        "sql_grouped": iosight("sql", "-w", str(wh), grouped),
        "timeline": iosight("timeline", "build", "-w", str(wh)),
        "insights": iosight("insights", "-w", str(wh), "-f", "csv"),
    }
    for name, cmd in commands.items():
        if name not in skip:
            wall, peak, _, cpu = timed(cmd)
            figures |= {f"{name}_s": wall, f"{name}_cpu_s": cpu, f"{name}_peak_mb": peak}
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000], help="logs per size")
    ap.add_argument(
        "--corpus", choices=["all", "nodxt"], default="all",
        help="every log (DXT-heavy) or only those without DXT (printed with every figure)",
    )  # fmt: skip
    ap.add_argument("--chunk", type=int, default=5_000, help="logs per ingest")
    ap.add_argument("--repeat", type=int, default=40, help="requests per served page")
    ap.add_argument(
        "--warm-s", type=float, default=60.0,
        help="seconds after the first job pages before job pages are timed again",
    )  # fmt: skip
    ap.add_argument(
        "--keep", type=Path,
        help="build the warehouse here and keep it; one an earlier run kept grows on from its logs",
    )  # fmt: skip
    ap.add_argument(
        "--skip", nargs="*", default=[], choices=["timeline", "insights"],
        help="commands not timed (each takes minutes per 10,000 logs of this corpus)",
    )  # fmt: skip
    ap.add_argument("--min-free-gb", type=float, default=5.0, help="stop growing below this")
    args = ap.parse_args()
    if not SHARED.exists():
        sys.exit(f"needs {SHARED} (the shared Darshan log collection)")
    tmp = Path(tempfile.mkdtemp(prefix="iosight-scale-"))
    wh = args.keep or tmp / "wh"
    print(
        f"# corpus {args.corpus} ({CORPUS_TEXT[args.corpus]}); sizes {args.sizes}, ingests of "
        f"{args.chunk:,} logs, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    try:
        check_corpus(wh, args.corpus)
        done, runs = logs_in(wh), []
        for size in sorted(s for s in args.sizes if s >= done):  # a size reached: measured
            load = os.getloadavg()
            dxt = CORPORA[args.corpus]
            runs += grow(wh, tmp / "logs", (done, size), args.chunk, args.min_free_gb, dxt)
            done = logs_in(wh)
            figures = measure(wh, runs, args.repeat, set(args.skip), args.warm_s)
            figures["load_before"], figures["load_after"] = load, os.getloadavg()
            label = {"corpus": args.corpus, "logs": done}
            print(json.dumps(label | figures, indent=1), flush=True)
            if done < size:
                break  # the disk ran out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
