"""Benchmark: the model search of Xie et al. §IV-B (255 training sets x shrinkage 0..10).

iosight's search solves every (training set, shrinkage) cell exactly (LARS support, solve on
the support, optimality checked). The fair baseline is what a competent user writes: one
scikit-learn ``lasso_path`` per training set (coordinate descent, warm starts, precomputed
Gram, tolerance 1e-6) plus ``LinearRegression`` for shrinkage 0, on the same standardised,
independent columns. The weak baseline (one ``Lasso`` fit per cell from scratch) is an
extra, labelled column (``--naive``). Times are process CPU seconds (the machine is shared),
both sides on one core. The script also reports how far each grid is from the exact one.

Data: SYNTHETIC Titan samples from ``iosight.synth.writes`` (the paper's data is not public).

    python benchmarks/perfmodel.py            # full: 255 training sets x 41 shrinkage values
    python benchmarks/perfmodel.py --quick    # 32 random training sets
    python benchmarks/perfmodel.py --verify-all   # full grid vs one tight fit per cell (slow)
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np


def lasso_path_search(x, y, scale, x_val, y_val, subsets, alphas, tol=1e-6):
    """The fair baseline: ``lasso_path`` per training set (warm starts, Gram), OLS at 0."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LinearRegression, lasso_path
    from sklearn.preprocessing import StandardScaler

    from iosight.perfmodel import independent_columns

    out = np.empty((len(subsets), len(alphas)))
    pos = alphas > 0
    order = np.argsort(-alphas[pos])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for i, sub in enumerate(subsets):
            m = np.isin(scale, sub)
            scaler = StandardScaler().fit(x[m])
            xs = scaler.transform(x[m])
            keep = independent_columns(xs)
            xs, xv = xs[:, keep], scaler.transform(x_val)[:, keep]
            xm, ym = xs.mean(axis=0), y[m].mean()
            _, coefs, _ = lasso_path(
                xs - xm, y[m] - ym, alphas=alphas[pos][order], precompute=True, tol=tol,
                max_iter=100_000,
            )  # fmt: skip
            pred = (xv - xm) @ coefs + ym
            mse = np.mean((pred - y_val[:, None]) ** 2, axis=0)
            out[i, np.flatnonzero(pos)[order]] = mse
            ols = LinearRegression().fit(xs, y[m])
            out[i, ~pos] = np.mean((ols.predict(xv) - y_val) ** 2)
    return out


def agreement(name: str, grid: np.ndarray, exact: np.ndarray) -> None:
    rel = np.abs(grid - exact) / exact
    best = np.unravel_index(np.argmin(grid), grid.shape)
    print(
        f"  {name:<28} vs exact: median relative MSE difference {np.median(rel):.1e}, "
        f"max {rel.max():.1e}; cells within 1e-6: {np.mean(rel <= 1e-6):.1%}; "
        f"best cell {tuple(int(v) for v in best)}"
    )


def verify_all(x, y, scale, x_val, y_val, subsets, exact: np.ndarray) -> bool:
    """Every cell against an independent, tightly converged scikit-learn fit.

    The reference is ``naive_grid_search`` with ``Lasso(tol=1e-12, max_iter=300_000)`` and
    ``LinearRegression`` at shrinkage 0. Passes (the criterion of the slow test, on every
    training set) when the best cell is the same, shrinkage 0 agrees to 1e-9 and every cell
    where coordinate descent converged agrees to 1e-6 relative.
    """
    from iosight.perfmodel import naive_grid_search

    t0 = time.process_time()
    ref, conv = naive_grid_search(x, y, scale, x_val, y_val, subsets=subsets, tol=1e-12,
                                  max_iter=300_000, with_converged=True)  # fmt: skip
    took = time.process_time() - t0
    rel = np.abs(exact - ref) / ref
    best, ref_best = (tuple(int(v) for v in np.unravel_index(np.argmin(g), g.shape))
                      for g in (exact, ref))  # fmt: skip
    ok = bool(rel[conv].max() <= 1e-6 and rel[:, 0].max() <= 1e-9 and best == ref_best)
    print(
        f"verify-all: {len(subsets)} training sets x {exact.shape[1]} shrinkage values = "
        f"{exact.size} cells against independent fits ({took:.0f} s CPU); coordinate descent "
        f"converged on {conv.sum()} cells: max relative MSE difference there "
        f"{rel[conv].max():.1e} (shrinkage 0: {rel[:, 0].max():.1e}); over all cells median "
        f"{np.median(rel):.1e}, max {rel.max():.1e}; best cell "
        f"{best} vs {ref_best}: {'same' if best == ref_best else 'DIFFERENT'}; "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return ok


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="32 random training sets")
    ap.add_argument("--naive", action="store_true", help="also time one Lasso fit per cell")
    ap.add_argument("--platform", default="titan", help="titan or cetus (or a YAML)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--verify-all", action="store_true", help="also check every cell against a tight fit"
    )
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

    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    plat = load_platform(args.platform)
    _, samples = simulate_samples(plat, WriteSimConfig(patterns_per_scale=60, seed=args.seed))
    train, test = split_samples(samples)
    x = compute_features(plat, train).to_numpy(float)
    y = train["mean_time"].to_numpy(float)
    tx = compute_features(plat, test).to_numpy(float)
    ty = test["mean_time"].to_numpy(float)
    scale = train["nodes"].to_numpy()
    rng = np.random.default_rng(args.seed)
    val = rng.choice(len(ty), max(1, round(0.2 * len(ty))), replace=False)
    xv, yv = tx[val], ty[val]
    subsets = all_subsets(scale)
    if args.quick:
        subsets = [subsets[i] for i in sorted(rng.choice(len(subsets), 32, replace=False))]
    a = SHRINKAGE_GRID
    print(
        f"SYNTHETIC {plat.name} samples: {len(y)} training, {len(val)} validation; "
        f"{len(subsets)} training sets x {len(a)} shrinkage values = {len(subsets) * len(a)} "
        "models"
    )

    t0 = time.process_time()
    exact = lasso_grid_search(x, y, scale, xv, yv, subsets=subsets, workers=1)  # one core
    t_exact = time.process_time() - t0
    t0 = time.process_time()
    path = lasso_path_search(x, y, scale, xv, yv, subsets, a)
    t_path = time.process_time() - t0
    print(f"iosight exact search:                 {t_exact:8.2f} s CPU")
    print(f"fair baseline lasso_path (tol 1e-6):  {t_path:8.2f} s CPU")
    print(f"ratio lasso_path / iosight: {t_path / t_exact:.1f}x")
    if args.naive:
        t0 = time.process_time()
        naive = naive_grid_search(x, y, scale, xv, yv, subsets=subsets)
        t_naive = time.process_time() - t0
        print(f"(weak baseline) one Lasso per cell:   {t_naive:8.2f} s CPU, ratio "
              f"{t_naive / t_exact:.1f}x")  # fmt: skip
    best = tuple(int(v) for v in np.unravel_index(np.argmin(exact), exact.shape))
    print(f"exact best cell {best}, validation MSE {exact.min():.6g}")
    agreement("lasso_path (tol 1e-6)", path, exact)
    if args.naive:
        agreement("one Lasso per cell (tol 1e-6)", naive, exact)
    ok = verify_all(x, y, scale, xv, yv, subsets, exact) if args.verify_all else True
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
