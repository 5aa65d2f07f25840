"""I/O insights: what is wrong with a job's I/O, what it costs, what to change.

Drishti-style threshold rules (Bez et al., *Drishti: Guiding End-Users in the I/O
Optimization Journey*; codes and defaults from Drishti 0.8) evaluated over the
warehouse for many jobs at once, one module per family of rules, plus the facility
view across jobs: which rules fire where, what is at stake, and how it changes by month.

Exports load on first use (:mod:`iosight._lazy`): one job's stored insights are read
without importing the rules, pandas or numpy (:func:`job_insights` with ``rows=True``).
"""

from iosight._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_compute": ("InsightsRun", "compute_insights"),
        "_evaluate": ("evaluate",),
        "_facility": ("FacilityView", "facility_view"),
        "_job": ("JobInsights", "job_insights"),
        "_registered": ("RULES",),
        "_rules": ("NEEDS", "Rule"),
        "_thresholds": ("Thresholds", "load_thresholds"),
    },
)
