"""Burst-aware start times: Algorithm 1 of Saeedizade et al. (§V-B) and its simulation."""

from iosight.schedule._algorithm import (
    ESTIMATORS,
    POLICIES,
    StartChoice,
    choose_start,
    parse_pattern,
    policy_alpha,
)
from iosight.schedule._emulator import (
    DEFAULT_PATTERNS,
    EmulationResult,
    EmulatorConfig,
    emulate,
)
from iosight.schedule._simulation import (
    METRICS,
    PAPER_APPS,
    App,
    BurstWindows,
    ScheduleSimulation,
    burst_windows,
    simulate_series,
    simulate_windows,
)
from iosight.schedule._sources import (
    BurstSeries,
    ForecastStudy,
    Recommendation,
    burst_series,
    forecast_study,
    read_burst_series,
    recommend_start,
    simulate_source,
    start_on_forecast,
)

__all__ = [
    "DEFAULT_PATTERNS",
    "ESTIMATORS",
    "METRICS",
    "PAPER_APPS",
    "POLICIES",
    "App",
    "BurstSeries",
    "BurstWindows",
    "EmulationResult",
    "EmulatorConfig",
    "ForecastStudy",
    "Recommendation",
    "ScheduleSimulation",
    "StartChoice",
    "burst_series",
    "burst_windows",
    "choose_start",
    "emulate",
    "forecast_study",
    "parse_pattern",
    "policy_alpha",
    "read_burst_series",
    "recommend_start",
    "simulate_series",
    "simulate_source",
    "simulate_windows",
    "start_on_forecast",
]
