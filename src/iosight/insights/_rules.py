"""What a rule is, and the registry every rule family adds its rules to.

A rule is a function of the per-job frame (one row per job, see ``_frame.py``)
that returns its findings for all jobs at once: one row per job it fires on, with
the level, the evidence, the time or bytes at stake and how they were estimated.
A rule names the data it needs; a job whose data lacks it is listed as not evaluated
for that rule, never judged on a guess. Codes are Drishti's
(``drishti/includes/config.py``) so the two tools' reports line up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from iosight._registry import Registry
from iosight.insights._frame import COUNTERS
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
    evaluate: Callable[[pd.DataFrame, Thresholds], pd.DataFrame]
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

    def add(fn: Callable[[pd.DataFrame, Thresholds], pd.DataFrame]):
        RULES.register(code)(Rule(code, family, title, needs, fn, counters))
        return fn

    return add


def findings(
    frame: pd.DataFrame,
    mask: np.ndarray | pd.Series,
    *,
    level: str | np.ndarray,
    message: Callable[[pd.DataFrame], list[str]],
    evidence: dict[str, pd.Series | np.ndarray],
    recommendation: str | np.ndarray,
    stake_s: pd.Series | np.ndarray | None = None,
    stake_bytes: pd.Series | np.ndarray | None = None,
    stake_how: str = "",
    files: pd.Series | None = None,
) -> pd.DataFrame:
    """The rows of the jobs where ``mask`` holds, in the finding shape (code added later).

    ``evidence`` maps a name to a per-job value (counters and derived numbers); it is
    stored as one JSON object per finding. ``message`` formats the selected rows.
    """
    mask = np.asarray(mask, dtype=bool)
    sel = frame.loc[mask]
    n = len(sel)
    ev = pd.DataFrame({k: np.asarray(v)[mask] for k, v in evidence.items()}, index=sel.index)
    out = pd.DataFrame(
        {
            "job_key": sel["job_key"].to_numpy(),
            "level": np.asarray(level)[mask] if isinstance(level, np.ndarray) else level,
            "message": message(sel) if n else [],
            "evidence": ev.to_json(orient="records", lines=True).splitlines() if n else [],
            "stake_s": _pick(stake_s, mask, n),
            "stake_bytes": _pick(stake_bytes, mask, n),
            "stake_how": stake_how if stake_s is not None or stake_bytes is not None else "",
            "recommendation": np.asarray(recommendation)[mask]
            if isinstance(recommendation, np.ndarray)
            else recommendation,
            "files": files.reindex(sel["job_key"]).fillna("").to_numpy()
            if files is not None
            else "",
        }
    )
    return out


def no_findings(frame: pd.DataFrame) -> pd.DataFrame:
    """The empty result, for a rule with nothing to look at in this batch."""
    return findings(
        frame, np.zeros(len(frame), bool), level="", message=list, evidence={}, recommendation=""
    )


def _pick(values, mask: np.ndarray, n: int) -> np.ndarray:
    if values is None:
        return np.full(n, np.nan)
    return np.asarray(values, dtype=float)[mask]


def share(part, whole) -> np.ndarray:
    """``part / whole`` with 0 where ``whole`` is 0 or missing."""
    part = np.asarray(part, dtype=float)
    whole = np.asarray(whole, dtype=float)
    ok = np.isfinite(whole) & (whole > 0)
    return np.where(ok, np.nan_to_num(part) / np.where(ok, whole, 1.0), 0.0)


def pct(x: float) -> str:
    return f"{100.0 * x:.2f}%"


