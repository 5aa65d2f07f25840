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

- ``lag``: the time from a batch of SYNTHETIC messages appended to the LDMS stream file
  to ``/api/now`` answering with it, through ``LiveService`` (the ``ldms`` feed, rounds
  every ``--interval`` s, the server on its own thread). A batch every 1.7 s (not a
  multiple of the interval: arrivals fall anywhere in a round); ``/api/now`` asked
  every 10 ms until its bytes change. p50 and p95 beside the polling floor a competent
  user's poller has at the same interval (a message waits for the next poll: uniform in
  [0, interval], p50 interval/2, p95 0.95 interval).
- ``forecast``: the same, to ``/api/forecast`` reflecting the batch: a ``LiveService``
  over two days of SYNTHETIC facility jobs ending at midnight yesterday (UTC) and their
  ``live`` write forecaster (``tests_support.recent_facility``, trained off the clock),
  no Prometheus, so the forecaster's system rate is the live timeline (the logs and
  the stream). Batch i is the I/O of a new job in the i-th 5-minute bin after the logs
  (a replay: each batch completes one more bin by the stream's clock); its lag ends
  when ``/api/forecast``'s write forecast is as of that bin's end (the round commits
  it, then the server's thread computes the forecast). Beside the same floor.
- ``rounds``: CPU per round of ``iosight live`` on a copy of a large warehouse (``-w``,
  e.g. /work/summit-clean: 53,546 Summit jobs) with its saved forecasters (a ``logs``
  one: ``iosight bursts train -w COPY --information logs --direction write --models
  logreg``): each round appends a batch of SYNTHETIC LDMS messages, runs
  ``LiveService.step`` (the feed commits them to ``live_io``) and waits until the served
  forecasts are those of the warehouse as it is (``Decisions.wait``). Beside it, after
  each round, the old keying's cost: every forecast computed again from scratch
  (a fresh ``Decisions`` on a fresh ``ServedWarehouse``: what the server did after any
  commit before each forecast was keyed on the tables it reads). The answers of both
  must be equal.
- ``memory``: RSS of a ``LiveService`` (ldms feed and server) over an hour of SYNTHETIC
  messages (``--rate`` per second, 50 jobs of 16 ranks) replayed one simulated minute
  per round, as fast as it goes; RSS at each quarter beside the first quarter's.

    python benchmarks/live.py                 # 10 k, 100 k and 1 M messages
    python benchmarks/live.py --sizes 10000   # one size
    python benchmarks/live.py --only lag --only memory
    PYTHONPATH=src:tests python benchmarks/live.py --only forecast
    python benchmarks/live.py --only rounds -w /tmp/summit-copy --rounds 10
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


def batch(start: float, n: int, seed: int) -> list[str]:
    """SYNTHETIC: ``n`` messages of one new job whose I/O falls around ``start``."""
    from iosight.live import LdmsJob, synthetic_ldms_stream

    job = LdmsJob(2_000_000 + seed, 5000, "/apps/app0", start)
    return list(synthetic_ldms_stream(job, n, ranks=2, duration=2.0, seed=seed))


def live_service(tmp: Path, source: Path, interval: float):
    """A LiveService on ``source`` (the ldms feed) serving on a free port."""
    from iosight.live import LiveConfig, LiveService

    config = LiveConfig.from_mapping({"warehouse": str(tmp / "wh"), "interval": interval,
                                      "feeds": {"ldms": {"source": str(source)}},
                                      "serve": {"port": 0}})  # fmt: skip
    return LiveService(config)


def now_bytes(url: str) -> float:
    """The bytes/s summed over ``/api/now``'s traces (changes when a batch lands)."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/api/now") as r:
        doc = json.load(r)
    return sum(sum(y or 0.0 for y in t["y"]) for t in doc["figure"]["data"])


def lag_of(url: str, source: Path, seed: int, before: float) -> tuple[float, float]:
    """Append one batch; seconds until ``/api/now`` differs from ``before``, its new value."""
    with open(source, "a") as f:
        f.writelines(m + "\n" for m in batch(time.time() - 1.0, 40, seed))
    t0 = time.perf_counter()
    while True:
        got = now_bytes(url)
        if got != before:
            return time.perf_counter() - t0, got
        time.sleep(0.01)


def lag_section(args: argparse.Namespace) -> None:
    import threading


    period, interval = 1.7, args.interval
    print(f"== lag: LDMS message appended -> /api/now reflects it (SYNTHETIC, "
          f"{args.batches} batches of 40 messages every {period} s, rounds every {interval} s)")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "darshan.jsonl"
        source.write_text("")
        service = live_service(Path(tmp), source, interval)
        url = service.start_server()
        service.start_server = lambda: url  # run() keeps the server started here
        stop = threading.Event()
        thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
        thread.start()
        seen = [now_bytes(url)]

        def measure(i: int) -> float:
            lag, seen[0] = lag_of(url, source, i, seen[0])
            return lag

        lags, loads, cpu = timed_batches(args.batches, period, measure, stop, thread)
    report_lags(lags, loads, interval, cpu)


def timed_batches(batches: int, period: float, measure, stop, thread) -> tuple:
    """``measure(i)`` of each batch ``i``, one every ``period`` s, while ``thread`` (the
    service) runs; then ``stop`` it: the lags, load averages and this process's CPU s."""
    loads, lags, cpu = [], [], time.process_time()
    try:
        for i in range(batches):
            due = time.monotonic() + period
            loads.append(os.getloadavg()[0])
            lags.append(measure(i))
            time.sleep(max(due - time.monotonic(), 0.0))
    finally:
        cpu = time.process_time() - cpu
        stop.set()
        thread.join()
    return lags, loads, cpu


def forecast_as_of(url: str) -> float | None:
    """``/api/forecast``'s write forecast's as-of time (None: not computed yet, a 503)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/api/forecast") as r:
            write = json.load(r)["directions"]["write"]
    except urllib.error.HTTPError as err:
        if err.code == 503:
            return None
        raise
    if "error" in write:
        raise SystemExit(f"/api/forecast: {write['error']}")
    return write["as_of"]


def forecast_lag_of(url: str, source: Path, start: float, seed: int) -> float:
    """Append one batch in the bin starting at ``start``; seconds until ``/api/forecast``
    is as of that bin's end (asked every 10 ms)."""
    with open(source, "a") as f:
        f.writelines(m + "\n" for m in batch(start + 60.0, 40, seed))
    t0 = time.perf_counter()
    while (as_of := forecast_as_of(url)) != start + 300.0:
        if time.perf_counter() - t0 > 60:
            raise SystemExit(f"/api/forecast is as of {as_of}, not {start + 300.0}, after 60 s")
        time.sleep(0.01)
    return time.perf_counter() - t0


def forecast_section(args: argparse.Namespace) -> None:
    """Lag from an LDMS message to the ``/api/forecast`` that reflects it."""
    import threading

    from tests_support import recent_facility

    period, interval = 1.7, args.interval
    print(f"== forecast lag: LDMS message appended -> /api/forecast reflects it (SYNTHETIC, "
          f"{args.batches} batches of 40 messages every {period} s, rounds every {interval} s)")
    with tempfile.TemporaryDirectory() as tmp:
        recent_facility(Path(tmp), days_ago=1)  # its logs end at midnight yesterday
        source = Path(tmp) / "darshan.jsonl"
        source.write_text("")
        service = live_service(Path(tmp), source, interval)
        end = float(service.warehouse.sql("select max(bin_start) t from timeline")["t"].iloc[0])
        end += 300.0
        url = service.start_server()
        service.start_server = lambda: url  # run() keeps the server started here
        stop = threading.Event()
        thread = threading.Thread(target=service.run, args=(stop,), daemon=True)
        thread.start()
        t0 = time.perf_counter()
        while forecast_as_of(url) != end:  # the logs' forecast, before any message
            time.sleep(0.05)
        first = time.perf_counter() - t0
        print(f"first forecast (the logs' timeline, 2 days) served after {first:.2f} s")
        lags, loads, cpu = timed_batches(
            args.batches, period, lambda i: forecast_lag_of(url, source, end + 300.0 * i, i),
            stop, thread,
        )  # fmt: skip
    report_lags(lags, loads, interval, cpu)


def report_lags(lags: list[float], loads: list[float], interval: float, cpu: float) -> None:
    """p50, p95 and max of ``lags`` beside the floor of a poller every ``interval`` s, and
    the CPU time of the process (service, server and the benchmark's polling) per batch."""
    import numpy as np

    p50, p95 = np.percentile(lags, [50, 95])
    f50, f95 = interval / 2, 0.95 * interval
    print(f"{'':>10} {'p50 s':>7} {'p95 s':>7} {'max s':>7}")
    print(f"{'iosight':>10} {p50:>7.2f} {p95:>7.2f} {max(lags):>7.2f}")
    print(f"{'floor':>10} {f50:>7.2f} {f95:>7.2f} {interval:>7.2f}  (a poller every {interval} s)")
    print(f"{'':>10} iosight/floor: {p50 / f50:.2f}x (p50), {p95 / f95:.2f}x (p95); load "
          f"average during: {np.mean(loads):.1f} on {os.cpu_count()} cores")  # fmt: skip
    print(f"{'':>10} CPU time of the process: {cpu:.1f} s, {cpu / len(lags):.2f} s per batch")


def rss_mb() -> float:
    """This process's resident set now (``/proc/self/status``), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def hour_of_messages(start: float, rate: int) -> list[tuple[float, str]]:
    """SYNTHETIC: an hour of ``rate`` messages/s from JOBS jobs, (time, message) by time."""
    from iosight.live import LdmsJob, synthetic_ldms_stream

    out = []
    for j in range(JOBS):
        job = LdmsJob(3_000_000 + j, 5000 + j % 7, f"/apps/app{j % 5}", start)
        for m in synthetic_ldms_stream(job, rate * 3600 // JOBS, ranks=RANKS, duration=3600.0,
                                       seed=j, modules=("POSIX", "MPIIO", "STDIO")):  # fmt: skip
            out.append((json.loads(m)["seg"][0]["timestamp"], m))
    out.sort(key=lambda p: p[0])
    return out


def memory_section(args: argparse.Namespace) -> None:
    import bisect

    start = time.time() - 3600.0  # the hour just past: no message is in the future
    msgs = hour_of_messages(start, args.rate)
    times = [t for t, _ in msgs]
    print(f"== memory: RSS over an hour of SYNTHETIC LDMS messages ({len(msgs):,}, "
          f"{args.rate}/s), one simulated minute per round")
    print(f"{'minute':>7} {'messages':>10} {'live_io rows':>13} {'RSS MB':>7} "
          f"{'/ 1st q':>8} {'wall s':>7} {'load':>5}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "darshan.jsonl"
        source.write_text("")
        service = live_service(Path(tmp), source, 60.0)
        url = service.start_server()
        t0, first, done = time.perf_counter(), None, 0
        try:
            for minute in range(1, 61):
                upto = bisect.bisect_right(times, start + 60.0 * minute)
                with open(source, "a") as f:
                    f.writelines(m + "\n" for _, m in msgs[done:upto])
                done = upto
                service.step()
                if minute % 15:
                    continue
                now_bytes(url)  # the server answers from the same process
                rss = rss_mb()
                first = first or rss
                rows = service.warehouse.sql("select count(*) n from live_io")["n"].iloc[0]
                print(f"{minute:>7} {done:>10,} {rows:>13,} {rss:>7.0f} {rss / first:>8.2f} "
                      f"{time.perf_counter() - t0:>7.1f} {os.getloadavg()[0]:>5.1f}")  # fmt: skip
        finally:
            service.close()


def served_forecasts(decisions) -> dict:
    """Per direction, the served forecast's document (without when it was computed)."""
    assert decisions.wait(timeout=600), "the forecasts took over 10 minutes"
    return decisions.forecasts()


def rounds_section(args: argparse.Namespace) -> None:
    """CPU per ``iosight live`` round, forecasts keyed on what they read, beside the old
    keying's recomputation of every forecast."""
    import shutil

    from iosight.bursts import list_forecasters
    from iosight.serve import Decisions, ServedWarehouse
    from iosight.warehouse import Warehouse

    if args.warehouse is None:
        print("== rounds: skipped (give -w WAREHOUSE with saved forecasters)")
        return
    models = list_forecasters(Warehouse(args.warehouse))
    if not models:
        raise SystemExit(f"no saved forecaster in {args.warehouse}: train one (docstring)")
    print(f"== rounds: CPU per iosight live round on a copy of {args.warehouse} "
          f"(models {', '.join(models)}; a batch of 40 SYNTHETIC LDMS messages per round)")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(args.warehouse, Path(tmp) / "wh")
        source = Path(tmp) / "darshan.jsonl"
        source.write_text("")
        service = live_service(Path(tmp), source, 10.0)
        service.start_server()
        c0, t0 = time.process_time(), time.perf_counter()
        served_forecasts(service.decisions)
        print(f"first forecasts: {time.process_time() - c0:.2f} s CPU, "
              f"{time.perf_counter() - t0:.2f} s wall")  # fmt: skip
        print(f"{'round':>5} {'new cpu s':>10} {'new wall s':>11} {'old cpu s':>10} "
              f"{'old wall s':>11} {'old/new cpu':>12} {'load':>5}")  # fmt: skip
        totals = [0.0, 0.0]
        try:
            for i in range(args.rounds):
                with open(source, "a") as f:
                    f.writelines(m + "\n" for m in batch(time.time() - 1.0, 40, i))
                load = os.getloadavg()[0]
                c0, t0 = time.process_time(), time.perf_counter()
                service.step()
                new = served_forecasts(service.decisions)
                new_cpu, new_wall = time.process_time() - c0, time.perf_counter() - t0
                c0, t0 = time.process_time(), time.perf_counter()
                old = served_forecasts(Decisions(ServedWarehouse(service.warehouse.path)))
                old_cpu, old_wall = time.process_time() - c0, time.perf_counter() - t0
                assert new == old, (new, old)
                totals = [totals[0] + new_cpu, totals[1] + old_cpu]
                print(f"{i + 1:>5} {new_cpu:>10.3f} {new_wall:>11.3f} {old_cpu:>10.3f} "
                      f"{old_wall:>11.3f} {old_cpu / new_cpu:>12.1f} {load:>5.1f}")  # fmt: skip
        finally:
            service.close()
    n = args.rounds
    print(f"mean CPU per round: {totals[0] / n:.3f} s (keyed on what each forecast reads; "
          f"the round's feed poll and commit included) vs {totals[1] / n:.3f} s (every "
          f"forecast again, the round itself not counted); answers equal; load average "
          f"after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip


SECTIONS = {"stream": stream_section, "lag": lag_section, "forecast": forecast_section,
            "memory": memory_section, "rounds": rounds_section}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--batches", type=int, default=30, help="lag: batches appended")
    parser.add_argument("--interval", type=float, default=1.0, help="lag: seconds per round")
    parser.add_argument("--rate", type=int, default=100, help="memory: messages per second")
    parser.add_argument("-w", "--warehouse", help="rounds: a warehouse with saved forecasters")
    parser.add_argument("--rounds", type=int, default=10, help="rounds: live rounds run")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name in args.only or list(SECTIONS):
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
