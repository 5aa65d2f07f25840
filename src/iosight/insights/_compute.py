"""Evaluate every rule over many jobs and keep the results in the warehouse.

Two derived tables: ``insights`` (one row per finding) and ``insights_jobs`` (one row
per evaluated job: the thresholds' digest, counts per level, and the rules its data
could not evaluate). Jobs already evaluated with the same thresholds are skipped, so
running again after an ingest evaluates only the new jobs.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from iosight._errors import IosightError
from iosight._progress import Progress, ensure_progress
from iosight._units import human_bytes, human_rank_time
from iosight.insights import _frame
from iosight.insights._rules import FINDING_COLUMNS, LEVELS, RULES, Rule
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse, find_job

FINDINGS_TABLE = "insights"
JOBS_TABLE = "insights_jobs"

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


@dataclass
class JobInsights:
    """One job's findings (ordered by level) and the rules its data could not evaluate.

    ``job_key``: the job; ``findings``: its findings, one row each.
    """

    job_key: str
    findings: pd.DataFrame
    not_evaluated: pd.DataFrame  # code, title, needs

    def table(self) -> pd.DataFrame:
        """Findings for reading: level, code, message, at stake, files, recommendation."""
        f = self.findings
        secs = f["stake_s"].map(lambda v: human_rank_time(v) if pd.notna(v) and v > 0 else "")
        size = f["stake_bytes"].map(lambda v: human_bytes(v) if pd.notna(v) and v > 0 else "")
        stake = (secs + ", " + size).str.strip(", ")
        out = f[["level", "code", "message"]].assign(at_stake=stake)
        return out.assign(files=f["files"], recommendation=f["recommendation"])

    def to_dict(self) -> dict:
        """Raw values for machines: ``findings`` (each with its evidence as an object, its
        stake in rank-seconds and bytes) and ``not_evaluated`` (code, title, needs)."""
        found = self.findings.drop(columns="job_key").to_dict("records")
        for f in found:
            ev = f["evidence"]
            f["evidence"] = json.loads(ev) if isinstance(ev, str) and ev else {}
        return {"findings": found, "not_evaluated": self.not_evaluated.to_dict("records")}


def job_insights(
    warehouse: Warehouse, ident: str, *, thresholds: Thresholds | None = None
) -> JobInsights:
    """One job's insights: stored ones when current, else evaluated now (nothing written).

    ``warehouse``: the warehouse read; ``ident``: the job: its job id, job_key or a job_key
    prefix; ``thresholds``: the rules' thresholds (default: Drishti's).
    """
    t = thresholds or Thresholds()
    key = find_job(warehouse, ident)
    stored = None
    if warehouse.has_table(JOBS_TABLE) and warehouse.has_table(FINDINGS_TABLE):
        row = warehouse.sql(
            f"select not_evaluated from {JOBS_TABLE} where job_key = ? and thresholds = ?",
            [key, t.digest()],
        )
        if len(row):
            found = warehouse.sql(f"select * from {FINDINGS_TABLE} where job_key = ?", [key])
            stored = (found, row["not_evaluated"].iloc[0])
    if stored is None:
        found, per_job = evaluate(_frame.load(warehouse, [key], t), t)
        stored = (found, per_job["not_evaluated"].iloc[0])
    found, blind = stored
    order = {lv: i for i, lv in enumerate(LEVELS)}
    found = found.assign(_o=found["level"].map(order)).sort_values(
        ["_o", "stake_s", "code"], ascending=[True, False, True], kind="mergesort"
    )
    codes = [c for c in (blind or "").split(",") if c]
    missing = pd.DataFrame(
        {
            "code": codes,
            "title": [RULES.get(c).title for c in codes],
            "needs": [RULES.get(c).needs_text() for c in codes],
        }
    )
    return JobInsights(key, found.drop(columns="_o").reset_index(drop=True), missing)
