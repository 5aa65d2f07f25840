"""Report of the burst-aware scheduling simulation: Fig. 10 and 11 of §V-B, as HTML + PNG.

Writes into a directory: ``schedule-summary.csv`` (mean delay, run time and total time per app
and policy), ``fig10_means.png``, ``fig11_cdf_<app>.png``, optionally ``emulation.csv`` and
``fig9_emulation.png``, and ``schedule.html`` embedding them. Synthetic data is labelled.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from iosight.report._html import (
    fig_png,
    html_table,
    img_tag,
    report_dir,
    subplots,
    write_page,
)

if TYPE_CHECKING:
    import pandas as pd

    from iosight.schedule import EmulationResult, ScheduleSimulation

_METRIC_LABELS = {"delay": "delay (s)", "run_time": "run time (s)", "total_time": "total time (s)"}


def _fig10(sim: ScheduleSimulation, note: str):
    import numpy as np

    summary = sim.summary()
    apps = list(dict.fromkeys(summary["app"].astype(str)))
    fig, axes = subplots(
        1, len(apps), figsize=(4.2 * len(apps), 3.4), squeeze=False, layout="constrained"
    )
    for ax, app in zip(axes[0], apps, strict=True):
        rows = summary[summary["app"].astype(str) == app]
        x = np.arange(len(rows))
        for j, metric in enumerate(("delay", "run_time", "total_time")):
            ax.bar(x + (j - 1) * 0.27, rows[f"mean_{metric}"], 0.27, label=_METRIC_LABELS[metric])
        ax.set_xticks(x, rows["policy"].astype(str))
        ax.set_title(f"{app}")
        ax.set_ylabel("mean seconds")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"Mean delay, run time and total time per policy (Fig. 10){note}", fontsize=10)
    return fig


def _fig11(sim: ScheduleSimulation, app: str, note: str):
    fig, axes = subplots(1, 3, figsize=(12.6, 3.4), layout="constrained")
    for ax, metric in zip(axes, ("delay", "run_time", "total_time"), strict=True):
        cdf = sim.cdf(metric, app)
        for policy, g in cdf.groupby("policy", sort=False, observed=True):
            ax.step(g["value"], g["fraction"], where="post", label=str(policy))
        ax.set_xlabel(_METRIC_LABELS[metric])
        ax.set_ylabel("fraction of windows")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"CDF over windows, app {app} (Fig. 11){note}", fontsize=10)
    return fig


def _fig9(emu: EmulationResult):
    import numpy as np

    runs = emu.runs
    x = np.arange(len(runs))
    fig, ax = subplots(figsize=(max(6.0, 0.6 * len(runs)), 3.4), layout="constrained")
    ax.bar(x - 0.2, runs["est_bins_s"], 0.4, label="estimate (Algorithm 1)")
    ax.bar(x + 0.2, runs["measured_s"], 0.4, label="measured")
    ax.set_xticks(x, [f"{p[:8]}..@{o}" for p, o in zip(runs.pattern, runs.option, strict=True)])
    ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    ax.set_ylabel("run time (s, scaled bins)")
    ax.legend(fontsize=8)
    ax.set_title("Emulated job: estimated vs measured run time (Fig. 9)", fontsize=10)
    return fig


def write_report(
    source: ScheduleSimulation,
    out: str | Path,
    *,
    title: str = "Burst-aware start times",
    emulation: EmulationResult | None = None,
    comparison: pd.DataFrame | None = None,
) -> Path:
    """Write the tables and figures of the simulation ``source`` (and an ``emulation``)
    into ``out``, under ``title``.

    ``comparison`` is :meth:`ForecastStudy.summary` when ``sim`` chose its starts on a
    model's forecasts; it is written as ``forecast_vs_oracle.csv`` and a table.
    Returns the path of ``schedule.html``.
    """
    sim, out = source, report_dir(out)
    data = sim.settings.get("data", "")
    note = f" - data: {data}" if data and data != "real" else ""
    said = f"Data: {html.escape(data)}. " if data else ""
    summary = sim.summary()
    summary.to_csv(out / "schedule-summary.csv", index=False)
    figures: list[tuple[str, str, bytes]] = []
    means = fig_png(_fig10(sim, note), 110)
    figures.append(("fig10_means.png", "Fig. 10: means per policy", means))
    for app in dict.fromkeys(summary["app"].astype(str)):
        cdf = fig_png(_fig11(sim, app, note), 110)
        figures.append((f"fig11_cdf_{app}.png", f"Fig. 11: CDFs, app {app}", cdf))
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p><b>{said}</b>"
        f"{sim.n_windows} windows of {sim.settings.get('n_options', 24)} bins with at least one"
        f" burst; {sim.n_patterns} distinct patterns. Settings: "
        f"{html.escape(str(sim.settings))}.</p>",
        "<h2>Mean per app and policy (Fig. 10)</h2>",
        html_table(summary),
    ]
    if comparison is not None:
        comparison.to_csv(out / "forecast_vs_oracle.csv", index=False)
        sections += [
            "<h2>Choosing on forecasts vs on the actual bursts</h2>",
            "<p>Run times are charged on the actual bursts in both; <i>oracle</i> chooses on "
            "the actual next 24 bins (the paper's simulation), <i>mean_est_run_time</i> is "
            "what the algorithm expected from the forecast.</p>",
            html_table(comparison),
        ]
    if emulation is not None:
        emulation.runs.to_csv(out / "emulation.csv", index=False)
        emulated = fig_png(_fig9(emulation), 110)
        figures.append(("fig9_emulation.png", "Fig. 9: emulated job", emulated))
        sections += [
            "<h2>Emulated job (Fig. 9)</h2>",
            f"<p>min_time {emulation.min_time:.2f} s, max_time {emulation.max_time:.2f} s, "
            f"bin {emulation.bin_s:.3f} s, "
            f"job writes {emulation.work_mb} MiB; load average {emulation.load_average}; "
            f"calibration runs alone {emulation.alone_runs}, "
            f"with writers {emulation.loaded_runs}.</p>",
            emulation.within().to_html(index=False, float_format=lambda v: f"{v:.2f}"),
            emulation.runs.to_html(index=False, float_format=lambda v: f"{v:.3f}"),
        ]
    for name, caption, png in figures:
        (out / name).write_bytes(png)
        sections.append(f"<h2>{html.escape(caption)}</h2>{img_tag(png, name)}")
    return write_page(out, "schedule", title, "\n".join(sections))
