"""I/O insights: what is wrong with a job's I/O, what it costs, what to change.

Drishti-style threshold rules (Bez et al., *Drishti: Guiding End-Users in the I/O
Optimization Journey*; codes and defaults from Drishti 0.8) evaluated over the
warehouse for many jobs at once, one module per family of rules, plus the facility
view across jobs: which rules fire where, what is at stake, and how it changes by month.
"""

from iosight.insights import (  # noqa: F401  (each module registers its rules)
    _access,
    _imbalance,
    _intensity,
    _interface,
    _metadata,
    _mpiio,
    _requests,
)
from iosight.insights._compute import (
    InsightsRun,
    JobInsights,
    compute_insights,
    evaluate,
    job_insights,
)
from iosight.insights._facility import FacilityView, facility_view
from iosight.insights._rules import NEEDS, RULES, Rule
from iosight.insights._thresholds import Thresholds, load_thresholds

__all__ = [
    "NEEDS",
    "RULES",
    "FacilityView",
    "InsightsRun",
    "JobInsights",
    "Rule",
    "Thresholds",
    "compute_insights",
    "evaluate",
    "facility_view",
    "job_insights",
    "load_thresholds",
]
