"""What a rule is, and the registry every rule family adds its rules to.

A rule is a function of the per-job frames (:class:`~iosight.insights._frame.JobData`,
numpy columns) that returns its findings for all jobs at once: one row per job it fires on, with
the level, the evidence, the time or bytes at stake and how they were estimated.
A rule names the data it needs; a job whose data lacks it is listed as not evaluated
for that rule, never judged on a guess. Codes are Drishti's
(``drishti/includes/config.py``) so the two tools' reports line up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from iosight._registry import Registry
from iosight.insights._evidence import evidence_json
from iosight.insights._frame import COUNTERS, JobData
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds

NOT_EVALUATED = "n/a"

# what a rule's data has to hold, and what to say when a job's data does not
NEEDS = {
    "totals": "job totals of these counters (a job-total table may hold only some)",
    "records": "per-file records (job-total tables have only job totals)",
    "nodes": "the job's node count, which Darshan logs do not hold (Drishti asks Slurm's sacct)",
}

FINDING_COLUMNS = (
    "job_key",
    "code",
    "family",
    "level",
    "message",
    "evidence",
    "stake_s",
    "stake_bytes",
    "stake_how",
    "recommendation",
    "files",
)


@dataclass(frozen=True)
class Rule:
    """One insight: its Drishti code, family, what data it needs, and its evaluation.

    ``code``: its Drishti code; ``family``: the group it is listed under; ``title``: what it
    finds, in words; ``needs``: what data it needs: ``totals``, ``records`` or ``nodes``
    (:data:`NEEDS`); ``evaluate``: finds it in a per-job frame under thresholds.
    """

    code: str
    family: str
    title: str
    needs: str
    evaluate: Callable[[JobData, Thresholds], Table]
    # the per-job frame columns whose values decide whether it fires ("totals" rules)
    counters: tuple[str, ...] = ()

    def needs_text(self) -> str:
        """What a job's data must hold for this rule, for "not evaluated" lists."""
        if self.needs != "totals":
            return NEEDS[self.needs]
        return f"{NEEDS['totals']}: " + ", ".join(COUNTERS[c] for c in self.counters)


RULES: Registry[Rule] = Registry("insight rule")


def rule(
    code: str, family: str, title: str, *, needs: str = "totals", counters: tuple[str, ...] = ()
):
    """Register ``fn(frame, thresholds) -> findings`` as rule ``code``; a "totals" rule
    names the frame ``counters`` it decides on (a job whose source lacks one is not
    evaluated)."""
    if needs not in NEEDS:
        raise ValueError(f"needs must be one of {sorted(NEEDS)}")
    if (needs == "totals") != bool(counters):
        raise ValueError("a 'totals' rule names its counters, and only a 'totals' rule does")
    unknown = set(counters) - set(COUNTERS)
    if unknown:
        raise ValueError(f"unknown frame counters {sorted(unknown)}")

    def add(fn: Callable[[JobData, Thresholds], Table]):
        RULES.register(code)(Rule(code, family, title, needs, fn, counters))
        return fn

    return add


def findings(
    frame: Table,
    mask: np.ndarray,
    *,
    level: str | np.ndarray,
    message: Callable[[np.ndarray], list[str]],
    evidence: dict[str, np.ndarray],
    recommendation: str | np.ndarray,
    stake_s: np.ndarray | None = None,
    stake_bytes: np.ndarray | None = None,
    stake_how: str = "",
    files: np.ndarray | None = None,
) -> Table:
    """The rows of the jobs where ``mask`` holds, in the finding shape (code added later).

    ``evidence`` maps a name to a per-job value (counters and derived numbers); it is
    stored as one JSON object per finding. ``message`` formats the selected rows (given
    their positions in ``frame``); ``files``: per job, the files to name ("" for none).
    """
    rows = np.flatnonzero(np.asarray(mask, dtype=bool))
    n = len(rows)
    staked = stake_s is not None or stake_bytes is not None
    return Table(
        {
            "job_key": frame["job_key"][rows],
            "level": _each(level, rows),
            "message": np.array(message(rows) if n else [], dtype=object),
            "evidence": np.array(
                evidence_json({k: np.asarray(v)[rows] for k, v in evidence.items()}, n),
                dtype=object,
            ),
            "stake_s": _pick(stake_s, rows),
            "stake_bytes": _pick(stake_bytes, rows),
            "stake_how": _each(stake_how if staked else "", rows),
            "recommendation": _each(recommendation, rows),
            "files": _each(files if files is not None else "", rows),
        }
    )


def no_findings(frame: Table) -> Table:
    """The empty result, for a rule with nothing to look at in this batch."""
    return findings(
        frame, np.zeros(len(frame), bool), level="", message=list, evidence={}, recommendation=""
    )


def _each(value: str | np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A per-job array's values at ``rows``, or one string repeated."""
    if isinstance(value, np.ndarray):
        return value[rows].astype(object)
    return np.full(len(rows), value, dtype=object)


def _pick(values, rows: np.ndarray) -> np.ndarray:
    if values is None:
        return np.full(len(rows), np.nan)
    return np.asarray(values, dtype=float)[rows]


def share(part, whole) -> np.ndarray:
    """``part / whole`` with 0 where ``whole`` is 0 or missing."""
    part = np.asarray(part, dtype=float)
    whole = np.asarray(whole, dtype=float)
    ok = np.isfinite(whole) & (whole > 0)
    return np.where(ok, np.nan_to_num(part) / np.where(ok, whole, 1.0), 0.0)


def pct(x: float) -> str:
    return f"{100.0 * x:.2f}%"
