"""Event-driven vs time-stepped simulation of the same workloads (issue 7).

Both simulators run the same schedules of the same application sets (§V-C
generator, 40 applications, 20 I/O resources, Theta uniform in [0.1, 1.5]); the
script prints the CPU time of each side (``time.process_time``, so that other
processes on the machine do not skew the ratio). The ratio is set by the time step of
the time-stepped simulator, so it is reported as a trade-off: for each step, the CPU
ratio and the error of the time-stepped metrics against the exact event-driven ones.

    python benchmarks/iosched.py            # 100 workloads, steps 1, 2, 5, 10, 30 s
    python benchmarks/iosched.py --quick    # 10 workloads
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from iosight import IosightError
from iosight.iosched import (
    evaluate,
    generate_workload,
    ost_curves,
    resolve_curves,
    schedule,
    simulate_events,
    simulate_timestep,
)

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
    ap.add_argument("--dts", default="1,2,5,10,30", help="time steps of the reference (s)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--forge-dir", default=None, help="FORGE folder (else parametric OST)")
    args = ap.parse_args()
    n = 10 if args.quick else args.workloads
    dts = [float(x) for x in args.dts.split(",") if x]
    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    try:
        curves = resolve_curves("io-nodes", forge_dir=args.forge_dir)
    except IosightError:  # FORGE data not found: parametric curves
        curves = ost_curves()
    print(f"curves: {curves.source}; {n} workloads, 40 apps, 20 resources")
    rng = np.random.default_rng(args.seed)
    cases = []
    for i in range(n):
        w, _ = generate_workload(curves, theta=float(rng.uniform(0.1, 1.5)), rng=rng)
        alloc, pl = schedule(*PAIRS[i % len(PAIRS)], w, rng)
        cases.append((w, alloc, pl))

    t0 = time.process_time()
    ev = [simulate_events(*c) for c in cases]
    t_ev = time.process_time() - t0
    m_ev = _metrics(cases, ev)
    print(f"event-driven (exact fair share): {t_ev:8.3f} s CPU ({1e3 * t_ev / n:.2f} ms/workload)")
    print("time-stepped (the paper's simulator) by step: CPU time, ratio to event-driven, and")
    print("its error against the exact simulation (|time-stepped / event-driven - 1|, median")
    print("over workloads; worst metric of " + ", ".join(KEYS) + "):")
    print(f"  {'dt (s)':>7s} {'CPU s':>8s} {'ratio':>7s} {'median err':>11s} {'max err':>8s}")
    for dt in dts:
        t0 = time.process_time()
        ts = [simulate_timestep(*c, dt=dt) for c in cases]
        t_ts = time.process_time() - t0
        rel = np.abs(_metrics(cases, ts) / m_ev - 1)
        med = np.median(rel, axis=0)
        print(f"  {dt:7g} {t_ts:8.3f} {t_ts / t_ev:6.1f}x {100 * med.max():10.2f}% "
              f"{100 * rel.max():7.2f}%  (worst median: {KEYS[int(np.argmax(med))]})")  # fmt: skip
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
