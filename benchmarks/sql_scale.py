"""Benchmark: `iosight sql` (grouped, a join to jobs) and `iosight jobs --where` on a
large warehouse, beside plain DuckDB over the same files.

Reads the warehouse WH and writes nothing to it. Each command runs in a fresh
interpreter, start-up included (what a user waits for), ``--runs`` times, interleaved
with the baseline: the same SQL in a fresh ``python -c`` that imports only ``duckdb``
and names the tables' live files itself (what `iosight sql` cannot beat: its views
read those files). Prints the median wall seconds, the least CPU seconds (user +
system of the child), iosight's ratio to the baseline and the load average (the machine
may be shared). ``--compare SRC`` also runs iosight with another checkout's ``src``
first on the path (e.g. ``main``'s), interleaved too.

``--double OUT`` first writes a SYNTHETIC warehouse at OUT twice WH's jobs: the live
files of ``jobs``, ``job_totals`` and ``io_totals`` copied, and copied again with
``job_key`` replaced by ``md5(job_key || '#2')`` (the other tables are left out, so
only the commands below are meaningful on it), and measures that one.

    python benchmarks/sql_scale.py WH                       # 5 runs each
    python benchmarks/sql_scale.py WH --compare ../main/src
    python benchmarks/sql_scale.py WH --double /tmp/wh2x    # twice WH's jobs
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

import duckdb

from iosight.warehouse import Warehouse
from startup import children_cpu, run

GROUPED = {
    "sql jobs-job_totals": "select exe, count(*) jobs, sum(run_time) run_time, "
    "sum(total_POSIX_BYTES_READ) bytes from jobs left join job_totals using (job_key) "
    "group by exe order by jobs desc, exe limit 10",
    "sql jobs-io_totals": "select exe, count(*) jobs, sum(total_POSIX_BYTES_WRITTEN) "
    "written from jobs left join io_totals using (job_key) "
    "group by exe order by jobs desc, exe limit 10",
}
DOUBLED = ("jobs", "job_totals", "io_totals")


def double(wh: Warehouse, out: Path) -> Warehouse:
    """The SYNTHETIC warehouse of twice ``wh``'s jobs at ``out`` (see the module doc)."""
    if out.exists():
        sys.exit(f"{out} exists: name a new folder")
    new = Warehouse(out, create=True)
    for name in DOUBLED:
        folder = out / "tables" / name
        folder.mkdir(parents=True)
        for i, path in enumerate(wh.table_files(name)):
            shutil.copy(path, folder / f"part-a{i:04d}.parquet")
            duckdb.execute(
                f"copy (select * replace (md5(job_key || '#2') as job_key) "
                f"from read_parquet('{path}')) to '{folder / f'part-b{i:04d}.parquet'}' "
                "(format parquet, compression zstd, row_group_size 65536)"
            )
    return new


def baseline(wh: Warehouse, sql: str) -> list[str]:
    """The plain-DuckDB command that runs ``sql`` with each table named as its files."""
    for name in DOUBLED:
        files = ", ".join(f"'{f}'" for f in wh.table_files(name))
        sql = re.sub(rf"\b(from|join) {name}\b", rf"\1 read_parquet([{files}]) {name}", sql)
    code = f"import duckdb; print(len(duckdb.sql({sql!r}).fetchall()))"
    return [sys.executable, "-c", code]


def commands(wh: Warehouse) -> dict[str, tuple[list[str], list[str]]]:
    """Each command's iosight argv and its baseline's."""
    cut = wh.rows("select quantile_disc(start_time, 0.99) from jobs").values[0][0]
    where = f"start_time >= {cut!r}"
    jobs_sql = (
        "select job_key, jobid, exe, nprocs, start_time, run_time, modules, synthetic "
        f"from jobs where {where} order by start_time, job_key"
    )
    cli = [sys.executable, "-m", "iosight"]
    found = {
        name: ([*cli, "sql", "-w", str(wh.path), "-f", "csv", sql], baseline(wh, sql))
        for name, sql in GROUPED.items()
    }
    jobs = [*cli, "jobs", "-w", str(wh.path), "--where", where, "-f", "csv"]
    found["jobs --where (newest 1%)"] = (jobs, baseline(wh, jobs_sql))
    return found


def once(argv: list[str], src: str | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv``."""
    t0, c0 = time.perf_counter(), children_cpu()
    run(argv, src)
    return time.perf_counter() - t0, children_cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warehouse", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--compare", metavar="SRC", help="another checkout's src folder")
    ap.add_argument("--double", metavar="OUT", type=Path, help="measure twice the jobs")
    args = ap.parse_args()
    wh = Warehouse(args.warehouse)
    if args.double:
        wh = double(wh, args.double)
    jobs = wh.rows("select count(*) from jobs").values[0][0]
    print(f"{wh.path}: {jobs:,} jobs; load {os.getloadavg()}")
    srcs = {"iosight": str(Path(__file__).resolve().parents[1] / "src")}
    srcs |= {f"iosight ({args.compare})": args.compare} if args.compare else {}
    for name, (argv, base) in commands(wh).items():
        variants = {label: (argv, src) for label, src in srcs.items()}
        variants["baseline (duckdb)"] = (base, None)
        for command, src in variants.values():
            run(command, src)  # untimed: caches bytecode and the files' pages
        times = {label: [] for label in variants}
        for _ in range(args.runs):
            for label, (command, src) in variants.items():
                times[label].append(once(command, src))
        base_wall = statistics.median(w for w, _ in times["baseline (duckdb)"])
        print(f"\n{name}")
        for label, runs in times.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = min(c for _, c in runs)
            print(
                f"  {label:40s} {wall:6.2f} s wall (median), {cpu:5.2f} s CPU (min), "
                f"x{wall / base_wall:.2f} the baseline"
            )
        print(f"  load {os.getloadavg()}")


if __name__ == "__main__":
    main()
