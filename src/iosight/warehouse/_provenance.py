"""Which data a warehouse holds: measured jobs, SYNTHETIC ones (``iosight.synth``), or both.

Analyses over the whole warehouse (the timeline, schedules, facility views) label their
results with it, so a result is called SYNTHETIC exactly when its data are.
"""

from __future__ import annotations

from iosight.warehouse._store import Warehouse


def data_kind(warehouse: Warehouse) -> str:
    """``"real"``, ``"SYNTHETIC"`` or ``"mixed (S of N jobs SYNTHETIC)"`` from
    ``jobs.synthetic``; ``"unknown (no jobs)"`` when the warehouse has no job.

    ``warehouse``: the warehouse whose ``jobs`` are counted.
    """
    if not warehouse.has_table("jobs"):
        return "unknown (no jobs)"
    query = f"select count(*), count_if({synthetic_flag(warehouse)}) from jobs"
    n, n_syn = (int(v) for v in warehouse.sql(query).iloc[0])
    return kind_of(n, n_syn)


def synthetic_flag(warehouse: Warehouse, alias: str = "") -> str:
    """SQL saying whether a ``jobs`` row (of table ``alias`` when given) is SYNTHETIC;
    ``false`` when the table has no ``synthetic`` column (nothing generated it).

    ``warehouse``: the warehouse whose ``jobs`` table is read.
    """
    if "synthetic" not in warehouse.column_names("jobs"):
        return "false"
    return f"coalesce({alias}{'.' if alias else ''}synthetic, false)"


def kind_of(n: int, n_synthetic: int) -> str:
    """The label of ``n`` jobs of which ``n_synthetic`` are SYNTHETIC (see :func:`data_kind`)."""
    if n == 0:
        return "unknown (no jobs)"
    if n_synthetic == 0:
        return "real"
    if n_synthetic == n:
        return "SYNTHETIC"
    return f"mixed ({n_synthetic:,} of {n:,} jobs SYNTHETIC)"
