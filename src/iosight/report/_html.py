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


def fig_png(fig, dpi: int = 90) -> bytes:
    """A matplotlib figure as PNG bytes; the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def img_tag(png: bytes, alt: str = "") -> str:
    """An ``<img>`` element holding ``png`` inline, so the page is one self-contained file."""
    data = base64.b64encode(png).decode()
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>"


def fig_img(fig, dpi: int = 90) -> str:
    """A matplotlib figure as an inline ``<img>`` element; the figure is closed."""
    return img_tag(fig_png(fig, dpi))


def page(title: str, body: str) -> str:
    """A whole HTML page: ``title`` (plain text) and ``body`` (HTML)."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>{body}</body></html>"
    )
