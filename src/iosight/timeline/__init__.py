"""System-level binned I/O timeline (Saeedizade et al. (2023), §IV).

Exports load on first use (:mod:`iosight._lazy`): showing a stored timeline does not
import the binning's numpy and scipy.
"""

from iosight._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_binning": ("bin_intervals", "count_active", "spread_fractions"),
        "_build": (
            "LAYERS",
            "TIMELINE_COLUMNS",
            "VALUE_COLUMNS",
            "build_options_of",
            "build_timeline",
            "rebuild_timeline",
            "timeline_from_job_totals",
            "undated_jobs",
        ),
        "_frame": ("bin_width_of", "load_timeline", "parse_duration", "parse_time", "rebin"),
        "_known": ("KNOWN_COLUMNS", "known_sums"),
        "_span": ("LeftOut", "left_out"),
        "_unstored": ("known_timeline",),
        "_update": ("TimelineUpdate", "update_timeline"),
    },
)
