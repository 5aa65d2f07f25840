"""A whole tier's merge (docs/warehouse.md, "Runs merged in tiers"): 16 runs of a table of
a job a row (``io_totals``-like: a 32-hex-digit key and two counters), each run cut into
files of ``--file-jobs`` jobs as compaction cuts its outputs. SYNTHETIC data: random keys
and counters, made here (no real warehouse holds tens of millions of jobs).

Each size is merged by iosight's merge of sorted runs (what the automatic compaction
does: ``merge_files``) and by DuckDB's sort into one file (the baseline: what a user
would write, ``COPY (SELECT * FROM read_parquet([...]) ORDER BY job_key)``, under the
memory limit and spill directory compaction gives it), each in a fresh process, one run
each: wall and CPU seconds, peak resident memory, and their ratios.

    python benchmarks/merge_tier.py [--jobs 2000000 4000000 8000000] [--runs 16]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _keys(rng, n: int):
    """``n`` sorted random keys of 32 hex digits (as ``job_key`` is)."""
    import numpy as np

    digits = np.frombuffer(b"0123456789abcdef", "S1")
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    hexes = np.empty((n, 32), "S1")
    hexes[:, 0::2], hexes[:, 1::2] = digits[raw >> 4], digits[raw & 15]
    return np.sort(hexes.view("S32").ravel())


def make_runs(where: Path, runs: int, jobs: int, file_jobs: int) -> list[Path]:
    """The group's files: ``runs`` runs of ``jobs // runs`` jobs, files of ``file_jobs``,
    named as compaction names a run's files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    files = []
    for r in range(runs):
        keys = _keys(rng, jobs // runs)
        for j, at in enumerate(range(0, len(keys), file_jobs)):
            part = keys[at : at + file_jobs]
            table = pa.table(
                {
                    "job_key": pa.array(part.astype(object), pa.binary()).cast(pa.string()),
                    "read_bytes": rng.integers(0, 1 << 40, len(part)),
                    "write_bytes": rng.integers(0, 1 << 40, len(part)),
                }
            )
            path = where / f"compact-synthetic{r}-run-0-{j}.parquet"
            pq.write_table(table, path, row_group_size=65_536, compression="zstd")
            files.append(path)
    return files


def _sql_text(path: Path) -> str:
    """``path`` as an SQL string literal."""
    return "'" + str(path).replace("'", "''") + "'"


def one(how: str, group: Path, out: Path) -> dict:
    """Merge ``group``'s files into ``out`` by ``how`` (``merge`` or ``duckdb``)."""
    import pyarrow.parquet as pq

    from iosight.warehouse import MEMORY_LIMIT, Merger, merge_files

    files = sorted(
        group.glob("*.parquet"), key=lambda p: (p.name.split("-")[1], len(p.name), p.name)
    )
    merger = Merger(out / "spill")
    wall, cpu = time.perf_counter(), time.process_time()
    if how == "merge":
        outs = merge_files(merger, files, out / "compact-out-0.parquet", ("job_key",))
        assert not merger.opened, "the merge handed the group to DuckDB"
    else:
        rows = f"read_parquet([{', '.join(_sql_text(f) for f in files)}])"
        outs = [out / "sorted.parquet"]
        merger.connection().execute(
            f"copy (select * from {rows} order by job_key) to {_sql_text(outs[0])} "
            "(format parquet, compression zstd, row_group_size 65536)"
        )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    merger.close()
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": sum(pq.read_metadata(f).num_rows for f in outs),
        "memory_limit": MEMORY_LIMIT,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[2_000_000, 4_000_000, 8_000_000])
    ap.add_argument("--runs", type=int, default=16, help="runs in the tier (merged whole at 16)")
    ap.add_argument("--file-jobs", type=int, default=31_250, help="jobs a file of a run")
    ap.add_argument("--one", nargs=3, metavar=("HOW", "GROUP", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        how, group, out = args.one
        print(json.dumps(one(how, Path(group), Path(out))))
        return
    print(f"SYNTHETIC one-row jobs, {args.runs} runs, files of {args.file_jobs:,} jobs; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()}")  # fmt: skip
    for jobs in args.jobs:
        with tempfile.TemporaryDirectory(prefix="iosight-tier-") as tmp:
            group = Path(tmp) / "group"
            group.mkdir()
            files = make_runs(group, args.runs, jobs, args.file_jobs)
            got = {}
            for how in ("merge", "duckdb"):
                out = Path(tmp) / how
                out.mkdir()
                run = [sys.executable, __file__, "--one", how, str(group), str(out)]
                done = subprocess.run(run, check=True, capture_output=True, text=True)
                got[how] = json.loads(done.stdout.splitlines()[-1])
                shutil.rmtree(out)
            m, d = got["merge"], got["duckdb"]
            assert m["rows"] == d["rows"] == jobs // args.runs * args.runs
            print(
                f"{jobs:>11,} jobs ({len(files)} files): merge {m['wall_s']:6.1f} s "
                f"({m['cpu_s']:6.1f} CPU), {m['peak_mb']:5.0f} MB | DuckDB's sort "
                f"{d['wall_s']:6.1f} s ({d['cpu_s']:6.1f} CPU), {d['peak_mb']:5.0f} MB "
                f"(limit {d['memory_limit']}) | time x{d['wall_s'] / m['wall_s']:.2f}, "
                f"memory x{d['peak_mb'] / m['peak_mb']:.2f}; load {os.getloadavg()[0]:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
