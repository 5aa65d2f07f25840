"""Scheduling distributed I/O resources (I/O nodes, OSTs) among applications.

Implements Bandet, Boito, Pallez (2024): the model, allocation and placement
heuristics, the MCKP baseline, two simulators, the metrics and the workload study.
"""

from iosight.iosched._allocators import ALLOCATORS, Allocator, allocate
from iosight.iosched._conclusions import (
    BinDifference,
    Finding,
    conclusions,
    findings_frame,
)
from iosight.iosched._curves import (
    CurveSet,
    classify_profiles,
    interpolate_grid,
    load_curves_csv,
    load_forge,
    ost_curves,
    profile_estimates,
    profile_fits,
    profile_medians,
)
from iosight.iosched._experiment import (
    ROBUST_PAIRS,
    ExperimentConfig,
    load_results,
    parse_loads,
    resolve_curves,
    run_experiment,
)
from iosight.iosched._metrics import evaluate, occupancy, slowdowns
from iosight.iosched._model import (
    Application,
    Workload,
    cpu_load,
    io_load,
    io_stress,
    io_time,
    n_perf,
    n_sys,
    workload_io_load,
)
from iosight.iosched._placement import PLACEMENTS, Placement, mckp, place, schedule
from iosight.iosched._plan import allocate_apps, simulate_apps
from iosight.iosched._simulate import (
    SimResult,
    simulate,
    simulate_events,
    simulate_timestep,
)
from iosight.iosched._workload import compute_sizes, generate_workload, x_bound

__all__ = [
    "ALLOCATORS",
    "PLACEMENTS",
    "ROBUST_PAIRS",
    "Allocator",
    "Application",
    "BinDifference",
    "CurveSet",
    "ExperimentConfig",
    "Finding",
    "Placement",
    "SimResult",
    "Workload",
    "allocate",
    "allocate_apps",
    "classify_profiles",
    "compute_sizes",
    "conclusions",
    "cpu_load",
    "evaluate",
    "findings_frame",
    "generate_workload",
    "interpolate_grid",
    "io_load",
    "io_stress",
    "io_time",
    "load_curves_csv",
    "load_forge",
    "load_results",
    "mckp",
    "n_perf",
    "n_sys",
    "occupancy",
    "ost_curves",
    "parse_loads",
    "place",
    "profile_estimates",
    "profile_fits",
    "profile_medians",
    "resolve_curves",
    "run_experiment",
    "schedule",
    "simulate",
    "simulate_apps",
    "simulate_events",
    "simulate_timestep",
    "slowdowns",
    "workload_io_load",
    "x_bound",
]
