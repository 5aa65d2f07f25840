"""The facility insights page: which rules fire, what they cost, where, and over time."""

from __future__ import annotations

import html
from pathlib import Path

from iosight.insights import FacilityView
from iosight.report._html import fig_img, html_table, write_page

_COLORS = {"high": "tab:red", "warn": "tab:orange", "info": "tab:blue", "ok": "tab:green"}


def write_report(source: FacilityView, out: str | Path, *, title: str = "I/O insights") -> Path:
    """Write ``insights.html`` (figures inline) into ``out`` and return its path.

    ``source`` is the facility view of :func:`~iosight.insights.facility_view`; ``title``
    heads the page.
    """
    view = source
    evaluated = f"<p>{view.jobs} jobs evaluated ({html.escape(view.data)} data).</p>"
    body = [f"<h1>{html.escape(title)}</h1>", evaluated]
    if view.rules.empty:
        body.append("<p class='note'>No rule fired on these jobs.</p>")
    else:
        body += ["<h2>Rules: jobs and time at stake</h2>", fig_img(_rules_figure(view))]
        body += [
            "<p>Time at stake is each finding's estimate (rank-seconds of I/O time, see each "
            "rule's <code>stake_how</code>) in core-hours; job core-hours are nprocs x run time "
            "of the jobs the rule fires on.</p>",
            html_table(view.summary_table()),
        ]
    trend = view.trend_table()
    if not trend.empty:
        body += [
            "<h2>Monthly trend (percent of the month's jobs)</h2>",
            fig_img(_trend_figure(trend)),
        ]
        body.append(html_table(trend))
    if not view.not_evaluated.empty:
        body += ["<h2>Rules the data could not evaluate</h2>", html_table(view.not_evaluated)]
    return write_page(out, "insights", title, "\n".join(body))


def _rules_figure(view: FacilityView):
    from matplotlib.figure import Figure

    df = view.rules[view.rules["level"].isin(["high", "warn"])].iloc[::-1]
    fig = Figure(figsize=(11, 0.35 * len(df) + 1.5), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    labels = df["code"] + " " + df["title"].str[:40]
    colors = df["level"].map(_COLORS)
    ax1.barh(labels, 100 * df["share_of_jobs"], color=colors)
    ax1.set_xlabel("percent of jobs")
    ax2.barh(labels, df["stake_core_hours"], color=colors)
    ax2.set_xlabel("estimated I/O time at stake (core-hours)")
    if (df["stake_core_hours"] > 0).any():
        ax2.set_xscale("symlog", linthresh=1)
    fig.suptitle("high (red) and warn (orange) rules")
    return fig


def _trend_figure(trend):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), layout="constrained")
    ax = fig.subplots()
    for code in trend.columns[1:]:
        ax.plot(trend["month"], trend[code], marker="o", label=code)
    ax.set_ylabel("percent of the month's jobs")
    ax.tick_params(axis="x", rotation=45)
    ax.legend(ncols=3)
    return fig
