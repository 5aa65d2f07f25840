"""The pieces every HTML report shares: figures as embedded PNGs and the page around them."""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import re
import shutil
from pathlib import Path

from iosight._errors import IosightError
from iosight._units import cell, missing

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


def html_table(df, percent: tuple[str, ...] = ()) -> str:
    """``df`` as an HTML table in the units of every iosight table (:mod:`iosight._units`:
    bytes, durations, no exponents); the ``percent`` columns, shares of 1, as ``12.3%``."""
    shown = df.astype(object)
    for i, column in enumerate(df.columns):
        name = str(column)
        shown.iloc[:, i] = [
            ("" if missing(v) else f"{100 * v:.1f}%") if name in percent else cell(name, v)
            for v in df.iloc[:, i]
        ]
    return shown.to_html(index=False, border=0)


def page(title: str, body: str, *, name: str | None = None) -> str:
    """A whole HTML page: ``title`` (plain text) and ``body`` (HTML); ``name`` marks a report."""
    mark = f"<meta name='{_MARK}' content='{html.escape(name)}'>" if name else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'>{mark}"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
        f"<body>{body}</body></html>"
    )


# marks a page as an iosight report, so the index finds the reports in a folder
_MARK = "iosight-report"


def report_dir(out: str | Path) -> Path:
    """``out``, created when missing: the folder every ``write_report`` writes into.

    An :class:`~iosight.IosightError` when ``out`` is a file or cannot be made; a caller
    checks it before the work whose report goes there, so a bad path fails at once.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise IosightError(f"report path {out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise IosightError(f"cannot create report directory {out}: {err.strerror}") from None
    return out


def write_page(out: str | Path, name: str, title: str, body: str) -> Path:
    """Write report ``name`` as ``out/<name>.html`` and refresh ``out/index.html``.

    Reports sharing a folder (``--out report/`` for bursts, schedule, similarity, ...)
    never overwrite each other: each has its own page, and ``index.html`` links them all
    (when the folder holds only this report, ``index.html`` is the report itself).
    Rewriting the same report replaces its page.
    """
    out = report_dir(out)
    text = page(title, body, name=name)
    path = out / f"{name}.html"
    path.write_text(text)
    write_index(out)
    return path


def write_index(out: Path) -> Path:
    """``out/index.html``: the only report in ``out``, or a page linking every report there."""
    found = []
    for p in sorted(out.glob("*.html")):
        if p.name == "index.html":
            continue
        head = p.read_text(errors="replace")[:2000]
        m = re.search(rf"<meta name='{_MARK}' content='([^']*)'>", head)
        t = re.search(r"<title>(.*?)</title>", head)
        if m:
            found.append((p, html.unescape(t.group(1)) if t else p.stem))
    index = out / "index.html"
    if len(found) == 1:
        shutil.copyfile(found[0][0], index)
    elif found:
        items = "".join(
            f"<li><a href='{html.escape(p.name)}'>{html.escape(title)}</a> ({p.name}, written "
            f"{dt.datetime.fromtimestamp(p.stat().st_mtime, dt.UTC):%Y-%m-%d %H:%M} UTC)</li>"
            for p, title in found
        )
        index.write_text(
            page(
                "iosight reports",
                f"<h1>iosight reports in {html.escape(str(out))}</h1><ul>{items}</ul>",
            )  # fmt: skip
        )
    return index
