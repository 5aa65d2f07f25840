"""Objectives of Bandet et al. (2024), §III-C2, measured on the window [0, t_end] of a
simulation."""

from __future__ import annotations

import numpy as np

from iosight.iosched._model import Workload, alloc_bandwidth, n_perf
from iosight.iosched._simulate import SimResult


def slowdowns(w: Workload, alloc: np.ndarray, sim: SimResult) -> dict[str, np.ndarray]:
    """Per application rho = T / (V / b(n_perf)), rho_io = b(n_perf)/b(n_j), rho_con.

    iosight's reading: T and V are the I/O time and volume within the window,
    partial subphases included; an application that has moved no data yet has rho NaN.
    n_perf ranges over n >= 1 as in Eq. (1), also under the zero-forwarder option, so an
    application on 0 resources has rho_io = b(n_perf) / b(0), below 1 when direct access
    is faster.

    ``w``: the workload; ``alloc``: resources per application; ``sim``: the simulation of its
    schedule.
    """
    rows = np.arange(w.k)
    b_perf = w.bw[rows, n_perf(w.bw, w.n_resources) - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(sim.volume > 0, sim.io_time * b_perf / sim.volume, np.nan)
    rho_io = b_perf / alloc_bandwidth(w, alloc)
    return {"rho": rho, "rho_io": rho_io, "rho_con": rho - rho_io}


def occupancy(sim: SimResult) -> np.ndarray:
    """I/O-res-occ O_i: share of [0, t_end] during which resource i moves data.

    ``sim``: a simulation's result.
    """
    return sim.busy / sim.t_end


def evaluate(w: Workload, alloc: np.ndarray, sim: SimResult) -> dict[str, float]:
    """Mean/Max-I/O-SlowDown (Eq. 4) and their rho_io / rho_con parts, I/O-spread (Eq. 5),
    Machine-IdleTime = sum_j L_j Q_j / (t Q_cpu), all over [0, t_end].

    ``w``: the workload; ``alloc``: resources per application; ``sim``: the simulation of its
    schedule.
    """
    s = slowdowns(w, alloc, sim)
    ok = np.isfinite(s["rho"])
    occ = occupancy(sim)
    return {
        "mean_slowdown": float(s["rho"][ok].mean()),
        "max_slowdown": float(s["rho"][ok].max()),
        "mean_rho_io": float(s["rho_io"][ok].mean()),
        "mean_rho_con": float(s["rho_con"][ok].mean()),
        "io_spread": float(occ.max() - occ.min()),
        "mean_occupancy": float(occ.mean()),
        "idle_time": float(np.sum(sim.io_time * w.q) / (sim.t_end * w.q_cpu)),
        "t_end": float(sim.t_end),
    }
