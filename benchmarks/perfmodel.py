"""Benchmark: the model search of Xie et al. §IV-B (255 training sets x shrinkage 0..10).

iosight's search computes each training set's whole regularisation path in one
``lasso_path`` call (warm starts, precomputed Gram matrix) and runs training sets in
parallel; the baseline refits ``StandardScaler + Lasso(alpha)`` from scratch for every
(training set, shrinkage) cell. Both score the same validation set; the script prints both
times, the ratio and the largest disagreement between the two MSE grids.

Data: SYNTHETIC Titan samples from ``iosight.synth.writes`` (the paper's data is not public).

    python benchmarks/perfmodel.py            # full: 255 training sets x 41 shrinkage values
    python benchmarks/perfmodel.py --quick    # 16 random training sets, < 60 s
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="16 training sets, fewer samples")
    ap.add_argument("--jobs", type=int, default=1, help="parallel workers for the path search")
    ap.add_argument("--platform", default="titan", help="titan or cetus (or a YAML)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from iosight.perfmodel import (
        SHRINKAGE_GRID,
        all_subsets,
        compute_features,
        lasso_grid_search,
        load_platform,
        naive_grid_search,
        split_samples,
    )
    from iosight.synth.writes import WriteSimConfig, simulate_samples

    plat = load_platform(args.platform)
    per_scale = 25 if args.quick else 60
    _, samples = simulate_samples(
        plat, WriteSimConfig(patterns_per_scale=per_scale, seed=args.seed)
    )
    train, test = split_samples(samples)
    x = compute_features(plat, train).to_numpy(float)
    y = train["mean_time"].to_numpy(float)
    tx = compute_features(plat, test).to_numpy(float)
    ty = test["mean_time"].to_numpy(float)
    rng = np.random.default_rng(args.seed)
    val = rng.choice(len(ty), max(1, round(0.2 * len(ty))), replace=False)
    subsets = all_subsets(train["nodes"])
    if args.quick:
        subsets = [subsets[i] for i in rng.choice(len(subsets), 16, replace=False)]
    cells = len(subsets) * len(SHRINKAGE_GRID)
    print(
        f"SYNTHETIC {plat.name} samples: {len(y)} training, {len(val)} validation; "
        f"{len(subsets)} training sets x {len(SHRINKAGE_GRID)} shrinkage values = {cells} "
        "models"
    )

    t0 = time.perf_counter()
    fast = lasso_grid_search(
        x, y, train["nodes"].to_numpy(), tx[val], ty[val], subsets=subsets, n_jobs=args.jobs
    )
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = naive_grid_search(x, y, train["nodes"].to_numpy(), tx[val], ty[val], subsets=subsets)
    t_slow = time.perf_counter() - t0

    rel = np.abs(fast - slow) / np.maximum(np.abs(slow), 1e-12)
    best_fast = np.unravel_index(np.argmin(fast), fast.shape)
    best_slow = np.unravel_index(np.argmin(slow), slow.shape)
    print(f"path search (LARS path on the Gram, CD fallback, {args.jobs} jobs): {t_fast:8.2f} s")
    print(f"naive loop (one Lasso fit per cell):                {t_slow:8.2f} s")
    print(f"ratio naive / path: {t_slow / t_fast:.1f}x")
    worst = np.unravel_index(np.argmax(rel), rel.shape)
    print(
        f"MSE grids agree: median relative difference {np.median(rel):.2e}; same best cell: "
        f"{best_fast == best_slow} (best validation MSE {fast.min():.4g} path, "
        f"{slow.min():.4g} naive); worst cell: shrinkage {SHRINKAGE_GRID[worst[1]]:.3g}, "
        f"MSE {fast[worst]:.4g} (path) vs {slow[worst]:.4g} (naive)"
    )


if __name__ == "__main__":
    main()
