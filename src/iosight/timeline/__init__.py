"""System-level binned I/O timeline (Saeedizade et al. §IV)."""

from iosight.timeline._binning import SPREADS, bin_intervals, count_active, spread_fractions
from iosight.timeline._build import (
    LAYERS,
    TIMELINE_COLUMNS,
    VALUE_COLUMNS,
    build_options_of,
    build_timeline,
    job_totals_intervals,
    rebuild_timeline,
    timeline_from_job_totals,
    undated_jobs,
)
from iosight.timeline._frame import bin_width_of, load_timeline, parse_duration, parse_time, rebin
from iosight.timeline._known import KNOWN_COLUMNS, known_sums
from iosight.timeline._span import SPANS, LeftOut, left_out
from iosight.timeline._update import TimelineUpdate, update_timeline

__all__ = [
    "KNOWN_COLUMNS",
    "LAYERS",
    "SPANS",
    "SPREADS",
    "TIMELINE_COLUMNS",
    "VALUE_COLUMNS",
    "LeftOut",
    "TimelineUpdate",
    "bin_intervals",
    "bin_width_of",
    "build_options_of",
    "build_timeline",
    "count_active",
    "job_totals_intervals",
    "known_sums",
    "left_out",
    "load_timeline",
    "parse_duration",
    "parse_time",
    "rebin",
    "rebuild_timeline",
    "spread_fractions",
    "timeline_from_job_totals",
    "undated_jobs",
    "update_timeline",
]
