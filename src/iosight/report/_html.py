"""The pieces every HTML report shares: figures as embedded PNGs and the page around them."""

from __future__ import annotations

import base64
import html
import io

# one look for every report page
CSS = (
    "body{font-family:sans-serif;margin:2em;max-width:1200px}"
    "table{border-collapse:collapse;margin:1em 0;font-size:12px}"
    "td,th{border-bottom:1px solid #ddd;padding:2px 6px;text-align:right}th{background:#eee}"
    ".note{background:#fff8e0;padding:.6em;border-left:4px solid #e0a000}"
)


def subplots(nrows: int = 1, ncols: int = 1, *, figsize=None, layout=None, **kwargs):
    """``(figure, axes)`` like ``pyplot.subplots``, without pyplot.

    The figure belongs to no backend and no pyplot state, so drawing a report never switches
    the backend of a notebook that calls it, and the figure is freed with its last reference.
    ``kwargs`` go to :meth:`matplotlib.figure.Figure.subplots` (sharey, squeeze, height_ratios).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout=layout)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def fig_png(fig, dpi: int = 90) -> bytes:
    """A matplotlib figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def img_tag(png: bytes, alt: str = "") -> str:
    """An ``<img>`` element holding ``png`` inline, so the page is one self-contained file."""
    data = base64.b64encode(png).decode()
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>"


def fig_img(fig, dpi: int = 90) -> str:
    """A matplotlib figure as an inline ``<img>`` element."""
    return img_tag(fig_png(fig, dpi))


def page(title: str, body: str) -> str:
    """A whole HTML page: ``title`` (plain text) and ``body`` (HTML)."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>{body}</body></html>"
    )
