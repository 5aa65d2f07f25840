"""Numbers and paths as a person reads them in a table: ``2.2 TB``, ``1.4 GB/s``, ``3 min 12 s``.

Only tables use these; CSV and JSON keep raw values. The unit is chosen from the column
name (Darshan's counters and iosight's columns say what they hold: ``POSIX_BYTES_READ``,
``io_time``, ``bytes_per_s``), so nothing is guessed from the value alone.
"""

from __future__ import annotations

import math
import numbers

PATH_WIDTH = 60  # longer paths are elided in the middle, keeping both ends readable

_TIME_EXACT = {"time", "duration", "seconds", "run_time", "runtime", "elapsed"}
_NOT_DURATION = ("start", "end", "stamp", "epoch", "_at", "date", "bin", "first", "last")


def human_bytes(n: float) -> str:
    """Bytes in decimal units: ``2199023255552`` -> ``2.2 TB``."""
    if abs(n) < 1000:
        return f"{n:.0f} B"
    for unit in ("kB", "MB", "GB", "TB", "PB", "EB"):
        n /= 1000
        if abs(n) < 999.5 or unit == "EB":
            return f"{n:.3g} {unit}" if abs(n) >= 1 else f"{n:.2g} {unit}"
    raise AssertionError("unreachable")


def human_duration(s: float) -> str:
    """Seconds as ``24 µs``, ``537 ms``, ``12.3 s``, ``3 min 12 s``, ``2 h 05 min``, ``3 d 4 h``."""
    if s == 0:
        return "0 s"
    if abs(s) < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if abs(s) < 1:
        return f"{s * 1e3:.3g} ms"
    if abs(s) < 60:
        return f"{s:.3g} s"
    s = round(s)
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def elide_middle(text: str, width: int = PATH_WIDTH) -> str:
    """``text`` cut to ``width`` characters by dropping its middle (paths keep both ends)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def column_kind(name: str) -> str:
    """What a column holds, from its name: ``rate``, ``bytes``, ``duration`` or ``plain``."""
    n = name.lower()
    if "bytes" in n and ("per_s" in n or "/s" in n or "rate" in n or n.endswith("_bps")):
        return "rate"
    if "bytes" in n or n.endswith(("_extent", "size_estimate")):
        return "bytes"
    if any(w in n for w in _NOT_DURATION):
        return "plain"
    if n in _TIME_EXACT or n.endswith(("_time", "_seconds", "_secs", "_duration")):
        return "duration"
    return "plain"


def cell(column: str, v: object) -> str:
    """One table cell: human units by column kind, integers without exponents."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        text = str(v)
        return elide_middle(text) if "/" in text and " " not in text else text
    kind = column_kind(column)
    if kind == "bytes":
        return human_bytes(float(v))
    if kind == "rate":
        return human_bytes(float(v)) + "/s"
    if kind == "duration":
        return human_duration(float(v))
    if isinstance(v, numbers.Integral):
        return str(int(v))
    v = float(v)
    if math.isinf(v):
        return str(v)
    if v.is_integer() and abs(v) < 1e18:
        return str(int(v))
    return f"{v:,.0f}" if abs(v) >= 1e6 else f"{v:.4g}"
