"""Which data a warehouse holds: measured jobs, SYNTHETIC ones (``iosight.synth``), or both.

Analyses over the whole warehouse (the timeline, schedules, facility views) label their
results with it, so a result is called SYNTHETIC exactly when its data are.
"""

from __future__ import annotations

from iosight.warehouse._store import Warehouse


def data_kind(warehouse: Warehouse) -> str:
    """``"real"``, ``"SYNTHETIC"`` or ``"mixed (S of N jobs SYNTHETIC)"`` from
    ``jobs.synthetic``; ``"unknown (no jobs)"`` when the warehouse has no job."""
    if not warehouse.has_table("jobs"):
        return "unknown (no jobs)"
    flagged = "synthetic" in warehouse.column_names("jobs")
    synthetic = "count_if(synthetic)" if flagged else "0"
    n, n_syn = (int(v) for v in warehouse.sql(f"select count(*), {synthetic} from jobs").iloc[0])
    if n == 0:
        return "unknown (no jobs)"
    if n_syn == 0:
        return "real"
    return "SYNTHETIC" if n_syn == n else f"mixed ({n_syn:,} of {n:,} jobs SYNTHETIC)"
