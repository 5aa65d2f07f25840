"""Benchmark: iosight beside a running machine (issue #28).

Sections (``--only NAME``; more are added beside ``stream``):

- ``stream``: messages per second the LDMS stream reader takes. N SYNTHETIC messages
  (10 k, 100 k, 1 M by default) in darshan-ldms.c's format (``synthetic_ldms_stream``:
  50 jobs of 16 ranks, POSIX, MPIIO and STDIO, over an hour) are written to a JSON-lines
  file as an LDMS stream store writes them; then, each in a process of its own,
  ``LdmsFeed.poll`` drains the file into a fresh warehouse (read, parse, aggregate per
  job, module and 5-minute bin, commit with the resume offset) against what a competent
  user writes: ``json.loads`` per line and a dict aggregation by the same key (no
  warehouse write: the baseline does less). Imports and the empty warehouse are made
  before the clock starts (a running service has them). Wall and CPU time, messages/s,
  the ratios, peak RSS (``ru_maxrss`` of the process) and the load average before each
  run. Both must find the same bytes per job.

    python benchmarks/live.py                 # 10 k, 100 k and 1 M messages
    python benchmarks/live.py --sizes 10000   # one size
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T0 = 1.75e9  # SYNTHETIC start of the hour the jobs run in (epoch s)
JOBS, RANKS = 50, 16


def write_stream(path: Path, n: int) -> None:
    """SYNTHETIC: ``n`` messages of JOBS jobs, as the connector formats them."""
    from iosight.live import LdmsJob, synthetic_ldms_stream

    per = -(-n // JOBS)
    with open(path, "w") as f:
        for j in range(JOBS):
            job = LdmsJob(1_000_000 + j, 5000 + j % 7, f"/apps/app{j % 5}", T0 + 37.0 * j)
            k = min(per, n - j * per)
            if k <= 0:
                break
            stream = synthetic_ldms_stream(job, k, ranks=RANKS, duration=3600.0, seed=j,
                                           modules=("POSIX", "MPIIO", "STDIO"))  # fmt: skip
            f.writelines(m + "\n" for m in stream)


def setup_iosight(path: str):
    """A fresh warehouse and a feed on ``path``, its imports done (off the clock: a
    running service has them)."""
    import pyarrow.compute  # noqa: F401  (what a poll imports on first use)
    import pyarrow.json  # noqa: F401

    from iosight.live import LdmsFeed, LdmsOptions
    from iosight.warehouse import Warehouse

    wh = Warehouse(Path(tempfile.mkdtemp()) / "wh", create=True)
    wh.sql("select 1")
    return wh, LdmsFeed(LdmsOptions(path))


def run_iosight(path: str, state) -> dict:
    """Drain ``path`` with LdmsFeed into the fresh warehouse."""
    wh, feed = state
    messages, polls = 0, 0
    while True:
        r = feed.poll(wh, now=T0 + 7200.0)
        if not r.messages:
            break
        messages, polls = messages + r.messages, polls + 1
    return {"messages": messages, "polls": polls}


def iosight_write_bytes(state) -> dict[int, int]:
    got = state[0].sql("select jobid, sum(write_bytes) w from live_io group by jobid")
    return dict(zip(got["jobid"].astype(int), got["w"].astype(int), strict=True))


def run_baseline(path: str, state) -> dict:
    """``json.loads`` per line and a dict keyed by (job, module, 5-minute bin)."""
    sums: dict[tuple[int, str, float], list[int]] = {}
    messages = 0
    with open(path, "rb") as f:
        for line in f:
            m = json.loads(line)
            seg = m["seg"][0]
            key = (m["job_id"], m["module"], seg["timestamp"] // 300 * 300)
            acc = sums.get(key)
            if acc is None:
                acc = sums[key] = [0, 0, 0, 0]
            op = m["op"]
            if op == "read":
                acc[0] += seg["len"]
                acc[2] += 1
            elif op == "write":
                acc[1] += seg["len"]
                acc[3] += 1
            messages += 1
    return {"messages": messages, "polls": 1, "sums": sums}


def baseline_write_bytes(out: dict) -> dict[int, int]:
    per_job: dict[int, int] = {}
    for (job, _, _), acc in out.pop("sums").items():
        per_job[job] = per_job.get(job, 0) + acc[1]
    return per_job


RUNNERS = {"iosight": run_iosight, "baseline": run_baseline}


def worker(which: str, path: str) -> None:
    """Run one reader in this process; print its result and costs as JSON."""
    state = setup_iosight(path) if which == "iosight" else None
    t0, c0 = time.perf_counter(), time.process_time()
    out = RUNNERS[which](path, state)
    out["wall"], out["cpu"] = time.perf_counter() - t0, time.process_time() - c0
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_job = iosight_write_bytes(state) if which == "iosight" else baseline_write_bytes(out)
    out["write_bytes"] = {str(k): v for k, v in per_job.items()}
    print(json.dumps(out))


def measure(which: str, path: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--worker", which, str(path)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(proc.stdout.splitlines()[-1])


def stream_section(args: argparse.Namespace) -> None:
    print("== stream: messages/s the LDMS stream reader takes (SYNTHETIC messages)")
    print(f"{'messages':>10} {'MB':>6} {'reader':>9} {'wall s':>7} {'cpu s':>7} "
          f"{'msg/s wall':>11} {'msg/s cpu':>10} {'RSS MB':>7} {'load':>5}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"stream-{n}.jsonl"
            write_stream(path, n)
            size = path.stat().st_size / 1e6
            got = {}
            for which in ("iosight", "baseline"):
                load = os.getloadavg()[0]
                got[which] = r = measure(which, path)
                assert r["messages"] == n, (which, r["messages"], n)
                print(f"{n:>10,} {size:>6.0f} {which:>9} {r['wall']:>7.2f} {r['cpu']:>7.2f} "
                      f"{n / r['wall']:>11,.0f} {n / r['cpu']:>10,.0f} {r['rss_mb']:>7.0f} "
                      f"{load:>5.1f}")  # fmt: skip
            assert got["iosight"]["write_bytes"] == got["baseline"]["write_bytes"]
            wall = got["baseline"]["wall"] / got["iosight"]["wall"]
            cpu = got["baseline"]["cpu"] / got["iosight"]["cpu"]
            print(f"{'':>10} iosight/baseline: {wall:.2f}x the messages/s (wall), {cpu:.2f}x "
                  f"(cpu); {got['iosight']['polls']} polls; same bytes per job")  # fmt: skip
            path.unlink()
    print(f"load average after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(a shared machine: compare within a run)")  # fmt: skip


SECTIONS = {"stream": stream_section}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name in args.only or list(SECTIONS):
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
