"""The rules' evaluation over many jobs (numpy work), and its results as Arrow tables.

Apart from :mod:`iosight.insights._compute`, which decides what to evaluate and stores
it: ``iosight insights`` with no new job imports neither numpy nor the rules, which
take longer than the rest of the command.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from iosight.insights import _frame
from iosight.insights._names import LEVELS
from iosight.insights._registered import RULES
from iosight.insights._rules import FINDING_COLUMNS, Rule
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

# the stored tables' SQL types but VARCHAR
_TYPES = {"stake_s": "double", "stake_bytes": "double"} | {f"n_{lv}": "bigint" for lv in LEVELS}


def arrow(table: Table) -> pa.Table:
    """A results table as Arrow, typed as :data:`FINDINGS_TABLE` / :data:`JOBS_TABLE` are,
    NaN (no stake) as null, its rows in job key order (a job's in the order given): a
    compaction then merges the batches' files without sorting them (DuckDB's sort of
    the findings of 100,000 jobs peaked at 877 MB). Made by DuckDB from the numpy
    columns: pyarrow's own conversion imports pandas, a third of a second of
    ``iosight insights``."""
    if "job_key" in table.columns:
        table = table.take(np.argsort(table["job_key"], kind="stable"))
    con = _scratch().cursor()  # its own registrations, the database shared
    try:
        con.register("results", {c: table[c] for c in table.columns})
        cast = [f'"{c}"::{_TYPES.get(c, "varchar")} as "{c}"' for c in table.columns]
        return con.sql(f"select {', '.join(cast)} from results").to_arrow_table()
    finally:
        con.close()


@functools.cache
def _scratch() -> duckdb.DuckDBPyConnection:
    """An empty in-memory DuckDB, made once per process: a new database takes some 12 ms
    of CPU to make (three of them in a one-job ``iosight insights``), a cursor of it none."""
    import duckdb

    return duckdb.connect()


def evaluate_jobs(
    warehouse: Warehouse, keys: list[str], t: Thresholds, jobs: Table | None = None
) -> tuple[Table, Table]:
    """:func:`evaluate` over the jobs ``keys`` of ``warehouse`` (their frames read by SQL;
    ``jobs``: their per-job frame, read before for more jobs, see :func:`_frame.load`)."""
    return evaluate(_frame.load(warehouse, keys, t, jobs), t)


def evaluate(data: _frame.JobData, t: Thresholds) -> tuple[Table, Table]:
    """Every rule over the jobs of ``data``: (findings, one row per job).

    ``t``: the rules' thresholds.
    """
    jobs = data.jobs
    parts = []
    blind_codes: list[list[str]] = [[] for _ in range(len(jobs))]
    for code, r in RULES.items():
        blind = _blind(jobs, r)
        for row in np.flatnonzero(blind).tolist():
            blind_codes[row].append(code)
        found = r.evaluate(data, t)
        found = found.take(~np.isin(found["job_key"], jobs["job_key"][blind]))
        if len(found):
            found["code"], found["family"] = code, r.family
            parts.append(found)
    if parts:
        found = Table.concat([Table({c: p[c] for c in FINDING_COLUMNS}) for p in parts])
    else:
        found = Table.empty(FINDING_COLUMNS)
        found["stake_s"], found["stake_bytes"] = np.zeros(0), np.zeros(0)
    rows = np.searchsorted(np.sort(jobs["job_key"]), found["job_key"])
    order = np.argsort(jobs["job_key"], kind="stable")
    per_job = Table({"job_key": jobs["job_key"], "thresholds": np.full(len(jobs), t.digest())})
    for lv in LEVELS:
        hits = order[rows[found["level"] == lv]]
        per_job[f"n_{lv}"] = np.bincount(hits, minlength=len(jobs)).astype(np.int64)
    per_job["not_evaluated"] = np.array([",".join(c) for c in blind_codes], dtype=object)
    return found, per_job


def _blind(jobs: Table, r: Rule) -> np.ndarray:
    """The jobs whose data lacks what rule ``r`` needs: not evaluated, and no finding."""
    if r.needs == "records":
        return jobs["records_missing"].astype(bool)
    if r.needs == "nodes":
        return jobs.contains("modules", "MPI-IO")
    return _frame.lacking(jobs, r.counters)


def rules_table() -> pa.Table:
    """Every rule's code, family, title and what it needs (:data:`RULES_TABLE`)."""
    rules = [r for _, r in RULES.items()]

    def column(values: list[str]) -> np.ndarray:
        return np.array(values, dtype=object)

    return arrow(
        Table(
            {
                "code": column([r.code for r in rules]),
                "family": column([r.family for r in rules]),
                "title": column([r.title for r in rules]),
                "needs": column([r.needs_text() for r in rules]),
            }
        )
    )
