"""Metadata time: records whose metadata operations took long (P17, Drishti's
``check_long_metadata``; like Drishti, each record with POSIX_F_META_TIME above the
threshold counts once, a rank's own record or a shared file's reduced one)."""

from __future__ import annotations

import numpy as np

from iosight._units import human_duration
from iosight.insights._frame import JobData, per_job, top_files
from iosight.insights._rules import findings, rule
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds


@rule("P17", "metadata", "long metadata time", needs="records")
def long_metadata(d: JobData, t: Thresholds) -> Table:
    j, f = d.jobs, d.files
    if len(f):
        slow = f.num("slow_meta_records")
        count = per_job(d, slow > 0, slow)
        time = per_job(d, slow > 0, f["slow_meta_time"])
        files = top_files(d, f["slow_meta_time"], slow > 0)
    else:
        count, time, files = np.zeros(len(j)), np.zeros(len(j)), None
    hdf5 = j.contains("modules", "H5F")
    return findings(
        j,
        count > 0,
        level="high",
        message=lambda i: [
            f"{n:.0f} record(s) spend over {t.metadata_time_rank:g} s in metadata operations "
            f"({human_duration(s)} in all)"
            for n, s in zip(count[i], time[i], strict=True)
        ],
        evidence={"slow_records": count, "slow_meta_time_s": time},
        recommendation=np.where(
            hdf5,
            "Combine files, cache or reduce metadata operations; with HDF5 enable collective "
            "metadata (H5Pset_all_coll_metadata_ops, H5Pset_coll_metadata_write)",
            "Combine files, cache or reduce metadata operations (opens, stats, seeks)",
        ),
        stake_s=time,
        stake_how="metadata time of the records above the threshold (summed over ranks)",
        files=files,
    )
