"""Benchmark: page latency of ``iosight serve`` (p50/p95 per page), beside a pandas baseline.

Starts ``iosight serve`` in its own process on the warehouse, requests each page
``--repeat`` times over HTTP (keys, filters and zoom windows drawn with a fixed seed),
and prints p50/p95 milliseconds per page and the load average seen before and after.
The baseline is what one writes first without server-side paging: read the whole
``jobs`` table into pandas (``Warehouse.jobs()``) for each request, then filter, sort
and slice one page; it is timed on the same questions in this process and its ratio
to the served page is printed.

    python benchmarks/serve.py -w /tmp/summit-wh-serve          # the Summit 2021 warehouse
    python benchmarks/serve.py --synthetic-jobs 1000000 -w /tmp/million-wh   # SYNTHETIC jobs

The Summit warehouse: ``iosight ingest ../shared/datasets/summit_darshan_total_2021/
darshan_total -w /tmp/summit-wh-serve && iosight timeline build -w /tmp/summit-wh-serve``.
``--synthetic-jobs N`` first writes N SYNTHETIC jobs (jobs and job_totals rows, labelled
``synthetic``) into an empty warehouse, to measure paging at that size.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

TARGET_MS = 300.0


def make_synthetic_jobs(path: Path, n: int, seed: int = 0) -> None:
    """N SYNTHETIC jobs over one year: jobs + job_totals rows (labelled synthetic)."""
    import pyarrow as pa

    from iosight.darshan import jobs_schema
    from iosight.warehouse import Warehouse

    wh = Warehouse(path, create=True)
    if wh.has_table("jobs"):
        raise SystemExit(f"{path} already has jobs; give an empty directory")
    rng = np.random.default_rng(seed)
    start = 1.6e9 + np.sort(rng.uniform(0, 365 * 86400, n))
    run = rng.lognormal(np.log(1800), 1.2, n)
    keys = np.char.add("synthetic-", np.char.zfill(np.arange(n).astype(str), 9))  # fixed width
    cols = {
        "source_path": np.full(n, "synthetic://benchmarks/serve.py"),
        "source_format": np.full(n, "synthetic"),
        "log_version": np.full(n, "3.41"),
        "lib_version": np.full(n, "synthetic"),
        "jobid": np.arange(n, dtype=np.int64),
        "uid": rng.integers(1000, 3000, n),
        "exe": np.char.add("synthetic-app-", rng.integers(0, 400, n).astype(str)),
        "nprocs": 2 ** rng.integers(0, 14, n),
        "start_time": start,
        "end_time": start + run,
        "run_time": run,
        "modules": np.full(n, "POSIX,STDIO"),
        "partial_modules": np.full(n, ""),
        "partial": np.zeros(n, bool),
        "synthetic": np.ones(n, bool),
        "metadata": np.full(n, '{"generator": "benchmarks/serve.py"}'),
        "known_at": start + run,
    }
    jobs = pa.table({"job_key": keys, **cols}, schema=_with_key(jobs_schema()))
    size = rng.lognormal(np.log(1e9), 2.5, (n, 4)).astype(np.int64)
    names = ("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN")
    totals = pa.table({"job_key": keys, **{f"total_{c}": size[:, i] for i, c in enumerate(names)}})
    wh.commit({"jobs": [jobs], "job_totals": [totals]})


def _with_key(schema):
    import pyarrow as pa

    return pa.schema([("job_key", pa.string()), *schema])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        r.read()
        if r.status != 200:
            raise SystemExit(f"{url}: HTTP {r.status}")
    return (time.perf_counter() - t) * 1000


def _questions(wh, rng, repeat: int) -> dict[str, list[str]]:
    """Per page kind, ``repeat`` request paths drawn with the seed."""
    jobs = wh.sql("select job_key, exe, start_time from jobs using sample 2000 rows (reservoir, 0)")
    q = urllib.parse.quote
    n = int(wh.sql("select count(*) n from jobs")["n"].iloc[0])
    pick = lambda a: a[rng.integers(0, len(a))]  # noqa: E731
    keys = [pick(jobs["job_key"].to_numpy()) for _ in range(repeat)]
    out = {
        "jobs (first page)": ["/jobs"] * repeat,
        "jobs sorted by bytes": ["/jobs?sort=bytes&dir=desc"] * repeat,
        "jobs deep page": [f"/jobs?page={int(rng.integers(1, n // 50))}" for _ in range(repeat)],
        "jobs filtered": [
            f"/jobs?exe={q(pick(jobs['exe'].to_numpy())[:6])}&nprocs_min=2"
            f"&start_from={pick(jobs['start_time'].to_numpy()):.0f}&sort=run_time"
            for _ in range(repeat)
        ],
        "jobs SQL where": [
            "/jobs?where=" + q(f"nprocs >= {2 ** int(rng.integers(0, 8))} and run_time > 600")
            for _ in range(repeat)
        ],
        "job": [f"/job/{k}" for k in keys],
        "job insights (part)": [f"/job/{k}/insights" for k in keys],
        "errors": ["/errors"] * repeat,
    }
    if wh.has_table("timeline"):
        lo, hi = wh.sql("select min(bin_start) a, max(bin_start) b from timeline").iloc[0]
        out["facility"] = ["/facility"] * repeat
        spans = (3600.0, 86400.0, 7 * 86400.0, 60 * 86400.0)
        zooms = []
        for _ in range(repeat):
            span = spans[int(rng.integers(0, len(spans)))]
            t0 = float(rng.uniform(lo, max(lo, hi - span)))
            zooms.append(f"/api/timeline?start={t0:.0f}&end={t0 + span:.0f}")
        out["facility zoom (api)"] = zooms
    return out


def _pandas_page(wh, path: str) -> None:
    """The baseline: the whole jobs table into pandas per request, then one page."""
    params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query))
    df = wh.jobs()
    if "exe" in params:
        df = df[df["exe"].str.contains(params["exe"], case=False, regex=False)]
    if "nprocs_min" in params:
        df = df[df["nprocs"] >= int(params["nprocs_min"])]
    if "start_from" in params:
        df = df[df["start_time"] >= float(params["start_from"])]
    col = params.get("sort", "start_time")
    if col == "bytes":
        totals = wh.table("job_totals").to_pandas()
        bytes_ = totals.filter(like="BYTES").sum(axis=1)
        df = df.merge(totals[["job_key"]].assign(bytes=bytes_), on="job_key", how="left")
    page = int(params.get("page", 1))
    df.sort_values(col, ascending=params.get("dir") == "asc").iloc[(page - 1) * 50 : page * 50]


def _job_filter(path: str):
    from iosight.serve import JobFilter

    p = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query))
    return JobFilter(
        exe=p.get("exe"),
        nprocs_min=int(p["nprocs_min"]) if "nprocs_min" in p else None,
        start_from=float(p["start_from"]) if "start_from" in p else None,
        sort=p.get("sort", "start_time"),
        descending=p.get("dir") != "asc",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--warehouse", type=Path, default=Path("/tmp/summit-wh-serve"))
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--synthetic-jobs", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from iosight.serve import ServedWarehouse, jobs_page
    from iosight.warehouse import Warehouse

    if args.synthetic_jobs:
        t = time.perf_counter()
        make_synthetic_jobs(args.warehouse, args.synthetic_jobs, args.seed)
        print(f"wrote {args.synthetic_jobs} SYNTHETIC jobs in {time.perf_counter() - t:.1f} s")
    wh = Warehouse(args.warehouse, create=False)
    n = int(wh.sql("select count(*) n from jobs")["n"].iloc[0])
    port = _free_port()
    cmd = [sys.executable, "-c", "from iosight.cli import main; main()", "serve", "-w",
           str(args.warehouse), "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                _get(base + "/errors")
                break
            except OSError:
                time.sleep(0.1)
        rng = np.random.default_rng(args.seed)
        questions = _questions(wh, rng, args.repeat)
        print(f"warehouse {args.warehouse}: {n} jobs; {args.repeat} requests per page; "
              f"load average before: {os.getloadavg()}; {os.cpu_count()} cores")  # fmt: skip
        for paths in questions.values():  # warm-up: first plotly/thresholds/parquet metadata
            _get(base + paths[0])
        print(f"{'page':<24}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}  target < {TARGET_MS:.0f} ms")
        worst = 0.0
        for name, paths in questions.items():
            ms = np.array([_get(base + p) for p in paths])
            p50, p95 = np.percentile(ms, [50, 95])
            if "(part)" not in name:  # fragments load after their page
                worst = max(worst, p95)
            print(f"{name:<24}{p50:>9.1f}{p95:>9.1f}{ms.max():>9.1f}")
        print(f"worst page p95: {worst:.1f} ms ({'within' if worst < TARGET_MS else 'OVER'} the "
              f"{TARGET_MS:.0f} ms target); load average after: {os.getloadavg()}")  # fmt: skip
        base_ms, ours_ms = [], []
        served = ServedWarehouse(args.warehouse)
        for path in questions["jobs filtered"][:5] + questions["jobs sorted by bytes"][:3]:
            t = time.perf_counter()
            _pandas_page(wh, path)
            base_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            jobs_page(served, _job_filter(path))
            ours_ms.append((time.perf_counter() - t) * 1000)
        b, o = float(np.median(base_ms)), float(np.median(ours_ms))
        print(f"same questions in this process: baseline (whole jobs table into pandas, filter, "
              f"sort, slice) median {b:.1f} ms; iosight.serve.jobs_page (DuckDB) {o:.1f} ms: "
              f"{b / o:.1f}x faster")  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
