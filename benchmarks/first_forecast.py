"""Benchmark: the first ``/api/forecast`` of a large warehouse, answered off the request.

Starts ``iosight serve``'s app (``BackgroundServer``) on a warehouse with saved lead-mode
forecasters and asks ``/api/forecast`` at once: the time of that first answer (a
``503`` with ``Retry-After`` while the server's thread computes), of ``/api/start``
meanwhile, how long until the forecast is served, and of the next requests
(``/api/forecast``, ``/api/start``, a bad ``/api/start``, ``/metrics``). Beside it the
baseline: the same computation waited for by its caller (``Decisions.wait`` on a fresh
read-only warehouse), which is what the first request itself did before the forecasts
moved off the request, run before and after the server (a shared machine). Wall and
CPU time, load average before and after.

    python benchmarks/first_forecast.py -w /tmp/summit-wh    # a copy: training writes models/

The forecasters, e.g. on a copy of the Summit warehouse: ``iosight.bursts.train_bursts(wh,
directions=["read", "write"], models="tree", feature_sets=3, modes="lead", horizons=[5],
search_iter=0, cv_splits=2, information=["logs"], workers=1)``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.error
import urllib.request


def ask(url: str) -> tuple[int, float, dict | str, str | None]:
    """Status, seconds, body (JSON, else text) and ``Retry-After`` of one request."""
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=600) as r:
            status, body, retry = r.status, r.read(), None
    except urllib.error.HTTPError as e:
        status, body, retry = e.code, e.read(), e.headers.get("Retry-After")
    took = time.perf_counter() - t0
    try:
        return status, took, json.loads(body), retry
    except ValueError:
        return status, took, body.decode(), retry


def served(path: str) -> dict:
    """The first answers of a fresh server on ``path``."""
    from iosight.serve import BackgroundServer, create_app

    with BackgroundServer(create_app(path)) as srv:
        t0 = time.perf_counter()
        first = ask(srv.url + "/api/forecast")
        start = ask(srv.url + "/api/start?min_time=1800&max_time=5400&policy=W3")
        n = 2
        while (got := ask(srv.url + "/api/forecast"))[0] == 503:
            n += 1
            time.sleep(0.5)
        ready = time.perf_counter() - t0
        nxt = ask(srv.url + "/api/forecast")
        after = [ask(srv.url + p) for p in AFTER]
    return {"first": first, "start": start, "ready": ready, "asked": n, "next": nxt,
            "doc": got[2], "after": after}  # fmt: skip


AFTER = ("/api/start?min_time=1800&max_time=5400&policy=W3",
         "/api/start?min_time=10&max_time=1e9&policy=W3", "/metrics")  # fmt: skip


def in_caller(path: str) -> tuple[float, float]:
    """Wall and CPU seconds of the computation waited for by its caller."""
    from iosight.serve import Decisions, ServedWarehouse

    t0, c0 = time.perf_counter(), time.process_time()
    assert Decisions(ServedWarehouse(path)).wait(timeout=600)
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--warehouse", required=True)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    before = in_caller(args.warehouse)  # the baseline before and after: a shared machine
    print(f"baseline, the computation waited for by its caller: {before[0]:.2f} s wall, "
          f"{before[1]:.2f} s CPU")  # fmt: skip
    c0 = time.process_time()
    got = served(args.warehouse)
    cpu = time.process_time() - c0
    status, secs, body, retry = got["first"]
    print(f"first /api/forecast: {status} in {secs:.3f} s (Retry-After {retry}): {body}")
    print(f"/api/start meanwhile: {got['start'][0]} in {got['start'][1]:.3f} s")
    print(f"forecast served {got['ready']:.2f} s after the first request ({got['asked']} "
          f"requests); the next request {got['next'][0]} in {got['next'][1]:.3f} s; "
          f"CPU of the process {cpu:.1f} s")  # fmt: skip
    for path, (status, secs_, _, _) in zip(AFTER, got["after"], strict=True):
        print(f"then {path}: {status} in {secs_:.3f} s")
    for d, w in got["doc"]["directions"].items():
        print(d, w.get("error") or {k: w[k] for k in ("model", "rates", "source", "as_of")})
    wall, cpu = in_caller(args.warehouse)
    print(f"baseline again: {wall:.2f} s wall, {cpu:.2f} s CPU; the first request now "
          f"{secs / min(wall, before[0]):.4f}x of the faster one")  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
