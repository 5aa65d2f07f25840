"""Burst-aware start times: Algorithm 1 of Saeedizade et al. (§V-B) and its simulation."""

from iosight.sched.burst_aware._algorithm import (
    ESTIMATORS,
    POLICIES,
    JobBins,
    StartChoice,
    choose_start,
    parse_pattern,
    policy_alpha,
)

__all__ = [
    "ESTIMATORS",
    "POLICIES",
    "JobBins",
    "StartChoice",
    "choose_start",
    "parse_pattern",
    "policy_alpha",
]
