"""A one-row-per-log job summary read back through PyDarshan (the ground truth reader)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from iosight._errors import CorruptLogError


def job_summary(paths: Sequence[str | Path]):
    """Job facts and I/O totals of each log, as PyDarshan reads them.

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
