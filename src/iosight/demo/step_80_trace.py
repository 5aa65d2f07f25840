"""Demo step: trace a small built-in Python workload into Darshan logs and read them back."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from iosight._errors import CorruptLogError
from iosight.demo import DemoContext

if TYPE_CHECKING:
    import pandas as pd

TITLE = "Darshan-style tracing of a Python program (iosight trace)"

WORKLOAD = textwrap.dedent(
    """
    # a small, unchanged Python program: a CSV written line by line, a binary
    # checkpoint of 4 x 256 KiB os.write calls read back with 64 KiB preads, and a
    # shared results file that every rank writes its own 1 KiB block of
    import os, sys
    rank = int(os.environ.get("SLURM_PROCID", "0"))
    out = sys.argv[1]
    with open(os.path.join(out, f"metrics{rank}.csv"), "w") as f:
        f.write("step,loss\\n")
        for step in range(200):
            f.write(f"{step},{1.0 / (step + 1):.6f}\\n")
    ckpt = os.path.join(out, f"ckpt{rank}.bin")
    fd = os.open(ckpt, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    for _ in range(4):
        os.write(fd, b"\\1" * (256 << 10))
    os.fsync(fd)
    os.close(fd)
    fd = os.open(ckpt, os.O_RDONLY)
    total = sum(len(os.pread(fd, 64 << 10, off)) for off in range(0, 1 << 20, 64 << 10))
    os.close(fd)
    fd = os.open(os.path.join(out, "results.bin"), os.O_CREAT | os.O_WRONLY, 0o644)
    os.pwrite(fd, bytes([rank]) * 1024, rank * 1024)
    os.close(fd)
    print(f"rank {rank}: read back {total} bytes")
    """
)


def run(ctx: DemoContext) -> None:
    from darshan.examples import example_logs

    from iosight.trace import run_traced

    work = ctx.workdir / "trace"
    data, logs = work / "data", work / "logs"
    data.mkdir(parents=True, exist_ok=True)
    prog = work / "workload.py"
    prog.write_text(WORKLOAD)
    nprocs = 2
    ctx.say(f"tracing {prog.name} as a {nprocs}-rank job (rank variables as Slurm sets them)")
    for rank in range(nprocs):
        env = {"SLURM_JOB_ID": "8080", "SLURM_PROCID": str(rank), "SLURM_NTASKS": str(nprocs)}
        code, result = run_traced([sys.executable, str(prog), str(data)], logs, env=env)
        ctx.say(f"rank {rank}: exit {code}, wrote {result['log'] or result['partial']}")
    (log,) = sorted(logs.glob("*.darshan"))
    ctx.artifacts["trace_log"] = log
    shipped = Path(example_logs.__file__).parent
    examples = [shipped / n for n in ("example.darshan", "dxt.darshan") if (shipped / n).exists()]
    ctx.show(
        _pydarshan_rows([log, *examples]), "iosight's log (first row) beside real Darshan logs"
    )
    import darshan

    with darshan.DarshanReport(str(log), read_all=True) as r:
        c = r.records["POSIX"].to_df()["counters"]
        c.insert(0, "file", [r.name_records[i].rsplit("/", 1)[-1] for i in c["id"]])
    cols = ["file", "rank", "POSIX_OPENS", "POSIX_WRITES", "POSIX_READS", "POSIX_BYTES_WRITTEN"]
    cols += ["POSIX_BYTES_READ", "POSIX_ACCESS1_ACCESS", "POSIX_ACCESS1_COUNT"]
    ctx.show(c[cols], "POSIX records as PyDarshan reads them (rank -1: shared by all ranks)")

    from iosight.warehouse import ingest, job_summary

    report = ingest([log], ctx.warehouse, workers=1)
    ctx.say(f"iosight ingest of the traced log: {report.summary()}")
    ctx.show(job_summary(ctx.warehouse, "8080").modules, "job 8080 in the warehouse: per module")


def _pydarshan_rows(paths: Sequence[Path]) -> pd.DataFrame:
    """Job facts and I/O totals of each log, as PyDarshan (the ground-truth reader) reads
    them: the traced log is a Darshan log like the shipped ones.

    Columns: log, exe, jobid, nprocs, run_time, modules, files (name records of data
    modules), shared (rank -1 records), POSIX and STDIO bytes read and written.
    """
    import darshan
    import pandas as pd

    rows = []
    for path in map(Path, paths):
        try:
            report = darshan.DarshanReport(str(path), read_all=True)
        except (RuntimeError, OSError, ValueError) as err:
            raise CorruptLogError(f"PyDarshan cannot read {path}: {err}") from None
        with report as r:
            job = r.metadata["job"]
            row = {
                "log": path.name,
                "exe": r.metadata["exe"][:60],
                "jobid": job["jobid"],
                "nprocs": job["nprocs"],
                "run_time": round(float(job["run_time"]), 3),
                "modules": ",".join(sorted(r.modules)),
            }
            ids, shared = set(), 0
            for mod in ("POSIX", "STDIO"):
                row[f"{mod.lower()}_read"] = row[f"{mod.lower()}_write"] = 0
                if mod in r.records and len(r.records[mod]):
                    c = r.records[mod].to_df()["counters"]
                    row[f"{mod.lower()}_read"] = int(c[f"{mod}_BYTES_READ"].sum())
                    row[f"{mod.lower()}_write"] = int(c[f"{mod}_BYTES_WRITTEN"].sum())
                    ids |= set(c["id"].tolist())
                    shared += int((c["rank"] == -1).sum())
            row["files"], row["shared"] = len(ids), shared
            rows.append(row)
    return pd.DataFrame(rows)
