"""One job's insights: its stored findings when current, else evaluated for it alone.

A command that prints one job's insights reads the stored results with plain
:class:`~iosight.warehouse.Rows` (``rows=True``): no import of the rules, pandas or
numpy, which take longer than the rest of ``iosight job`` together. Only a job without
current stored results is evaluated here, by the rules over its frames (numpy, no pandas).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from iosight._units import human_bytes, human_rank_time, missing
from iosight.insights._names import FINDINGS_TABLE, JOBS_TABLE, LEVELS, RULES_TABLE
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Rows, Warehouse, find_job, records_of

# findings, not-evaluated rules: DataFrames by default, Rows where asked for
Table = Any  # pd.DataFrame | Rows


@dataclass
class JobInsights:
    """One job's findings (ordered by level) and the rules its data could not evaluate.

    ``job_key``: the job; ``findings``: its findings, one row each; ``not_evaluated``:
    code, title and needs of each rule its data could not evaluate. DataFrames, or
    :class:`Rows` where :func:`job_insights` was asked for them.
    """

    job_key: str
    findings: Table
    not_evaluated: Table

    def table(self) -> Table:
        """Findings for reading: level, code, message, at stake, files, recommendation
        (a DataFrame or Rows, as the findings are)."""
        rows = Rows(
            ["level", "code", "message", "at_stake", "files", "recommendation"],
            ["VARCHAR"] * 6,
            [
                (f["level"], f["code"], f["message"], _at_stake(f), f["files"],
                 f["recommendation"])
                for f in records_of(self.findings)
            ],
        )  # fmt: skip
        return rows if isinstance(self.findings, Rows) else frame_of(rows)

    def to_dict(self) -> dict:
        """Raw values for machines: ``findings`` (each with its evidence as an object, its
        stake in rank-seconds and bytes) and ``not_evaluated`` (code, title, needs)."""
        found = [{k: v for k, v in f.items() if k != "job_key"} for f in records_of(self.findings)]
        for f in found:
            ev = f["evidence"]
            f["evidence"] = json.loads(ev) if isinstance(ev, str) and ev else {}
        return {"findings": found, "not_evaluated": records_of(self.not_evaluated)}


def _at_stake(f: dict) -> str:
    """A finding's time and bytes at stake, in words ("" where it names neither)."""
    secs, size = f["stake_s"], f["stake_bytes"]
    parts = [human_rank_time(secs) if not missing(secs) and secs > 0 else ""]
    parts += [human_bytes(size) if not missing(size) and size > 0 else ""]
    return ", ".join(p for p in parts if p)


def frame_of(rows: Rows):
    """``rows`` as a DataFrame (for the callers that asked for DataFrames), a DOUBLE
    column as floats (NaN where missing) as DuckDB would give it."""
    import pandas as pd

    df = pd.DataFrame(rows.values, columns=rows.columns)
    doubles = [c for c, t in zip(rows.columns, rows.types, strict=True) if t == "DOUBLE"]
    return df.astype(dict.fromkeys(doubles, "float64"))


def job_insights(
    warehouse: Warehouse, ident: str, *, thresholds: Thresholds | None = None, rows: bool = False
) -> JobInsights:
    """One job's insights: stored ones when current, else evaluated now (nothing written).

    ``warehouse``: the warehouse read; ``ident``: the job: its job id, job_key or a job_key
    prefix; ``thresholds``: the rules' thresholds (default: Drishti's); ``rows``: plain
    :class:`Rows` (no pandas import where the results are stored), else DataFrames.
    """
    t = thresholds or Thresholds()
    key = find_job(warehouse, ident)
    stored = _stored(warehouse, key, t)
    if stored is None:
        from iosight.insights._evaluate import evaluate_jobs

        found, per_job = evaluate_jobs(warehouse, [key], t)
        columns = {c: found[c] for c in found.columns}
        stored = (Rows.from_columns(columns), per_job["not_evaluated"][0])
    found, blind = stored
    order = {lv: i for i, lv in enumerate(LEVELS)}
    ranked = sorted(found.values, key=_finding_order(found.columns, order))
    found = Rows(found.columns, found.types, ranked)
    missing_rules = _not_evaluated(warehouse, [c for c in (blind or "").split(",") if c])
    if rows:
        return JobInsights(key, found, missing_rules)
    return JobInsights(key, frame_of(found), frame_of(missing_rules))


def _finding_order(columns: list[str], order: dict[str, int]):
    """The sort key of a finding: level, largest time at stake first (none last), code."""
    level, stake, code = (columns.index(c) for c in ("level", "stake_s", "code"))

    def key(row: tuple) -> tuple:
        s = row[stake]
        return (order.get(row[level], len(order)), missing(s), 0.0 if missing(s) else -s,
                row[code])  # fmt: skip

    return key


def _stored(warehouse: Warehouse, key: str, t: Thresholds) -> tuple[Rows, str] | None:
    """The job's stored findings and not-evaluated codes under ``t``; None when none are."""
    if not (warehouse.has_table(JOBS_TABLE) and warehouse.has_table(FINDINGS_TABLE)):
        return None
    row = warehouse.rows(
        f"select not_evaluated from {JOBS_TABLE} where job_key = ? and thresholds = ?",
        [key, t.digest()],
    )
    if not row.values:
        return None
    found = warehouse.rows(f"select * from {FINDINGS_TABLE} where job_key = ?", [key])
    return found, row.values[0][0]


def _not_evaluated(warehouse: Warehouse, codes: list[str]) -> Rows:
    """Code, title and needs of the rules ``codes`` (:func:`rule_texts`)."""
    texts = rule_texts(warehouse, codes)
    return Rows(["code", "title", "needs"], ["VARCHAR"] * 3, [(c, *texts[c]) for c in codes])


def rule_texts(warehouse: Warehouse, codes: list[str]) -> dict[str, tuple[str, str]]:
    """Title and needs of each rule of ``codes``: from the stored rules table where it
    names them all (no import of the rules and numpy), else from the rules themselves."""
    known: dict[str, tuple[str, str]] = {}
    if codes and warehouse.has_table(RULES_TABLE):
        got = warehouse.rows(f"select code, title, needs from {RULES_TABLE}")
        known = {code: (title, needs) for code, title, needs in got.values}
    if not set(codes) <= set(known):
        from iosight.insights._registered import RULES

        known = {c: (RULES.get(c).title, RULES.get(c).needs_text()) for c in codes}
    return known
