"""Benchmark: the served Job page's queries with the key index beside whole-table views.

What ``/job/KEY`` reads (``find_job``, ``job_summary``, the time axis and the insights
part), in one process, for ``--jobs`` jobs drawn with a fixed seed, three ways, each on
its own ``ServedWarehouse``: the whole tables' views (the strongest simple way: one view
per table, DuckDB pruning row groups by their statistics), the key index of files alone
(each table read from only the files holding the job, :mod:`iosight.warehouse._jobfiles`,
``jobs`` scanned whole in them), and the key index with ``jobs``' row numbers (its
lookups read only the row groups holding the key). Each job is read each way,
interleaved, the order rotating. Prints median and p95 wall, mean CPU per page, the
ratios to the last way, the memory of the job's rows the last way holds after each page,
and the load average; the indexes are filled first (the fill time and size of the one
with row numbers are printed).

    python benchmarks/job_page.py -w /tmp/jobpage-wh --jobs 40
"""

from __future__ import annotations

import argparse
import os
import time


def page(wh, key: str) -> None:
    """What the Job page of job ``key`` reads: the job, its summary, its time axis (the
    DXT view or the heatmap) and its insights (the page's part fetched after it)."""
    from iosight.serve import _pages
    from iosight.warehouse import find_job, job_summary

    key = find_job(wh, key)
    job_summary(wh, key)
    _pages.job_timeline(wh, key)
    _pages.job_insights_table(wh, key)


def held_mib(wh) -> float:
    """MiB of DuckDB's in-memory tables in ``wh``'s database: the rows this thread's scope
    of its last job holds (:mod:`iosight.warehouse._jobfiles`)."""
    query = "select sum(memory_usage_bytes) from duckdb_memory() where tag = 'IN_MEMORY_TABLE'"
    return (wh.connect().execute(query).fetchall()[0][0] or 0) / 2**20


def filled(wh, key: str):
    """The key index of ``wh``, every file of every table read into it."""
    from iosight.warehouse import for_job

    scope = for_job(wh, key)
    scope.connect(wh.tables())
    scope._index.wait()
    return scope._index


def main() -> None:
    from iosight.serve import ServedWarehouse
    from iosight.warehouse import _jobfiles

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--warehouse", required=True)
    ap.add_argument("--jobs", type=int, default=40, help="job pages timed each way")
    args = ap.parse_args()
    ways = {
        name: ServedWarehouse(args.warehouse)
        for name in ("whole views", "key index, files", "key index, rows")
    }
    ways["whole views"].key_index = False
    wh = ways["key index, rows"]
    keys = list(
        wh.sql(f"select job_key from jobs using sample {args.jobs + 1} rows (reservoir, 3)")[
            "job_key"
        ]
    )
    t0, c0 = time.perf_counter(), time.process_time()
    files, size = filled(wh, keys[0]).held()
    print(
        f"index: {files} files, {size / 2**20:.1f} MiB, filled in "
        f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU"
    )
    kept, _jobfiles.BY_ROW = _jobfiles.BY_ROW, frozenset()  # this index keeps no rows
    filled(ways["key index, files"], keys[0])
    _jobfiles.BY_ROW = kept
    for each in ways.values():  # each way's views made once before timing
        page(each, keys[0])
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    names = list(ways)
    held = []  # MiB of the job's rows held after each page of the last way
    for i, key in enumerate(keys[1:]):
        for name in names[i % 3 :] + names[: i % 3]:
            t, c = time.perf_counter(), time.process_time()
            page(ways[name], key)
            times[name].append((time.perf_counter() - t, time.process_time() - c))
            if name == names[-1]:
                held.append(held_mib(ways[name]))
    got = {}
    for name in names:
        walls = sorted(w for w, _ in times[name])
        cpu = sum(c for _, c in times[name]) / len(walls)
        got[name] = (walls[len(walls) // 2], walls[int(0.95 * len(walls))], cpu)
        print(
            f"{name:16} {len(walls)} pages: median {1000 * got[name][0]:.0f} ms, "
            f"p95 {1000 * got[name][1]:.0f} ms, CPU {1000 * cpu:.0f} ms a page"
        )
    for name in names[:-1]:
        ratio = [a / b for a, b in zip(got[name], got[names[-1]], strict=True)]
        print(f"{name} / {names[-1]}: " + "median {:.2f}x, p95 {:.2f}x, CPU {:.2f}x".format(*ratio))
    held.sort()
    print(f"a job's rows held (DuckDB's in-memory tables after its page): median "
          f"{held[len(held) // 2]:.2f} MiB, most {held[-1]:.2f} MiB")  # fmt: skip
    print("load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
