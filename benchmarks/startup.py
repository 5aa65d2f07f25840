"""Benchmark: how long read commands take to answer a one-job warehouse.

Builds a warehouse of one real log (PyDarshan's ``example.darshan``) and its timeline
in a temporary folder (and a copy with the job's insights stored, by ``iosight
insights``, for the ``job`` commands marked so: ``iosight job`` reads stored insights
without pandas, and evaluates them only where none are stored), then runs each command
in a fresh interpreter ``--runs`` times
and prints the min and median wall time, the min CPU time (user + system of the child)
and the load average. The machine may be shared, so it also prints each command's
import time from ``python -X importtime`` (the sum over the modules imported at top
level, least of 3 runs), which ranks commands the same under any load. ``--compare
SRC`` runs the same commands with another checkout's ``src`` folder first on the path
(e.g. ``main``'s), side by side; the baseline is ``python -c "import pandas"``.

Bytecode is cached as in an installed package (pip compiles it at install), even where
``PYTHONDONTWRITEBYTECODE`` is set (without a cache, each run compiles every iosight
module it imports, some 80 ms for ``job``): the children write it under a temporary
``PYTHONPYCACHEPREFIX``, never into a checkout, in one untimed run of each command.

    python benchmarks/startup.py                        # 10 runs per command
    python benchmarks/startup.py --compare ../main/src  # this checkout against another
    python benchmarks/startup.py --quick                # 3 runs
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iosight.data import example_logs
from iosight.insights import compute_insights
from iosight.timeline import build_timeline
from iosight.warehouse import Warehouse, ingest

COMMANDS = [
    ["--help"],
    ["jobs"],
    ["jobs", "--where", "nprocs > 1", "-f", "json"],
    ["sql", "select exe, count(*) n from jobs group by exe"],
    ["tables"],
    ["errors"],
    ["timeline", "show"],
    ["job", "4478544"],
    ["insights"],
    "schedule start --min-time 100 --max-time 200 --pattern 0001100 --policy MDT".split(),
]
#: commands run on the copy of the warehouse with the job's insights stored
STORED = [["job", "4478544"], ["job", "4478544", "-f", "json"]]


def one_job_warehouse(folder: Path) -> tuple[Path, Path]:
    """The one-job warehouse, and its copy with the job's insights stored."""
    path = folder / "wh"
    log = next(p for p in example_logs() if p.name == "example.darshan")
    wh = Warehouse(path, create=True)
    ingest([log], wh, workers=1)
    build_timeline(wh)
    stored = Path(shutil.copytree(path, folder / "wh-insights"))
    compute_insights(Warehouse(stored))
    return path, stored


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], src: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    result = subprocess.run(argv, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed: {result.stderr.strip()}")
    return result


def timings(argv: list[str], runs: int, src: str | None) -> tuple[float, float, float]:
    """Min and median wall seconds, and min CPU seconds, of ``runs`` runs of ``argv``
    (after one untimed run, which caches the bytecode)."""
    run(argv, src)
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), children_cpu()
        run(argv, src)
        wall.append(time.perf_counter() - t0)
        cpu.append(children_cpu() - c0)
    return min(wall), statistics.median(wall), min(cpu)


def import_seconds(argv: list[str], src: str | None, runs: int) -> float:
    """The least seconds ``python -X importtime`` reports, over ``runs`` runs, for the
    modules imported at top level."""
    return min(_imports_once(argv, src) for _ in range(runs))


def _imports_once(argv: list[str], src: str | None) -> float:
    err = run([sys.executable, "-X", "importtime", *argv[1:]], src).stderr
    total = 0
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if not name.startswith("  ") and cumulative.strip().isdigit():
                total += int(cumulative)
    return total / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 runs per command")
    parser.add_argument("--compare", help="another checkout's src folder, run side by side")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    sides = {"this": None} | ({"compare": args.compare} if args.compare else {})
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the children cache bytecode...
        os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")  # ...out of the trees
        wh, stored = map(str, one_job_warehouse(Path(tmp)))
        print(f"load average before: {os.getloadavg()[0]:.2f}; {runs} runs per command")
        cases = [("import pandas", [sys.executable, "-c", "import pandas"])]
        for c in COMMANDS:
            warehouse = [] if c == ["--help"] else ["-w", wh]
            cases.append((" ".join(c), [sys.executable, "-m", "iosight", *c, *warehouse]))
        for c in STORED:
            argv = [sys.executable, "-m", "iosight", *c, "-w", stored]
            cases.append((" ".join(c) + " (insights stored)", argv))
        for label, argv in cases:
            for side, src in sides.items():
                lo, mid, cpu = timings(argv, runs, src)
                imports = import_seconds(argv, src, min(runs, 3))
                print(
                    f"{side:8s} wall min {lo:.3f} s, median {mid:.3f} s; CPU min {cpu:.3f} s; "
                    f"imports {imports:.3f} s; load {os.getloadavg()[0]:.2f}  {label}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
