"""Evaluate every rule over many jobs and keep the results in the warehouse.

Three derived tables: ``insights`` (one row per finding), ``insights_jobs`` (one row
per evaluated job: the thresholds' digest, counts per level, and the rules its data
could not evaluate) and ``insights_rules`` (one row per rule: its title and what it
needs, so one job's stored results are read without importing the rules). Jobs already
evaluated with the same thresholds are skipped, so running again after an ingest
evaluates only the new jobs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError
from iosight._progress import Progress, ensure_progress
from iosight.insights import _frame
from iosight.insights._names import FINDINGS_TABLE, JOBS_TABLE, LEVELS, RULES_TABLE
from iosight.insights._registered import RULES
from iosight.insights._rules import FINDING_COLUMNS, Rule
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse

if TYPE_CHECKING:
    import pyarrow as pa

# the stored tables' SQL types but VARCHAR
_TYPES = {"stake_s": "double", "stake_bytes": "double"} | {f"n_{lv}": "bigint" for lv in LEVELS}


def _arrow(table: Table) -> pa.Table:
    """A results table as Arrow, typed as :data:`FINDINGS_TABLE` / :data:`JOBS_TABLE` are,
    NaN (no stake) as null. Made by DuckDB from the numpy columns: pyarrow's own
    conversion imports pandas, a third of a second of ``iosight insights``."""
    import duckdb

    con = duckdb.connect()
    try:
        con.register("results", {c: table[c] for c in table.columns})
        cast = [f'"{c}"::{_TYPES.get(c, "varchar")} as "{c}"' for c in table.columns]
        return con.sql(f"select {', '.join(cast)} from results").to_arrow_table()
    finally:
        con.close()


@dataclass
class InsightsRun:
    """What :func:`compute_insights` did.

    ``seconds``: how long it took.
    """

    jobs: int  # jobs in scope
    evaluated: int  # jobs evaluated now (new, or stored with other thresholds)
    findings: int  # findings written now
    seconds: float

    def summary(self) -> str:
        """One line: jobs evaluated now, findings, time and rate, jobs already stored."""
        rate = self.evaluated / self.seconds if self.seconds > 0 else float("inf")
        return (
            f"{self.jobs} jobs: {self.evaluated} evaluated now ({self.findings} findings, "
            f"{self.seconds:.1f} s, {rate:.0f} jobs/s), {self.jobs - self.evaluated} already stored"
        )


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


def compute_insights(
    warehouse: Warehouse,
    *,
    where: str | None = None,
    thresholds: Thresholds | None = None,
    batch_jobs: int = 5000,
    progress: Progress | None = None,
) -> InsightsRun:
    """Evaluate the rules for the jobs (matching ``where``) not yet stored with these thresholds.

    Work goes in batches of ``batch_jobs`` jobs, each one SQL pass per frame and one
    atomic commit, so memory stays bounded and an interrupted run keeps what it committed.

    ``warehouse``: the warehouse read; the findings are stored there; ``thresholds``: the rules'
    thresholds (default: Drishti's); ``progress``: told of each batch (default: silent).
    """
    t = thresholds or Thresholds()
    warehouse.require("jobs")
    start = time.perf_counter()
    scope, todo = _scope(warehouse, where, t)
    if where and not scope:
        raise IosightError(f"no job matches the filter {where!r}")
    if todo or not warehouse.has_table(RULES_TABLE):
        warehouse.write_table(RULES_TABLE, rules_table())
    prog = ensure_progress(progress)
    prog.start(todo, "insights")
    n_found, last, left = 0, "", todo
    try:
        while left > 0 and (batch := _next_keys(warehouse, where, t, last, batch_jobs)):
            keys = [key for key, _ in batch]
            found, per_job = evaluate(_frame.load(warehouse, keys, t), t)
            # only jobs stored under other thresholds have rows to replace
            stale = [key for key, stored in batch if stored]
            warehouse.commit(
                {FINDINGS_TABLE: [_arrow(found)], JOBS_TABLE: [_arrow(per_job)]},
                delete_keys={FINDINGS_TABLE: stale, JOBS_TABLE: stale},
            )
            n_found += len(found)
            last, left = keys[-1], left - len(keys)
            prog.advance(len(keys))
    finally:
        prog.finish()
    return InsightsRun(scope, todo, n_found, time.perf_counter() - start)


def _todo_sql(warehouse: Warehouse, where: str | None) -> str:
    """The jobs in scope (``s``) left-joined with the stored ones (``d``: ``current``
    when stored under the thresholds, its one parameter the thresholds' digest)."""
    cond = f"where {where}" if where else ""
    stored = (
        f"select job_key, bool_or(thresholds = ?) as current from {JOBS_TABLE} group by job_key"
        if warehouse.has_table(JOBS_TABLE)
        else "select null::varchar as job_key, ?::varchar = '' as current"
    )
    return f"(select job_key from jobs {cond}) s left join ({stored}) d using (job_key)"


def _scope(warehouse: Warehouse, where: str | None, t: Thresholds) -> tuple[int, int]:
    """How many jobs are in scope, and how many of them are not stored under ``t``."""
    todo = "count(*) filter (where d.current is not true)"
    query = f"select count(*), {todo} from {_todo_sql(warehouse, where)}"
    scope, todo = warehouse.rows(query, [t.digest()]).values[0]
    return int(scope), int(todo)


def _next_keys(
    warehouse: Warehouse, where: str | None, t: Thresholds, after: str, n: int
) -> list[tuple[str, bool]]:
    """The next ``n`` jobs in key order after ``after`` not stored under ``t``, each with
    whether it is stored under other thresholds: one batch at a time, so no list of
    every job is ever held (memory bounded by the batch)."""
    query = (
        f"select s.job_key, d.job_key is not null from {_todo_sql(warehouse, where)} "
        "where d.current is not true and s.job_key > ? order by s.job_key limit ?"
    )
    return [(key, stored) for key, stored in warehouse.rows(query, [t.digest(), after, n]).values]


def rules_table() -> pa.Table:
    """Every rule's code, family, title and what it needs (:data:`RULES_TABLE`)."""
    rules = [r for _, r in RULES.items()]

    def column(values: list[str]) -> np.ndarray:
        return np.array(values, dtype=object)

    return _arrow(
        Table(
            {
                "code": column([r.code for r in rules]),
                "family": column([r.family for r in rules]),
                "title": column([r.title for r in rules]),
                "needs": column([r.needs_text() for r in rules]),
            }
        )
    )
