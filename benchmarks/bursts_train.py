"""Benchmark: ``bursts train`` with its defaults against the sequential training it replaced.

Runs, on one warehouse with a timeline (the Summit 2021 year in docs/bursts.md), in one
process:

1. today's default: :func:`iosight.bursts.train_bursts` with its defaults (lead mode,
   feature set 4, every model, decision cuts tuned on a validation slice, no
   hyper-parameter search, tasks on every core as threads) and the forecasters saved;
2. the previous sequential training, the same library in the previous configuration:
   one task at a time (``n_jobs=1``), feature set 3 (no jobs table), a randomized search
   of 4 candidates over 3 time-series folds per model and task (the old default), the
   same leads, no forecaster saved (that alone took as long again).

It prints wall time, CPU time (every thread) and their ratio for each, the wall-time
ratio, the load average seen before and after (the machine may be shared), and, per
direction and lead, the F1 of persistence and of the candidate chosen on validation.

    python benchmarks/bursts_train.py -w summit-wh
    python benchmarks/bursts_train.py -w summit-wh --quick   # leads 30 and 120 min only
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def _run(label: str, fn) -> tuple[float, float, object]:
    load = os.getloadavg()
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    print(
        f"{label}: wall {wall:,.1f} s, CPU {cpu:,.1f} s ({cpu / wall:.2f} cores busy); "
        f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    return wall, cpu, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--warehouse", required=True, help="warehouse with a timeline")
    ap.add_argument("--quick", action="store_true", help="leads 30 and 120 min only")
    ap.add_argument("--skip-sequential", action="store_true", help="only the new default")
    args = ap.parse_args()

    from iosight.bursts import evaluate_forecasts, train_bursts
    from iosight.timeline import load_timeline
    from iosight.warehouse import Warehouse

    horizons = [30, 120] if args.quick else [5, 15, 30, 60, 120]
    src = Warehouse(args.warehouse)
    print(f"{os.cpu_count()} cores; horizons {horizons} min; warehouse {src.path}")
    with tempfile.TemporaryDirectory() as tmp:
        # the new default saves forecasters: train on a copy so the warehouse is untouched
        wh = Warehouse(os.path.join(tmp, "wh"))
        for name in ("jobs", "job_totals", "timeline", "posix", "stdio"):
            if src.has_table(name):
                wh.write_table(name, src.table(name))
        new_wall, new_cpu, res = _run(
            "default train (parallel, set 4, cuts on validation)",
            lambda: train_bursts(wh, horizons=horizons),
        )
    ev = res.evaluation
    for (d, h), g in ev.groupby(["direction", "horizon_min"]):
        g = g.set_index("model")
        print(
            f"  {d:5s} {h:5.0f} min: persistence F1 {g.loc['persistence', 'f1']:.3f}, "
            f"chosen ({g.loc['chosen', 'chosen']}) {g.loc['chosen', 'f1']:.3f}"
        )
    if args.skip_sequential:
        return
    df = load_timeline(src)
    old_wall, old_cpu, _ = _run(
        "previous sequential training (set 3, search 4x3 folds, one task at a time)",
        lambda: evaluate_forecasts(df, modes="lead", horizons=horizons, search_iter=4, n_jobs=1),
    )
    print(f"wall-time ratio previous / default: {old_wall / new_wall:.1f}x; "
          f"CPU-time ratio: {old_cpu / new_cpu:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
