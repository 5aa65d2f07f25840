"""HTML report of the burst analysis: Fig. 3-7 and Table I of Saeedizade et al. for the
data at hand, one section per warehouse, each saying which data it is."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from iosight._errors import IosightError
from iosight.report._html import fig_img, html_table, report_dir, subplots, write_page

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

_TB = 1e12
_TASK = ["direction", "feature_set", "mode", "horizon_min"]


def describe_data(wh: Warehouse) -> str:
    """One line saying which data a warehouse holds: real or synthetic, sources, span."""
    if not wh.has_table("jobs"):
        return f"{wh.path.name}: no jobs table"
    import pandas as pd

    from iosight.warehouse import data_kind

    cols = set(wh.column_names("jobs"))
    fmt = "string_agg(distinct source_format, ', ')" if "source_format" in cols else "''"
    n, fmts, t0, t1 = wh.sql(
        f"select count(*), {fmt}, min(start_time), max(end_time) from jobs"
    ).iloc[0]
    kind = data_kind(wh)
    span = " to ".join(str(pd.Timestamp(t, unit="s", tz="UTC").date()) for t in (t0, t1))
    return f"{wh.path.name}: {kind} data, {n} jobs ({fmts or 'unknown format'}), {span}"


def _fig3(totals: dict[str, pd.DataFrame]) -> str:
    import pandas as pd

    fig, axes = subplots(1, 3, figsize=(15, 3.5))
    for ax, (name, df) in zip(axes, totals.items(), strict=True):
        t = pd.to_datetime(df["bin_start"], unit="s")
        for d in ("read", "write"):
            marker = "o" if len(df) < 40 else None  # a few months: show the points
            ax.plot(t, df[f"{d}_bytes"] / _TB, label=d, drawstyle="steps-post", lw=0.8,
                    marker=marker)  # fmt: skip
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_title(f"{name} totals (TB)")
        ax.tick_params(axis="x", labelrotation=30)
    axes[0].legend()
    return fig_img(fig)


def _fig4(hists: dict[str, pd.DataFrame], summary: pd.DataFrame) -> str:
    fig, axes = subplots(1, 2, figsize=(12, 3.5))
    for ax, (d, h) in zip(axes, hists.items(), strict=True):
        ax.bar(h["sigma_low"], h["count"], width=0.2, align="edge")
        k = summary.set_index("direction").loc[d, "k"]
        ax.axvline(k, color="r", ls="--", label=f"k = {k:.2f}")
        ax.set_yscale("log")
        ax.set_xlabel("(value - mean) / stdev, classes of 0.2 (last class: >= 10)")
        ax.set_title(f"{d}: bins per class")
        ax.legend()
    return fig_img(fig)


def _fig5(runs: dict[str, pd.DataFrame]) -> str:
    fig, axes = subplots(1, 2, figsize=(12, 3.5))
    for ax, (d, r) in zip(axes, runs.items(), strict=True):
        if len(r):
            ax.bar(r["length"], r["runs"], label="runs")
            ax.bar(r["length"], r["bursts"], alpha=0.4, label="burst bins in such runs")
        ax.set_xlabel("consecutive burst bins")
        ax.set_title(f"{d}: runs of bursts")
        ax.legend()
    return fig_img(fig)


def _f1_figure(ev: pd.DataFrame, series: str, title: str) -> str:
    fig, axes = subplots(1, 2, figsize=(12, 3.5), sharey=True)
    for ax, d in zip(axes, ("read", "write"), strict=True):
        sub = ev[ev["direction"] == d]
        for key, g in sub.groupby(series, sort=True):
            g = g.sort_values("horizon_min")
            style = "--" if key in ("persistence", "time_of_day") else "-"
            ax.plot(g["horizon_min"], g["f1"], style, marker="o", label=str(key))
        ax.set_xlabel("horizon (min)")
        ax.set_title(f"{d}: {title}")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("F1 of the burst class (test part)")
    axes[-1].legend(fontsize=8)
    return fig_img(fig)


#: Columns of ``burst_evaluation`` that say how far a forecast from t can see, and labels.
_REACH = {
    "f1_no_new_bursts": "ceiling: bursts on now, when they end known",
    "running_jobs_share": "share of bursts the running jobs make alone (not an F1)",
}


def ceilings_figure(ev: pd.DataFrame):
    """F1 of the burst class by lead (one panel per direction): persistence, the forecast
    chosen on validation, the best model on the test part (hindsight), the ceiling of
    forecasts that foresee no new burst, and the share of bursts that the jobs running at
    t make on their own (issue 14, docs/bursts.md).

    ``ev``: lead-mode binary rows of one feature set of ``burst_evaluation``. Returns the
    matplotlib figure (no pyplot state), for a report or a notebook.
    """
    from iosight.bursts import BASELINES

    fig, axes = subplots(1, 2, figsize=(12, 3.5), sharey=True)
    for ax, d in zip(axes, ("read", "write"), strict=True):
        sub = ev[ev["direction"] == d]
        per = sub.groupby("horizon_min")
        models = sub[~sub["model"].isin([*BASELINES, "chosen"])]
        lines = {  # the chosen line wide and below: it is often persistence's
            "chosen on validation": (_f1_of(sub, "chosen"), "-"),
            "persistence": (_f1_of(sub, "persistence"), "--"),
            "best model on test (hindsight)": (models.groupby("horizon_min")["f1"].max(), ":"),
        }
        for col, label in _REACH.items():
            if col in sub:
                lines[label] = (per[col].first(), "-.")
        for label, (f1, style) in lines.items():
            f1 = f1.dropna().sort_index()
            if len(f1):
                wide = {"lw": 5, "alpha": 0.4} if label == "chosen on validation" else {}
                ax.plot(f1.index, f1.to_numpy(), style, marker="o", label=label, **wide)
        ax.set_xlabel("lead (min)")
        ax.set_title(f"{d}: what a forecast from time t can see")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("burst-class F1, or share (test part)")
    axes[-1].legend(fontsize=8)
    return fig


def _f1_of(ev: pd.DataFrame, model: str) -> pd.Series:
    return ev[ev["model"] == model].set_index("horizon_min")["f1"]


def _section(wh: Warehouse) -> str:
    from iosight.bursts import EVALUATION_TABLE, analyze_bursts
    from iosight.timeline import load_timeline

    df = load_timeline(wh)
    a = analyze_bursts(df)
    parts = [f"<h2>{html.escape(describe_data(wh))}</h2>",
             f"<p>Timeline: {len(df)} bins of {df['bin_width'].iloc[0]:g} s. Layers counted: "
             "POSIX + STDIO (MPI-IO is already in POSIX).</p>",
             "<h3>Thresholds and burst statistics (bytes per bin)</h3>", html_table(a.summary),
             "<h3>Fig. 3: hourly, daily and monthly I/O</h3>", _fig3(a.totals),
             "<h3>Fig. 4: bins by distance from the mean</h3>", _fig4(a.histograms, a.summary),
             "<h3>Fig. 5: runs of consecutive bursts</h3>", _fig5(a.runs)]  # fmt: skip
    if not wh.has_table(EVALUATION_TABLE):
        parts.append("<p>No models trained yet: run <code>iosight bursts train</code>.</p>")
        return "\n".join(parts)
    ev = wh.table(EVALUATION_TABLE).to_pandas()
    # figures: regime live (the complete bytes up to t); every regime's rows in the table
    live = ev[ev["information"] == "live"] if "information" in ev else ev
    binary = live[live["target"] == "binary"]
    fs = binary[(binary["model"] == "forest") & (binary["mode"] == "interval")]
    if fs["feature_set"].nunique() > 1:
        parts += ["<h3>Fig. 6: random forest with feature sets 1-3 (interval mode)</h3>",
                  _f1_figure(fs, "feature_set", "feature sets")]  # fmt: skip
    top = binary[binary["feature_set"] == binary["feature_set"].max()]
    for mode in ("interval", "lead"):
        m = top[top["mode"] == mode]
        if len(m):
            parts += [f"<h3>Fig. 7: models and baselines, {mode} mode</h3>",
                      _f1_figure(m, "model", f"{mode} mode")]  # fmt: skip
    lead = top[top["mode"] == "lead"]
    if len(lead) and "chosen" in set(lead["model"]):
        parts += ["<h3>How far a forecast from time t can go (lead mode)</h3>",
                  "<p>On the test part: the F1 ceiling of a forecast that knows exactly when "
                  "the bursts on at t end and foresees no other, and the share of bursts at "
                  "t + L that the jobs running at t make on their own, their whole futures "
                  "known. Where that share is near 0, bursts that far ahead come from jobs "
                  "not yet started.</p>", fig_img(ceilings_figure(lead))]  # fmt: skip
    chosen = binary[binary["model"] == "chosen"]
    if len(chosen):
        pers = binary[binary["model"] == "persistence"].set_index(_TASK)["f1"]
        tab = chosen.set_index(_TASK)[["chosen", "f1", "f1_gain", "skill", "f1_weighted"]]
        tab.insert(1, "persistence f1", pers.reindex(tab.index))
        tab = tab.rename(columns={
            "chosen": "chosen on validation", "f1": "burst-class F1",
            "f1_gain": "F1 - persistence", "skill": "skill vs persistence",
            "f1_weighted": "paper framing: F1 weighted over burst and calm bins"})  # fmt: skip
        parts += ["<h3>The forecast chosen on validation (persistence included), test part</h3>",
                  "<p>Burst-class F1 is what a scheduler needs. The paper's framing weights "
                  "the F1 of both classes by their support, so the calm class (about 99% of "
                  "bins) dominates it; both are shown, neither alone tells the story.</p>",
                  html_table(tab.reset_index())]  # fmt: skip
    sev = live[live["target"] == "severity"]
    if len(sev):
        tab = sev.pivot_table(index="model", columns=["direction", "horizon_min"],
                              values=["f1_weighted", "f1_macro"])  # fmt: skip
        tab.columns = [f"{v} {d} {h:g}min" for v, d, h in tab.columns]
        parts += ["<h3>Table I: severity classes (0-5), test part</h3>",
                  html_table(tab.reset_index())]  # fmt: skip
    shown = ev.drop(columns=["trained_at", "params", "n_train", "k"], errors="ignore")
    parts += ["<h3>Every model beside the baselines</h3>", html_table(shown)]
    return "\n".join(parts)


def write_report(source: Sequence[Warehouse], out: str | Path) -> Path:
    """Write ``bursts.html`` (figures embedded) into ``out`` with one section per
    warehouse of ``source``, in order; return its path.

    Each section says which data it shows (real or synthetic, from the ``jobs`` table),
    then thresholds and Fig. 3-5 from the timeline, then Fig. 6, Fig. 7 and Table I from
    the ``burst_evaluation`` table written by ``iosight bursts train``.
    """
    if not source:
        raise IosightError("no warehouse to report on")
    out = report_dir(out)
    body = "\n<hr>\n".join(_section(wh) for wh in source)
    body = (
        "<h1>System-level I/O bursts (Saeedizade et al. (2023), §IV-V, iosight)</h1>"
        "<p>Burst: a bin above mean + k stdev; k chosen so about 1% of bins are bursts unless "
        "given. Scores are on the last 20% of the timeline (chronological split), models "
        "beside persistence and time-of-day baselines.</p>"
        f"{body}"
    )
    return write_page(out, "bursts", "iosight bursts", body)


__all__ = ["describe_data", "write_report"]
