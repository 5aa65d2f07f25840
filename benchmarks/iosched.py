"""Event-driven vs time-stepped simulation of the same workloads (issue 7).

Both simulators run the same schedules of the same application sets (§V-C
generator, 40 applications, 20 I/O resources, Theta uniform in [0.1, 1.5]); the
script prints the CPU time of each side (``time.process_time``, so that other
processes on the machine do not skew the ratio), the ratio, and how far their metrics are apart.

    python benchmarks/iosched.py            # 100 workloads, 1 s steps
    python benchmarks/iosched.py --quick    # 10 workloads (< 60 s)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from iosight import IosightError
from iosight.sched.ioresources import (
    evaluate,
    generate_workload,
    ost_curves,
    schedule,
    simulate_events,
    simulate_timestep,
)
from iosight.sched.ioresources._experiment import resolve_curves

PAIRS = [("TCPU", "Greedy-NC"), ("BestBdw", "Greedy-C"), ("Static", "Random"), ("MCKP", "MCKP")]
KEYS = ("mean_slowdown", "max_slowdown", "idle_time", "io_spread", "t_end")


def _metrics(cases, sims) -> np.ndarray:
    return np.array(
        [[evaluate(c[0], c[1], s)[k] for k in KEYS] for c, s in zip(cases, sims, strict=True)]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="10 workloads")
    ap.add_argument("--dt", type=float, default=1.0, help="time step of the reference (s)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--forge-dir", default=None, help="FORGE folder (else parametric OST)")
    args = ap.parse_args()
    n = 10 if args.quick else args.workloads
    try:
        curves = resolve_curves("io-nodes", forge_dir=args.forge_dir)
    except IosightError:  # FORGE data not found: parametric curves
        curves = ost_curves()
    print(f"curves: {curves.source}; {n} workloads, 40 apps, 20 resources, dt = {args.dt} s")
    rng = np.random.default_rng(args.seed)
    cases = []
    for i in range(n):
        w, _ = generate_workload(curves, theta=float(rng.uniform(0.1, 1.5)), rng=rng)
        alloc, pl = schedule(*PAIRS[i % len(PAIRS)], w, rng)
        cases.append((w, alloc, pl))

    t0 = time.process_time()
    ev = [simulate_events(*c) for c in cases]
    t_ev = time.process_time() - t0
    t0 = time.process_time()
    ts = [simulate_timestep(*c, dt=args.dt) for c in cases]
    t_ts = time.process_time() - t0

    print(f"event-driven (exact fair share): {t_ev:8.3f} s  ({1e3 * t_ev / n:.2f} ms/workload)")
    print(f"time-stepped (paper, alternate): {t_ts:8.3f} s  ({1e3 * t_ts / n:.1f} ms/workload)")
    print(f"ratio time-stepped / event-driven: {t_ts / t_ev:.0f}x (target >= 100x)")
    m_ev = _metrics(cases, ev)
    m_ts = _metrics(cases, ts)
    rel = m_ts / m_ev - 1
    print("agreement (time-stepped / event-driven - 1):")
    print(f"  {'metric':14s} {'median |.|':>10s} {'max |.|':>8s} {'mean of means':>14s}")
    for j, k in enumerate(KEYS):
        means = m_ts[:, j].mean() / m_ev[:, j].mean() - 1
        print(
            f"  {k:14s} {100 * np.median(np.abs(rel[:, j])):9.2f}% "
            f"{100 * np.abs(rel[:, j]).max():7.2f}% {100 * means:+13.2f}%"
        )


if __name__ == "__main__":
    main()
