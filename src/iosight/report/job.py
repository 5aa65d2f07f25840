"""A one-page figure of one job's I/O: what a user would rather look at than read.

Panels: operations per access size (read/write, POSIX and MPI-IO), the files
that took the most I/O time, and a timeline of traced I/O (DXT segments per rank,
or HEATMAP bins when there is no DXT).
"""

from __future__ import annotations

from pathlib import Path

from iosight._errors import IosightError
from iosight._units import human_duration, per_rank_label
from iosight.insights import JobInsights
from iosight.report._html import subplots
from iosight.report.dxt import MAX_DXT_POINTS, DxtView, dxt_view
from iosight.report.heatmap import job_heatmap
from iosight.warehouse import JobSummary, Warehouse

_LEVEL_COLORS = {"high": "tab:red", "warn": "tab:orange"}
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def check_figure_path(out: str | Path) -> Path:
    """``out`` as a path a job figure can be written to: a suffix among
    :data:`FIGURE_SUFFIXES` and a folder that exists (checked before any drawing)."""
    out = Path(out)
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise IosightError(
            f"cannot draw a figure to {out}: name a {', '.join(FIGURE_SUFFIXES[:-1])} "
            f"or {FIGURE_SUFFIXES[-1]} file"
        )
    if not out.parent.is_dir():
        raise IosightError(f"cannot draw a figure to {out}: no folder {out.parent}")
    return out


def plot_job(
    warehouse: Warehouse,
    summary: JobSummary,
    out: str | Path,
    *,
    insights: JobInsights | None = None,
) -> Path:
    """Draw the job figure to ``out`` (PNG, SVG or PDF by suffix) and return its path.

    With ``insights`` a last panel lists the job's high and warn findings.
    """
    out = check_figure_path(out)
    key = summary.job["job_key"]
    panels = 3 if insights is None else 4
    fig, axes = subplots(
        panels,
        1,
        figsize=(10, 11 + 3 * (panels - 3)),
        layout="constrained",
        height_ratios=[1, 1, 1, 0.8][:panels],
    )
    _access_sizes(axes[0], summary)
    _top_files(axes[1], summary)
    _timeline(axes[2], warehouse, key)
    if insights is not None:
        _insights(axes[3], insights)
    title = f"job {summary.job['jobid']} ({summary.job['nprocs']} processes)"
    if summary.job.get("synthetic"):
        title += " - SYNTHETIC"
    fig.suptitle(title)
    try:
        fig.savefig(out, dpi=110)
    except OSError as err:  # no permission, disk full
        raise IosightError(f"cannot draw a figure to {out}: {err.strerror or err}") from None
    return out


def _access_sizes(ax, s: JobSummary) -> None:
    df = s.access_sizes
    if df.empty:
        ax.text(0.5, 0.5, "no access-size counters", ha="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    bins = [c for c in df.columns if c not in ("module", "op")]
    width = 0.8 / len(df)
    for i, (label, values) in enumerate(
        zip(df["module"] + " " + df["op"], df[bins].to_numpy(), strict=True)
    ):
        ax.bar([x + i * width for x in range(len(bins))], values, width, label=label)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(bins))], bins, rotation=30)
    ax.set_ylabel("operations")
    ax.set_title("access sizes (bytes)")
    ax.legend()


def _top_files(ax, s: JobSummary, n: int = 10) -> None:
    """The files with the most I/O time: bars of the time summed over ranks, each labelled
    with its ranks (a shared record's all ranks) and its mean per rank."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    df = s.files.head(n)
    if df.empty:
        ax.text(0.5, 0.5, "no POSIX records", ha="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    names = [f if len(f) < 50 else "..." + f[-47:] for f in df["file"]]
    rows = max(len(df), 5)  # a lone file gets a bar at the top, not the whole panel
    ys = [rows - 1 - i for i in range(len(df))]
    bars = ax.barh(ys, df["io_time"], color="tab:purple")
    labels = [per_rank_label(r.io_time_per_rank, r.ranks) for r in df.itertuples()]
    ax.bar_label(bars, labels, padding=3, fontsize=8)
    ax.set_yticks(ys, names, fontsize=8)
    ax.set_ylim(-0.5, rows - 0.5)
    longest = float(df["io_time"].max())
    ax.set_xlim(0, longest * 1.35 if longest > 0 else 1)  # room for the labels
    ax.xaxis.set_major_locator(MaxNLocator(4))  # durations in words are wide
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human_duration(v)))
    ax.set_xlabel("I/O time summed over ranks")
    ax.set_title(f"files with the most I/O time (top {len(df)})")


def _dxt_segments(ax, view: DxtView) -> None:
    """Each segment as a bar from its start to its end on its rank's line."""
    seg = view.rows
    for op, color in (("write", "tab:red"), ("read", "tab:blue")):
        d = seg[seg["op"] == op]
        ax.hlines(d["rank"], d["start"], d["end"], colors=color, lw=6, label=op)
        # a tick at each start keeps operations far shorter than the job visible
        ax.plot(d["start"], d["rank"], "|", color=color, ms=12, alpha=0.5)
    lo, hi = int(seg["rank"].min()), int(seg["rank"].max())
    ax.set_yticks(range(lo, hi + 1, max(1, -(-(hi - lo + 1) // 8))))  # <= 8 rank ticks
    ax.set_ylim(lo - 0.5, hi + 0.5)
    ax.set_title(f"traced POSIX operations (DXT): all {view.total:,} segments")
    ax.legend()


def _dxt_cells(ax, view: DxtView) -> None:
    """The segments counted per rank bin and time bin (:func:`dxt_view`'s cells), as an
    image of operations per cell on a log scale (empty cells blank)."""
    import numpy as np
    from matplotlib.colors import LogNorm

    c = view.rows
    r0, t0 = int(c["rank"].min()), float(c["start"].min())
    row = ((c["rank"] - r0) // view.rank_width).to_numpy(int)
    col = np.rint((c["start"] - t0) / view.time_width).to_numpy(int)
    grid = np.full((row.max() + 1, col.max() + 1), np.nan)
    grid[row, col] = c["ops"]
    extent = (t0, t0 + grid.shape[1] * view.time_width, r0, r0 + grid.shape[0] * view.rank_width)
    image = ax.imshow(grid, aspect="auto", origin="lower", extent=extent, norm=LogNorm(),
                      interpolation="nearest", cmap="viridis")  # fmt: skip
    ax.figure.colorbar(image, ax=ax, label="operations")
    ax.set_title(
        f"traced POSIX operations (DXT): {view.total:,} segments, counted per "
        f"{view.rank_width:,} ranks x {human_duration(view.time_width)}"
    )


def _timeline(ax, warehouse: Warehouse, key: str, max_points: int = MAX_DXT_POINTS) -> None:
    tables = set(warehouse.tables())
    if "dxt_posix" in tables:
        view = dxt_view(warehouse, key, max_points=max_points)
        if view.total:
            (_dxt_segments if view.kind == "segments" else _dxt_cells)(ax, view)
            ax.set_xlabel("seconds since job start")
            ax.set_ylabel("rank")
            return
    if "heatmap" in tables:
        hm = job_heatmap(warehouse, key)
        if len(hm):
            ax.plot(hm["bin_start"], hm["read_bytes"], label="read bytes")
            ax.plot(hm["bin_start"], hm["write_bytes"], label="write bytes")
            ax.set_xlabel("seconds since job start")
            ax.set_title("POSIX bytes per HEATMAP bin")
            ax.legend()
            return
    ax.text(0.5, 0.5, "no DXT or HEATMAP data in this log", ha="center", transform=ax.transAxes)
    ax.set_axis_off()


def _insights(ax, found: JobInsights, n: int = 8) -> None:
    """The job's high and warn findings, one line each, coloured by level."""
    ax.set_axis_off()
    bad = found.findings[found.findings["level"].isin(list(_LEVEL_COLORS))].head(n)
    ax.set_title("I/O insights (high and warn)")
    if bad.empty:
        ax.text(0.5, 0.5, "no high or warn finding", ha="center", transform=ax.transAxes)
        return
    for i, row in enumerate(bad.itertuples()):
        text = f"[{row.level.upper()}] {row.code}: {row.message}"
        ax.text(
            0.0,
            1 - (i + 0.5) / n,
            text[:130],
            color=_LEVEL_COLORS[row.level],
            transform=ax.transAxes,
            fontsize=9,
            va="center",
        )
