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

import numpy as np
import pandas as pd
import pyarrow as pa

from iosight._errors import IosightError
from iosight._progress import Progress, ensure_progress
from iosight.insights import _frame
from iosight.insights._names import FINDINGS_TABLE, JOBS_TABLE, LEVELS, RULES_TABLE
from iosight.insights._registered import RULES
from iosight.insights._rules import FINDING_COLUMNS, Rule
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse

FINDINGS_SCHEMA = pa.schema(
    [
        ("job_key", pa.string()),
        ("code", pa.string()),
        ("family", pa.string()),
        ("level", pa.string()),
        ("message", pa.string()),
        ("evidence", pa.string()),
        ("stake_s", pa.float64()),
        ("stake_bytes", pa.float64()),
        ("stake_how", pa.string()),
        ("recommendation", pa.string()),
        ("files", pa.string()),
    ]
)
JOBS_SCHEMA = pa.schema(
    [("job_key", pa.string()), ("thresholds", pa.string())]
    + [(f"n_{lv}", pa.int64()) for lv in LEVELS]
    + [("not_evaluated", pa.string())]
)


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


def evaluate(data: _frame.JobData, t: Thresholds) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every rule over the jobs of ``data``: (findings, one row per job).

    ``t``: the rules' thresholds.
    """
    jobs = data.jobs
    parts = []
    not_eval = np.full(len(jobs), "", dtype=object)
    for code, r in RULES.items():
        blind = _blind(jobs, r)
        not_eval = np.where(blind, not_eval + code + ",", not_eval)
        found = r.evaluate(data, t)
        found = found[~found["job_key"].isin(jobs["job_key"][blind])]
        if len(found):
            parts.append(found.assign(code=code, family=r.family))
    found = (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame({c: pd.Series(dtype=object) for c in FINDING_COLUMNS})
    )
    found = found[list(FINDINGS_SCHEMA.names)]
    counts = (
        found.groupby(["job_key", "level"]).size().unstack(fill_value=0)
        if len(found)
        else pd.DataFrame(index=pd.Index([], name="job_key"))
    )
    per_job = pd.DataFrame({"job_key": jobs["job_key"].to_numpy(), "thresholds": t.digest()})
    for lv in LEVELS:
        col = counts[lv] if lv in counts.columns else pd.Series(dtype=np.int64)
        per_job[f"n_{lv}"] = col.reindex(per_job["job_key"]).fillna(0).astype(np.int64).to_numpy()
    per_job["not_evaluated"] = pd.Series(not_eval).str.rstrip(",").to_numpy()
    return found, per_job


def _blind(jobs: pd.DataFrame, r: Rule) -> np.ndarray:
    """The jobs whose data lacks what rule ``r`` needs: not evaluated, and no finding."""
    if r.needs == "records":
        return jobs["records_missing"].to_numpy(dtype=bool)
    if r.needs == "nodes":
        return jobs["modules"].str.contains("MPI-IO", regex=False).to_numpy()
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
    cond = f"where {where}" if where else ""
    scope = warehouse.sql(f"select job_key from jobs {cond}")["job_key"]
    if where and not len(scope):
        raise IosightError(f"no job matches the filter {where!r}")
    done: set[str] = set()
    if warehouse.has_table(JOBS_TABLE):
        stored = warehouse.sql(f"select job_key, thresholds from {JOBS_TABLE}")
        done = set(stored.loc[stored["thresholds"] == t.digest(), "job_key"])
    todo = sorted(set(scope) - done)
    if todo or not warehouse.has_table(RULES_TABLE):
        warehouse.write_table(RULES_TABLE, rules_table())
    prog = ensure_progress(progress)
    prog.start(len(todo), "insights")
    n_found = 0
    try:
        for i in range(0, len(todo), batch_jobs):
            keys = todo[i : i + batch_jobs]
            found, per_job = evaluate(_frame.load(warehouse, keys, t), t)
            warehouse.commit(
                {
                    FINDINGS_TABLE: [
                        pa.Table.from_pandas(found, FINDINGS_SCHEMA, preserve_index=False)
                    ],
                    JOBS_TABLE: [pa.Table.from_pandas(per_job, JOBS_SCHEMA, preserve_index=False)],
                },
                delete_keys={FINDINGS_TABLE: keys, JOBS_TABLE: keys},
            )
            n_found += len(found)
            prog.advance(len(keys))
    finally:
        prog.finish()
    return InsightsRun(len(scope), len(todo), n_found, time.perf_counter() - start)


def rules_table() -> pa.Table:
    """Every rule's code, family, title and what it needs (:data:`RULES_TABLE`)."""
    rules = [r for _, r in RULES.items()]
    return pa.table(
        {
            "code": [r.code for r in rules],
            "family": [r.family for r in rules],
            "title": [r.title for r in rules],
            "needs": [r.needs_text() for r in rules],
        }
    )
