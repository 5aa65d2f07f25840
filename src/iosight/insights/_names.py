"""Names the rules and the readers of their stored results share, with no import of
pandas or numpy: a command that prints a job's stored insights needs only these."""

from __future__ import annotations

#: the levels of a finding, most severe first (the order findings are listed in)
LEVELS = ("high", "warn", "info", "ok")
#: one row per finding
FINDINGS_TABLE = "insights"
#: one row per evaluated job: thresholds' digest, counts per level, rules not evaluated
JOBS_TABLE = "insights_jobs"
#: one row per rule (code, family, title, needs): what a list of the rules a job's
#: data could not evaluate says of each, without importing the rules
RULES_TABLE = "insights_rules"
