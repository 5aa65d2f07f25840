"""System-level I/O burst labels, statistics and forecasts (Saeedizade et al. §IV-V)."""

from iosight.bursts._analysis import (
    DIRECTIONS,
    BurstAnalysis,
    analyze_bursts,
    burst_runs,
    deviation_histogram,
    run_length_table,
)
from iosight.bursts._labels import BurstLabels, choose_k, label_bursts, severity_classes

__all__ = [
    "DIRECTIONS",
    "BurstAnalysis",
    "BurstLabels",
    "analyze_bursts",
    "burst_runs",
    "choose_k",
    "deviation_histogram",
    "label_bursts",
    "run_length_table",
    "severity_classes",
]
