"""Workload generator of Bandet et al. (2024), §V-C."""

from __future__ import annotations

import numpy as np

from iosight._errors import check_param
from iosight.iosched._curves import CurveSet
from iosight.iosched._model import Workload

HORIZON = 5000.0  # T_cpu + T_cf_io(1), seconds
SIZE_CLASSES = ((0.10, 0.75), (0.30, 0.20), (0.60, 0.05))  # (share of apps, share of Q_cpu)


#: Slack on the bound Theta N / K <= 1 for loads rounded to 3 decimals.
_LOAD_TOL = 1e-9


def check_load(name: str, theta: float, k: int, n_resources: int) -> None:
    """Refuse a target load the generator cannot produce: Theta N / K is the mean
    I/O-Stress(j, 1) of an application (§V-C), at most 1, so Theta <= K / N."""
    ok = 0 < theta and theta * n_resources <= k * (1 + _LOAD_TOL)
    check_param(
        name,
        theta,
        ok,
        f"positive and at most K / N = {k}/{n_resources} = {k / n_resources:.4g} (the workload"
        " generator of §V-C draws I/O-Stress(j, 1) with mean Theta N / K, which cannot"
        " exceed 1); raise K for higher loads",
    )


def x_bound(c: float) -> float:
    """The b > 0 solving log(1 + b) = b c, so that E[1/(1+X)] = c for X ~ U[0, b].

    Analytic through Lambert's W (lower branch): 1 + b = -W_{-1}(-c e^{-c}) / c.
    c = 1 has no positive root: b = 0 (every application is pure I/O); c > 1 is out
    of reach, since 1/(1+X) <= 1.

    ``c``: the target mean of 1/(1+X), in (0, 1].
    """
    check_param("c", c, 0 < c <= 1 + _LOAD_TOL, "in (0, 1]")
    if c >= 1:
        return 0.0
    from scipy.special import lambertw

    return float(np.real(-lambertw(-c * np.exp(-c), k=-1) / c) - 1.0)


def compute_sizes(k: int, q_cpu: int) -> np.ndarray:
    """Q_j: 10 % / 30 % / 60 % of the applications hold 75 % / 20 % / 5 % of Q_cpu.

    iosight's reading: class sizes are rounded (the small class takes the rest, the
    large one at least one app); each app of a class gets floor(share Q_cpu / count),
    at least 1.

    ``k``: applications; ``q_cpu``: the platform's compute resources.
    """
    n_large = max(1, round(SIZE_CLASSES[0][0] * k))
    n_medium = round(SIZE_CLASSES[1][0] * k)
    counts = [n_large, n_medium, k - n_large - n_medium]
    q = [
        np.full(c, max(1, int(share * q_cpu // c)))
        for c, (_, share) in zip(counts, SIZE_CLASSES, strict=True)
        if c > 0
    ]
    return np.concatenate(q).astype(np.int64)


def generate_workload(
    curves: CurveSet,
    *,
    theta: float,
    k: int = 40,
    n_resources: int = 20,
    q_cpu: int = 480,
    rng: np.random.Generator,
) -> tuple[Workload, np.ndarray]:
    """One application set with I/O-load(pi_1) = theta in expectation (§V-C).

    Returns the workload and the index of each application's curve in ``curves``.

    ``theta``: the target I/O-load; ``k``: applications; ``n_resources``: the platform's I/O
    resources N; ``q_cpu``: its compute resources Q_cpu; ``rng``: the random generator.
    """
    check_param("k", k, k >= 1, "a positive integer")
    check_param("n_resources", n_resources, n_resources >= 1, "a positive integer")
    check_load("theta", theta, k, n_resources)
    idx = rng.integers(0, len(curves.names), size=k)
    bw = curves.bw[idx, :]
    phases = rng.integers(2, 21, size=k)
    q = rng.permutation(compute_sizes(k, q_cpu))
    x = rng.uniform(0.0, x_bound(theta * n_resources / k), size=k)
    w = Workload(
        q=q,
        phases=phases,
        t_cpu=HORIZON * (1 - 1 / (1 + x)),
        v_io=HORIZON * bw[:, 0] / (1 + x),
        bw=bw,
        n_resources=n_resources,
        q_cpu=q_cpu,
        profile=tuple(curves.profiles[idx]),
        names=tuple(curves.names[i] for i in idx),
        bw0=None if curves.bw0 is None else curves.bw0[idx],
    )
    return w, idx
