"""Figures and the conclusions table of the I/O-resource scheduling study (§VI).

Figures are equivalents of Fig. 5-13 of Bandet, Boito, Pallez (2024), drawn from the
Parquet results of :func:`iosight.iosched.run_experiment`; the HTML page
embeds them with the table that checks the paper's conclusions on our runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from iosight._errors import IosightError
from iosight.iosched import conclusions, findings_frame, load_results, resolve_curves
from iosight.report._html import html_table, img_tag, report_dir, subplots, write_page

ALLOC_ORDER = ["BestBdw", "Nsys", "TCPU", "Static", "Random", "MCKP", "MCKP-0"]
PLACE_ORDER = ["Greedy-C", "Greedy-NC", "Random"]
BIN = 0.1
LOW, HIGH = (0.0, 0.3), (1.0, np.inf)  # I/O-load(pi_sys) ranges of "low" and "high" load
MIN_SETS = 10  # bins with fewer sets are not drawn


def _binned(df: pd.DataFrame, value: str, by: str, min_sets: int = MIN_SETS) -> pd.DataFrame:
    """Mean, 10th and 90th percentiles of ``value`` per I/O-load(pi_sys) bin and ``by``."""
    d = df.assign(x=(np.floor(df["io_load_sys"] / BIN) + 0.5) * BIN)
    g = d.groupby([by, "x"])[value]
    out = g.agg(mean="mean", n="size").join(g.quantile(0.1).rename("p10"))
    out = out.join(g.quantile(0.9).rename("p90")).reset_index()
    return out[out["n"] >= min_sets]


def _lines(ax, df, value: str, by: str, order: list[str], band: bool = True, min_sets: int = 1):
    b = _binned(df, value, by, min_sets)
    for name in [o for o in order if o in set(b[by])]:
        s = b[b[by] == name]
        ax.plot(s["x"], s["mean"], marker=".", label=name)
        if band:
            ax.fill_between(s["x"], s["p10"], s["p90"], alpha=0.15)
    ax.set_xlabel("I/O-load(π_sys)")
    ax.grid(alpha=0.3)


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend()


def _in(df: pd.DataFrame, lo: float, hi: float) -> pd.DataFrame:
    return df[(df["io_load_sys"] >= lo) & (df["io_load_sys"] < hi)]


def _gnc(df: pd.DataFrame) -> pd.DataFrame:
    """Greedy-Non-Clairvoyant runs plus MCKP (the paper's choice after §VI-A1)."""
    return df[df["placement"].isin(["Greedy-NC", "MCKP", "MCKP-0"])]


def _figures(acc, rob, ost, curves: tuple, out: Path, min_sets: int):
    """Figs. 5-13 of Bez et al. (2023) from the study's results, as PNGs in ``out``;
    (path, title) of each written (the optional ones only with their data)."""
    figs = [
        _fig_mean_slowdown(acc, min_sets),
        _fig_io_spread(acc),
        _fig_io_spread_bestbdw(acc),
        _fig_slowdown_ranges(acc),
        _fig_rho_split(acc, min_sets),
        _fig_idle_time(acc, min_sets),
    ]
    figs += [_fig_profile_fits(curves[0])] if curves else []
    figs += [_fig_robustness(acc, rob, min_sets)] if len(rob) else []
    figs += [_fig_ost(ost, min_sets)] if len(ost) else []
    written = []
    for name, title, fig in figs:
        fig.suptitle(title)
        fig.tight_layout()
        path = out / f"{name}.png"
        fig.savefig(path, dpi=90)
        written.append((path, title))
    return written


def _fig_mean_slowdown(acc, min_sets: int) -> tuple[str, str, object]:
    fig, axes = subplots(1, 3, figsize=(15, 4), sharey=True)
    for ax, pl in zip(axes, PLACE_ORDER, strict=True):
        d = acc[(acc["placement"] == pl) | acc["allocator"].isin(["MCKP", "MCKP-0"])]
        _lines(ax, d, "mean_slowdown", "allocator", ALLOC_ORDER, min_sets=min_sets)
        ax.set_title(pl)
    axes[0].set_ylabel("Mean-I/O-SlowDown")
    _legend(axes[0])
    return "fig05_mean_slowdown", "Fig. 5: Mean-I/O-SlowDown (mean, 10-90th pct.)", fig


def _fig_io_spread(acc) -> tuple[str, str, object]:
    fig, axes = subplots(1, 3, figsize=(15, 4), sharey=True)
    mid = _in(acc, 0.45, 0.55)
    for ax, al in zip(axes, ["BestBdw", "Nsys", "Random"], strict=True):
        d = mid[mid["allocator"] == al]
        ax.boxplot([d[d["placement"] == p]["io_spread"] for p in PLACE_ORDER])
        ax.set_xticks(range(1, 4), PLACE_ORDER)
        ax.set_title(f"{al} (n = {len(d) // 3} sets)")
    axes[0].set_ylabel("I/O-spread")
    return "fig06_io_spread_0.5", "Fig. 6: I/O-spread at I/O-load(π_sys) = 0.5 ± 0.05", fig


def _fig_io_spread_bestbdw(acc) -> tuple[str, str, object]:
    fig, axes = subplots(1, 3, figsize=(15, 4), sharey=True)
    best = acc[acc["allocator"] == "BestBdw"]
    for ax, c in zip(axes, (0.2, 0.5, 0.8), strict=True):
        d = _in(best, c - 0.05, c + 0.05).groupby("placement")["io_spread"]
        m, ci = d.mean().reindex(PLACE_ORDER), 1.96 * d.sem().reindex(PLACE_ORDER)
        ax.errorbar(range(3), m, yerr=ci, marker="o", capsize=4)
        ax.set_xticks(range(3), PLACE_ORDER)
        ax.set_title(f"BestBdw, I/O-load(π_sys) = {c} ± 0.05")
    axes[0].set_ylabel("I/O-spread (mean, 95% CI)")
    return "fig07_io_spread_bestbdw", "Fig. 7: I/O-spread with BestBdw", fig


def _fig_slowdown_ranges(acc) -> tuple[str, str, object]:
    fig, axes = subplots(2, 2, figsize=(12, 8))
    g = _gnc(acc)
    for col, (lo, hi) in enumerate((LOW, HIGH)):
        d = _in(g, lo, hi)
        for row, metric in enumerate(("mean_slowdown", "max_slowdown")):
            ax = axes[row, col]
            ax.set_title(f"{metric}, I/O-load(π_sys) in [{lo}, {hi})")
            if d.empty:  # a small study may have no run in this load range
                ax.text(0.5, 0.5, "no runs in this load range", ha="center", transform=ax.transAxes)
                continue
            ax.boxplot([d[d["allocator"] == a][metric] for a in ALLOC_ORDER], showfliers=False)
            ax.set_xticks(range(1, len(ALLOC_ORDER) + 1), ALLOC_ORDER)
            ax.set_yscale("log")
    return "fig08_slowdown_ranges", "Fig. 8: Mean/Max-I/O-SlowDown, low and high load", fig


def _fig_rho_split(acc, min_sets: int) -> tuple[str, str, object]:
    fig, axes = subplots(1, 2, figsize=(12, 4))
    for ax, metric in zip(axes, ("mean_rho_io", "mean_rho_con"), strict=True):
        _lines(ax, _gnc(acc), metric, "allocator", ALLOC_ORDER, min_sets=min_sets)
        ax.set_title(f"{metric} (mean per 0.1 bin, 10-90th pct.)")
    _legend(axes[0])
    return "fig09_rho_split", "Fig. 9: ρ_io and ρ_con vs I/O-load(π_sys)", fig


def _fig_idle_time(acc, min_sets: int) -> tuple[str, str, object]:
    fig, ax = subplots(figsize=(7, 4))
    _lines(ax, _gnc(acc), "idle_time", "allocator", ALLOC_ORDER, band=False, min_sets=min_sets)
    ax.set_ylabel("Machine-IdleTime")
    _legend(ax)
    return "fig10_idle_time", "Fig. 10: Machine-IdleTime (Greedy-NC)", fig


def _fig_profile_fits(curves) -> tuple[str, str, object]:
    from iosight.iosched import profile_fits

    prof = curves.profiles
    fits = profile_fits(curves.bw, prof)
    fig, axes = subplots(1, len(fits), figsize=(4 * len(fits), 3.5))
    n = np.arange(1, curves.bw.shape[1] + 1)
    for ax, (p, fit) in zip(np.atleast_1d(axes), fits.items(), strict=True):
        rows = curves.bw[prof == p]
        ax.plot(n, (rows / rows[:, :1]).T, color="grey", alpha=0.3, lw=0.7)
        ax.plot(n, fit, color="red", lw=2)
        ax.set_title(f"{p} ({len(rows)} curves)")
        ax.set_xlabel("n")
    np.atleast_1d(axes)[0].set_ylabel("b(n) / b(1)")
    return "fig11_profile_fits", f"Fig. 11: profile fits, {curves.source}", fig


def _fig_robustness(acc, rob, min_sets: int) -> tuple[str, str, object]:
    fig, axes = subplots(1, 2, figsize=(12, 4))
    for pair, d in _robust_change(acc, rob).groupby("pair"):
        b = _binned(d.assign(k=pair), "change_pct", "k", min_sets)
        axes[0].plot(b["x"], b["mean"], marker=".", label=pair)
    axes[0].set_ylabel("Mean-I/O-SlowDown change with profile curves (%)")
    _legend(axes[0])
    r = rob.assign(pair=rob["allocator"] + "+" + rob["placement"])
    _lines(axes[1], r, "idle_time", "pair", sorted(set(r["pair"])), band=False, min_sets=min_sets)
    axes[1].set_ylabel("Machine-IdleTime (profile curves)")
    _legend(axes[1])
    axes[0].set_xlabel("I/O-load(π_sys)")
    axes[0].grid(alpha=0.3)
    return "fig12_robustness", "Fig. 12: robustness to profile-level curves", fig


def _fig_ost(ost, min_sets: int) -> tuple[str, str, object]:
    fig, axes = subplots(1, 2, figsize=(12, 4))
    og = _gnc(ost)
    _lines(axes[0], og, "mean_slowdown", "allocator", ALLOC_ORDER, min_sets=min_sets)
    axes[0].set_ylabel("Mean-I/O-SlowDown")
    _lines(axes[1], og, "idle_time", "allocator", ALLOC_ORDER, min_sets=min_sets)
    axes[1].set_ylabel("Machine-IdleTime")
    _legend(axes[0])
    return "fig13_ost", "Fig. 13: OST case (PARAMETRIC curves), Greedy-NC", fig


def _with_case(results: pd.DataFrame) -> pd.DataFrame:
    return results if "case" in results else results.assign(case=results["dataset"])


def _n_sets(df: pd.DataFrame) -> int:
    return len(df[["theta", "set"]].drop_duplicates())


def _sets_per_case(results: pd.DataFrame) -> dict[str, int]:
    return {str(c): _n_sets(d) for c, d in results.groupby("case", sort=False)}


def _robust_change(acc: pd.DataFrame, rob: pd.DataFrame) -> pd.DataFrame:
    """Relative change (%) of Mean-I/O-SlowDown with profile curves, per set and pair."""
    key = ["case", "theta", "set", "allocator", "placement"]
    m = rob.merge(acc[[*key, "mean_slowdown"]], on=key, suffixes=("", "_exact"))
    m["change_pct"] = 100 * (m["mean_slowdown"] / m["mean_slowdown_exact"] - 1)
    m["pair"] = m["allocator"] + "+" + m["placement"]
    return m


def summary(results: pd.DataFrame, *, width: float = 0.3) -> pd.DataFrame:
    """Mean of the main metrics per case, study, heuristic pair and I/O-load(π_sys) bin
    of ``width`` (the numbers behind the figures)."""
    d = _with_case(results)
    d = d.assign(load_bin=np.floor(d["io_load_sys"] / width) * width)
    keys = ["case", "study", "allocator", "placement", "load_bin"]
    metrics = ["mean_slowdown", "max_slowdown", "mean_rho_io", "mean_rho_con"]
    metrics += ["io_spread", "idle_time"]
    out = d.groupby(keys)[metrics].mean()
    out["sets"] = d.groupby(keys).size()
    return out.reset_index().round(4)


def profile_table(curves) -> pd.DataFrame:
    """Per profile family: curves, their most common own n_perf (and its share), the
    fitted n_perf, the share of curves keeping their n_perf under the family fit, the
    bandwidth kept, b(fitted n_perf) / b(n_perf), and the share of super-linear curves
    (b(n) > n b(1) for some n; only those can have n_sys > 1)."""
    from iosight.iosched import profile_estimates

    prof = curves.profiles
    est = profile_estimates(curves.bw, prof)
    own, fit = np.nanargmax(curves.bw, axis=1), np.nanargmax(est, axis=1)
    kept = curves.bw[np.arange(len(own)), fit] / np.nanmax(curves.bw, axis=1)
    n = np.arange(1, curves.bw.shape[1] + 1)
    superlinear = (curves.bw > n * curves.bw[:, :1] * (1 + 1e-12)).any(axis=1)
    d = pd.DataFrame(
        {
            "curve_set": curves.source,
            "profile": prof,
            "same": own == fit,
            "kept": kept,
            "n_fit": fit + 1,
            "n_own": own + 1,
            "superlinear": superlinear,
        }
    )
    out = d.groupby(["curve_set", "profile"]).agg(
        curves=("same", "size"),
        own_n_perf_mode=("n_own", lambda x: int(x.mode().iloc[0])),
        own_n_perf_at_mode=("n_own", lambda x: float((x == x.mode().iloc[0]).mean())),
        fitted_n_perf=("n_fit", "first"),
        same_n_perf=("same", "mean"),
        bandwidth_kept=("kept", "mean"),
        superlinear=("superlinear", "mean"),
    )
    return out.reset_index().round(3)


def write_report(
    source: pd.DataFrame | Sequence[str | Path],
    out: str | Path,
    *,
    curves: tuple = (),
    min_sets: int = MIN_SETS,
    forge_dir: Path | None = None,
) -> Path:
    """Write figures (PNG), ``conclusions.csv``, ``iosched-summary.csv`` (and
    ``profiles.csv`` with curves) and ``iosched.html`` into ``out``; return the HTML path.

    ``source`` holds the rows of one or more studies (column ``case``, else ``dataset``),
    or names the results folders of ``iosight iosched experiment``; Fig. 5-12 show the
    first case, Fig. 13 the OST rows. ``curves`` (CurveSets) go into ``profiles.csv``,
    the first one into Fig. 11; from folders without ``curves``, the FORGE curves (under
    ``forge_dir``) when they can be found. Load bins with fewer than ``min_sets``
    application sets are left out.
    """
    out = report_dir(out)
    results = source
    if not isinstance(source, pd.DataFrame):
        results = _load_folders(source)
        curves = curves or _forge_curves(forge_dir)
    need = {"dataset", "study", "allocator", "placement", "io_load_sys", "mean_slowdown"}
    if not need <= set(results.columns):
        raise IosightError(f"results lack columns {sorted(need - set(results.columns))}")
    results = _with_case(results)
    main = results[results["case"] == results["case"].iloc[0]]
    ost = results[(results["dataset"] == "ost") & (results["study"] == "accurate")]
    acc, rob = main[main["study"] == "accurate"], main[main["study"] == "robust"]
    written = _figures(acc, rob, ost, curves, out, min_sets)
    table = findings_frame(conclusions(results, min_sets=min_sets))
    table.to_csv(out / "conclusions.csv", index=False)
    summary(results).to_csv(out / "iosched-summary.csv", index=False)
    profiles = pd.concat([profile_table(c) for c in curves]) if curves else None
    if profiles is not None:
        profiles.to_csv(out / "profiles.csv", index=False)
    parts = [
        "<h1>Scheduling distributed I/O resources (Bandet, Boito, Pallez)</h1>",
        f"<p>Fig. 5-12: {main['case'].iloc[0]}; application sets per case: "
        f"{_sets_per_case(results)}"
        f"; {len(results)} simulated schedules. OST curves are PARAMETRIC.</p>",
        "<h2>The paper's conclusions on our runs</h2>",
        "<p>Paired relative differences 100 (A / B - 1) per load bin of I/O-load(π_sys): "
        "mean [95% confidence interval] (application sets).</p>",
        html_table(table),
    ]
    if profiles is not None:
        parts += ["<h2>Profile families (robustness study)</h2>", html_table(profiles)]
    for path, title in written:
        parts.append(f"<h2>{title}</h2>{img_tag(path.read_bytes(), path.name)}")
    return write_page(out, "iosched", "iosight iosched report", "\n".join(parts))


def _load_folders(folders: Sequence[str | Path]) -> pd.DataFrame:
    """The rows of every results folder of ``iosight iosched experiment``, in order."""
    if not folders:
        raise IosightError("no results to report on")
    return pd.concat([load_results(Path(f)) for f in folders], ignore_index=True)


def _forge_curves(forge_dir: Path | None) -> tuple:
    """The interpolated and measured FORGE I/O-node curves, or none when not found."""
    try:
        return tuple(
            resolve_curves("io-nodes", forge_dir=forge_dir, grid=g)
            for g in ("interpolated", "measured")
        )
    except IosightError:
        return ()
