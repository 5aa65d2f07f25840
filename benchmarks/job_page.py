"""Benchmark: the served Job page's queries with the key index beside whole-table views.

What ``/job/KEY`` reads (``find_job``, ``job_summary``, the DXT view and the insights
part), in one process on one ``ServedWarehouse``, for ``--jobs`` jobs drawn
with a fixed seed: each job once with the key index (its tables read from only the
files holding it, :mod:`iosight.warehouse._jobfiles`) and once without (the whole
tables' views, the strongest simple way: one view per table, DuckDB pruning row
groups), interleaved and alternating which goes first. Prints median and p95 wall,
mean CPU per page, their ratios and the load average; the index is filled first (its
fill time and size are printed).

    python benchmarks/job_page.py -w /tmp/jobpage-wh --jobs 40
"""

from __future__ import annotations

import argparse
import os
import time


def page(wh, key: str) -> None:
    """What the Job page of job ``key`` reads: the job, its summary, its DXT view (the
    time axis) and its insights (the page's part fetched after it)."""
    from iosight.report.dxt import dxt_view
    from iosight.serve import job_insights_table
    from iosight.warehouse import find_job, for_job, job_summary

    key = find_job(wh, key)
    job_summary(wh, key)
    dxt_view(for_job(wh, key), key)
    job_insights_table(wh, key)


def main() -> None:
    from iosight.serve import ServedWarehouse
    from iosight.warehouse import for_job

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--warehouse", required=True)
    ap.add_argument("--jobs", type=int, default=40, help="job pages timed each way")
    args = ap.parse_args()
    wh = ServedWarehouse(args.warehouse)
    keys = list(
        wh.sql(f"select job_key from jobs using sample {args.jobs + 1} rows (reservoir, 3)")[
            "job_key"
        ]
    )
    t0, c0 = time.perf_counter(), time.process_time()
    scope = for_job(wh, keys[0])
    scope.connect(wh.tables())
    scope._index.wait()
    files = scope._index._files.values()
    entries = sum(len(h) for _, h, _ in files if h is not None)
    print(
        f"index: {len(files)} files, {entries} entries ({entries * 8 / 2**20:.1f} MiB), "
        f"filled in {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU"
    )
    for flag in (True, False):  # each way's views made once before timing
        wh.key_index = flag
        page(wh, keys[0])
    times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for i, key in enumerate(keys[1:]):
        for flag in (True, False) if i % 2 else (False, True):
            wh.key_index = flag
            t, c = time.perf_counter(), time.process_time()
            page(wh, key)
            times[flag].append((time.perf_counter() - t, time.process_time() - c))
    got = {}
    for flag, label in ((False, "whole views"), (True, "key index")):
        walls = sorted(w for w, _ in times[flag])
        cpu = sum(c for _, c in times[flag]) / len(walls)
        got[flag] = (walls[len(walls) // 2], walls[int(0.95 * len(walls))], cpu)
        print(
            f"{label:12} {len(walls)} pages: median {1000 * got[flag][0]:.0f} ms, "
            f"p95 {1000 * got[flag][1]:.0f} ms, CPU {1000 * cpu:.0f} ms a page"
        )
    ratio = [a / b for a, b in zip(got[False], got[True], strict=True)]
    print("whole views / key index: median {:.2f}x, p95 {:.2f}x, CPU {:.2f}x".format(*ratio))
    print("load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
