"""Benchmark: a job of millions of DXT segments, read natively and by PyDarshan, and served.

Logs come from ``iosight.trace.dxt_heavy_log``: one process traced for real with DXT on
(small pwrite/pread calls), replicated as 1,024 ranks and merged by the tracer (the
repetition is synthetic). Every measurement runs in a fresh process that reports its wall
time and peak RSS (``VmHWM``; ru_maxrss would carry the parent's over exec).

1. PyDarshan: ``DarshanReport(log, read_all=True)`` on logs doubling in size from 125,000
   segments, each under a memory limit (the process is killed when its RSS passes it, as a
   batch system's limit would), until one does not survive; the largest that did is the
   comparison log.
2. Native: ``read_source`` (the whole DXT table) and ``iosight job LOG``'s path (the log
   ingested into a one-job warehouse, DXT pieces one at a time) on that log and on the
   largest (10 million segments by default): segments/s and peak RSS, and the ratio of
   rates to PyDarshan's on the comparison log.
3. The Job page and its DXT view (``/api/job/<key>/dxt``: the whole job, a window of 100
   ranks, a fifth of the run time, a window of 2 ranks and 0.1 ms) on a warehouse holding
   the largest job: median, p95 and worst of repeated requests and the points each
   response sends, beside the same warehouse without its ``dxt_bins`` (each view a
   grouped scan of the job's segments), requests to the two interleaved.

    python benchmarks/big_dxt.py                    # 10 M segments, PyDarshan under 2 GiB
    python benchmarks/big_dxt.py --quick            # 1 M segments, PyDarshan under 0.5 GiB
    python benchmarks/big_dxt.py --served-only      # part 3 alone
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

RANKS = 1024

_PEAK = """
from pathlib import Path
def peak_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""
_PYDARSHAN = (
    _PEAK
    + """
import json, sys, time
import darshan
t = time.perf_counter()
report = darshan.DarshanReport(sys.argv[1], read_all=True)
n = sum(int(r["write_count"] + r["read_count"]) for r in report.records["DXT_POSIX"])
print(json.dumps({"segments": n, "s": time.perf_counter() - t, "peak_mib": peak_mib()}))
"""
)
_WHOLE = (
    _PEAK
    + """
import json, sys, time
from iosight.darshan import read_source
t = time.perf_counter()
_, tables = read_source(sys.argv[1])
n = tables["dxt_posix"].num_rows
print(json.dumps({"segments": n, "s": time.perf_counter() - t, "peak_mib": peak_mib()}))
"""
)
_INGEST = (
    _PEAK
    + """
import json, sys, time
from iosight.warehouse import log_warehouse
t = time.perf_counter()
with log_warehouse(sys.argv[1]) as wh:
    n = int(wh.sql("select count(*) n from dxt_posix")["n"][0])
    s = time.perf_counter() - t
print(json.dumps({"segments": n, "s": s, "peak_mib": peak_mib()}))
"""
)


def run_limited(script: str, log: Path, limit_mib: float | None = None) -> dict | None:
    """Run ``script`` on ``log`` in a fresh process; None when it died or passed the limit."""
    proc = subprocess.Popen([sys.executable, "-c", script, str(log)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    status = Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        if limit_mib is not None and _rss_mib(status) > limit_mib:
            proc.kill()
            proc.wait()
            return None
        time.sleep(0.05)
    out = proc.stdout.read() if proc.stdout else ""
    return json.loads(out) if proc.returncode == 0 and out else None


def _rss_mib(status: Path) -> float:
    try:
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def make_log(workdir: Path, segments: int) -> Path:
    from iosight.trace import dxt_heavy_log

    path = workdir / f"dxt-{segments}.darshan"
    if not path.exists():
        t = time.perf_counter()
        dxt_heavy_log(path, segments, RANKS)
        mib = path.stat().st_size / 2**20
        print(f"made {path.name}: {mib:,.0f} MiB in {time.perf_counter() - t:.1f} s")
    return path


def largest_pydarshan_survives(workdir: Path, limit_mib: float, most: int) -> tuple[int, dict]:
    """Sizes doubling from 125,000 segments: the largest PyDarshan reads under the limit."""
    best: tuple[int, dict] | None = None
    size = 125_000
    while size <= most:
        got = run_limited(_PYDARSHAN, make_log(workdir, size), limit_mib)
        load = os.getloadavg()[0]
        if got is None:
            print(f"PyDarshan read_all, {size:>10,} segments: killed above {limit_mib:,.0f} MiB "
                  f"(load {load:.1f})")  # fmt: skip
            break
        print(f"PyDarshan read_all, {got['segments']:>10,} segments: {got['s']:6.2f} s, "
              f"peak {got['peak_mib']:,.0f} MiB (load {load:.1f})")  # fmt: skip
        best = (size, got)
        size *= 2
    if best is None:
        raise SystemExit("PyDarshan read no log under the limit")
    return best


def native(log: Path) -> dict:
    """Both native paths on ``log``, printed."""
    out = {}
    for name, script in (
        ("read_source (whole table)", _WHOLE),
        ("iosight job LOG (pieces)", _INGEST),
    ):
        got = run_limited(script, log)
        if got is None:
            raise SystemExit(f"{name} failed on {log}")
        rate = got["segments"] / got["s"]
        print(f"native {name:27s} {got['segments']:>10,} segments: {got['s']:6.2f} s, "
              f"{rate:,.0f} segments/s, peak {got['peak_mib']:,.0f} MiB "
              f"(load {os.getloadavg()[0]:.1f})")  # fmt: skip
        out[name] = got
    return out


def served(log: Path, workdir: Path, repeat: int) -> None:
    """Times of the Job page and its DXT view on a warehouse holding the job of ``log``,
    beside the same warehouse without its ``dxt_bins`` (the baseline: every view a
    grouped scan of the segments), requests to the two interleaved."""
    from iosight.serve import BackgroundServer, create_app
    from iosight.warehouse import Warehouse, ingest

    wh = Warehouse(Path(tempfile.mkdtemp(dir=workdir)) / "wh", create=True)
    t = time.perf_counter()
    ingest([log], wh, workers=1)
    print(f"ingest of {log.name}: {time.perf_counter() - t:.1f} s")
    raw = wh.path.parent / "wh-without-bins"  # hard links: no copy of the segments
    shutil.copytree(wh.path, raw, copy_function=os.link, ignore=shutil.ignore_patterns("dxt_bins"))
    key = wh.sql("select job_key from jobs")["job_key"][0]
    t0 = float(wh.sql("select median(start) t from dxt_posix where rank = 100")["t"][0])
    run = float(wh.sql("select run_time from jobs")["run_time"][0])
    asks = {
        "Job page": f"/job/{key}",
        "DXT view, whole job": f"/api/job/{key}/dxt",
        "DXT view, ranks 0-99": f"/api/job/{key}/dxt?rank_min=0&rank_max=99",
        "DXT view, 1/5 of the run": f"/api/job/{key}/dxt?start={0.4 * run!r}&end={0.6 * run!r}",
        "DXT view, 2 ranks, 0.1 ms": f"/api/job/{key}/dxt?rank_min=100&rank_max=101"
        f"&start={t0!r}&end={t0 + 1e-4!r}",
    }
    with BackgroundServer(create_app(wh.path)) as srv, BackgroundServer(create_app(raw)) as base:
        for name, path in asks.items():
            times: dict[str, list[float]] = {"bins": [], "baseline": []}
            body = b""
            for _ in range(repeat):
                for side, url in (("bins", srv.url), ("baseline", base.url)):
                    t = time.perf_counter()
                    with urllib.request.urlopen(url + path, timeout=120) as r:
                        got = r.read()
                    times[side].append(time.perf_counter() - t)
                    body = got if side == "bins" else body
            ratio = statistics.median(times["baseline"]) / statistics.median(times["bins"])
            print(f"{name:27s} {_ms(times['bins'])}, {len(body) / 1024:7.1f} KiB{_points(body)}; "
                  f"without bins {_ms(times['baseline'])}: {ratio:.1f}x "
                  f"(load {os.getloadavg()[0]:.1f})")  # fmt: skip


def _ms(times: list[float]) -> str:
    """Median, p95 and worst of ``times`` (seconds), in ms."""
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (f"median {statistics.median(ordered) * 1000:5.0f} ms, p95 {p95 * 1000:5.0f} ms, "
            f"worst {ordered[-1] * 1000:5.0f} ms")  # fmt: skip


def _points(body: bytes) -> str:
    """The points a DXT view response sends (segments drawn, or cells)."""
    if not body.startswith(b"{"):
        return ""
    fig = json.loads(body)
    n = sum(len(t["x"]) // (3 if t["mode"] == "lines+markers" else 1) for t in fig["data"])
    return f", {n:,} points"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--segments", type=int, default=10_000_000, help="the largest log")
    p.add_argument("--pydarshan-limit-gib", type=float, default=2.0, help="PyDarshan's limit")
    p.add_argument("--repeat", type=int, default=10, help="requests per page")
    p.add_argument("--workdir", default=None, help="where the logs and warehouse go")
    p.add_argument("--quick", action="store_true", help="1 M segments, PyDarshan under 0.5 GiB")
    p.add_argument("--served-only", action="store_true", help="only part 3 (the Job page)")
    a = p.parse_args(argv)
    if a.quick:
        a.segments, a.pydarshan_limit_gib, a.repeat = 1_000_000, 0.5, 3
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="iosight-big-dxt-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; logs in {workdir}")
    if a.served_only:
        return served(make_log(workdir, a.segments), workdir, a.repeat)
    size, theirs = largest_pydarshan_survives(workdir, a.pydarshan_limit_gib * 1024, a.segments)
    ours = native(make_log(workdir, size))["read_source (whole table)"]
    ratio = (ours["segments"] / ours["s"]) / (theirs["segments"] / theirs["s"])
    print(f"on {theirs['segments']:,} segments (the largest PyDarshan read under "
          f"{a.pydarshan_limit_gib:g} GiB): native read_source is {ratio:.1f}x PyDarshan's "
          f"read_all rate, in {ours['peak_mib'] / theirs['peak_mib']:.2f}x its peak")  # fmt: skip
    if a.segments > size:
        native(make_log(workdir, a.segments))
    served(make_log(workdir, a.segments), workdir, a.repeat)


if __name__ == "__main__":
    main()
