"""Plotly figures of the pages, as plain ``{"data": ..., "layout": ...}`` dicts.

The browser draws them with plotly.js's basic bundle, which iosight ships in
``static/`` (served by this process, no CDN). Plotly renders a subset of HTML in labels, so
every text that comes from a log (file names) is HTML-escaped here; the page embeds
the dicts as JSON data, never as script.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np

from iosight._units import human_bytes, human_duration, per_rank_label

if TYPE_CHECKING:
    import pandas as pd

    from iosight.report.dxt import DxtView
    from iosight.serve._pages import Thresholds

_READ, _WRITE = "#1f77b4", "#d62728"


def _axis(title: str, **extra) -> dict:
    return {"title": {"text": title}, "automargin": True, **extra}


def _layout(title: str, **extra) -> dict:
    return {
        "title": {"text": title, "font": {"size": 14}},
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "height": 320,
        **extra,
    }


def access_sizes_figure(df: pd.DataFrame) -> dict | None:
    """Operations per access-size bin, one bar group per module and direction."""
    if df.empty:
        return None
    bins = [c for c in df.columns if c not in ("module", "op")]
    data = [
        {"type": "bar", "name": f"{m} {op}", "x": bins, "y": [float(v) for v in row]}
        for m, op, row in zip(df["module"], df["op"], df[bins].to_numpy(), strict=True)
    ]
    return {
        "data": data,
        "layout": _layout(
            "access sizes (operations per size bin)", barmode="group", yaxis=_axis("operations")
        ),
    }


def top_files_figure(df: pd.DataFrame, n: int = 15) -> dict | None:
    """The files with the most I/O time (summed over ranks), each bar labelled with its sum,
    its mean per rank and its ranks."""
    top = df.head(n)
    if top.empty:
        return None
    names = [html.escape(f if len(f) <= 60 else "..." + f[-57:]) for f in top["file"].astype(str)]
    text = [
        f"{human_duration(r.io_time)}: {per_rank_label(r.io_time_per_rank, r.ranks)}"
        for r in top.itertuples()
    ]
    return {
        "data": [{"type": "bar", "orientation": "h", "x": top["io_time"].astype(float).tolist(),
                  "y": names, "text": text, "textposition": "auto",
                  "marker": {"color": "#9467bd"}}],
        "layout": _layout(f"files with the most I/O time (top {len(top)})",
                          height=max(240, 26 * len(top) + 90),
                          margin={"l": 360, "r": 20, "t": 40, "b": 50},
                          yaxis={"autorange": "reversed", "automargin": True},
                          xaxis=_axis("I/O time summed over ranks (s)")),
    }  # fmt: skip


def dxt_figure(view: DxtView) -> dict:
    """Traced POSIX operations per rank over time (DXT), zoomable: each segment as a line,
    or, for a window of more segments than one view holds, cells of rank bins and time
    bins coloured by their operations (zooming in asks ``/api/job/<key>/dxt`` again)."""
    if view.kind == "cells":
        return _dxt_cells_figure(view)
    seg, data = view.rows, []
    for op, color in (("write", _WRITE), ("read", _READ)):
        d = seg[seg["op"] == op]
        if d.empty:
            continue
        n = len(d)
        x = np.empty(3 * n)
        y = np.empty(3 * n)
        x[0::3], x[1::3], x[2::3] = d["start"], d["end"], np.nan
        y[0::3], y[1::3], y[2::3] = d["rank"], d["rank"], np.nan
        data.append({"type": "scatter", "mode": "lines+markers", "name": op,
                     "x": _floats(x), "y": _floats(y), "line": {"color": color, "width": 6},
                     "marker": {"symbol": "line-ns-open", "size": 10, "color": color}})  # fmt: skip
    return {"data": data, "layout": _layout(
        f"traced POSIX operations (DXT): all {view.total:,} segments here: drag to zoom",
        xaxis=_axis("seconds since job start"), yaxis=_axis("rank"))}  # fmt: skip


def _dxt_cells_figure(view: DxtView) -> dict:
    """One square per non-empty cell at its centre, its colour the log10 of its operations."""
    c = view.rows
    ranks = c["rank"].to_numpy()
    last = ranks + view.rank_width - 1
    text = [
        f"ranks {a}-{b}, {t:.6g} s + {view.time_width:.3g} s: {n:,} operations "
        f"({w:,} writes), {human_bytes(float(nb))}"
        for a, b, t, n, w, nb in zip(ranks, last, c["start"], c["ops"], c["writes"], c["bytes"],
                                     strict=True)
    ]  # fmt: skip
    trace = {"type": "scatter", "mode": "markers", "name": "operations", "hoverinfo": "text",
             "x": _floats(c["start"] + view.time_width / 2), "y": _floats((ranks + last) / 2),
             "text": text,
             "marker": {"symbol": "square", "size": 9, "color": _floats(np.log10(c["ops"])),
                        "colorscale": "Viridis", "showscale": True,
                        "colorbar": {"title": {"text": "log10 ops"}}}}  # fmt: skip
    title = (f"traced POSIX operations (DXT): {view.total:,} segments counted per "
             f"{view.rank_width:,} ranks x {view.time_width:.3g} s: zoom in for each")  # fmt: skip
    return {"data": [trace], "layout": _layout(
        title, xaxis=_axis("seconds since job start"), yaxis=_axis("rank"))}  # fmt: skip


def heatmap_figure(hm: pd.DataFrame) -> dict:
    """POSIX bytes per HEATMAP bin, zoomable."""
    data = [
        {"type": "scatter", "mode": "lines", "name": f"{d} bytes",
         "x": hm["bin_start"].astype(float).tolist(), "y": hm[f"{d}_bytes"].astype(float).tolist(),
         "line": {"color": c}}
        for d, c in (("read", _READ), ("write", _WRITE))
    ]  # fmt: skip
    return {
        "data": data,
        "layout": _layout(
            "POSIX bytes per HEATMAP bin: drag to zoom", xaxis=_axis("seconds since job start")
        ),
    }


def facility_traces(df: pd.DataFrame) -> list[dict]:
    """Traces of the Facility figure for one window (re-sent on every zoom)."""
    x = (df["bin_start"].to_numpy(float) * 1000.0).tolist()  # plotly dates: epoch ms
    traces = []
    for d, axis, color in (("write", "y", _WRITE), ("read", "y2", _READ)):
        peak = df[f"{d}_peak"].to_numpy(float)
        hit = df[f"{d}_bursts"].to_numpy() > 0
        traces += [
            {"type": "scatter", "mode": "lines", "name": f"{d}: peak 5-min rate", "x": x,
             "y": _floats(peak), "yaxis": axis, "line": {"color": color, "width": 1}},
            {"type": "scatter", "mode": "lines", "name": f"{d}: mean rate", "x": x,
             "y": _floats(df[f"{d}_mean"].to_numpy(float)), "yaxis": axis,
             "line": {"color": "#555", "width": 1}},
            {"type": "scatter", "mode": "markers", "name": f"{d}: burst bins",
             "x": [v for v, h in zip(x, hit, strict=True) if h], "y": _floats(peak[hit]),
             "yaxis": axis, "marker": {"color": "orange", "size": 7, "symbol": "triangle-up"},
             "text": [f"{int(n)} burst bins" for n in df[f"{d}_bursts"].to_numpy()[hit]]},
        ]  # fmt: skip
    return traces


def facility_figure(df: pd.DataFrame, thr: Thresholds, title: str) -> dict:
    """System I/O rate, write above read, burst thresholds and burst bins marked (§IV)."""
    shapes = []
    for d, axis in (("write", "y"), ("read", "y2")):
        t = getattr(thr, d)
        if t is not None:
            shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": axis,
                           "y0": t / thr.bin_width, "y1": t / thr.bin_width,
                           "line": {"color": "orange", "dash": "dash", "width": 1}})  # fmt: skip
    layout = _layout(
        title, height=520, shapes=shapes, hovermode="x unified",
        xaxis={"type": "date", "automargin": True},
        yaxis=_axis("write B/s", domain=[0.55, 1.0], type="log", exponentformat="SI"),
        yaxis2=_axis("read B/s", domain=[0.0, 0.45], type="log", exponentformat="SI"),
        legend={"orientation": "h", "y": -0.15},
    )  # fmt: skip
    return {"data": facility_traces(df), "layout": layout}


def forecast_figure(forecast: pd.DataFrame, chosen_start: float) -> dict:
    """Burst probability of the next bins, bursts in red, the recommended start marked."""
    x = (forecast["bin_start"].to_numpy(float) * 1000.0).tolist()
    colors = [_WRITE if b else "#999" for b in forecast["burst"].astype(bool)]
    return {
        "data": [{"type": "bar", "x": x, "y": _floats(forecast["probability"].to_numpy(float)),
                  "marker": {"color": colors}, "name": "burst probability"}],
        "layout": _layout("forecast: burst probability per bin (red: burst predicted)",
                          height=260, xaxis={"type": "date"}, yaxis={"range": [0, 1]},
                          shapes=[{"type": "line", "x0": chosen_start * 1000.0,
                                   "x1": chosen_start * 1000.0, "yref": "paper", "y0": 0, "y1": 1,
                                   "line": {"color": "green", "width": 2}}]),
    }  # fmt: skip


def now_figure(df: pd.DataFrame) -> dict:
    """The live bins' rates per source and direction; a bin not yet over (partial) is an
    open marker, a complete one a filled marker."""
    data = []
    width = df.attrs.get("bin_width", 300.0)
    for (source, d), color in _now_traces():
        rows = df[df["source"] == source]
        if rows.empty:
            continue
        partial = ~rows["complete"].astype(bool).to_numpy()
        symbols = ["circle-open" if p else "circle" for p in partial]
        data.append({"type": "scatter", "mode": "lines+markers", "name": f"{d} ({source})",
                     "x": (rows["bin_start"].to_numpy(float) * 1000.0).tolist(),
                     "y": _floats(rows[f"{d}_bytes"].to_numpy(float) / width),
                     "line": {"color": color, "dash": "dot" if source == "live_io" else "solid"},
                     "marker": {"color": color, "size": 8,
                                "symbol": symbols}})  # fmt: skip
    return {"data": data, "layout": _layout(
        "now: live bins after the logs' last complete bin (open marker: partial bin)",
        height=280, xaxis={"type": "date"}, yaxis=_axis("bytes/s"))}  # fmt: skip


def _now_traces() -> list[tuple[tuple[str, str], str]]:
    return [(("live_rates", "read"), _READ), (("live_rates", "write"), _WRITE),
            (("live_io", "read"), "#6baed6"), (("live_io", "write"), "#fc9272")]  # fmt: skip


def _floats(a: np.ndarray) -> list:
    """JSON-ready floats: NaN and infinities become null (gaps in a plotly line)."""
    a = np.asarray(a, dtype=float)
    return [None if not np.isfinite(v) else float(v) for v in a]
