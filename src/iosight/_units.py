"""Numbers as a person reads them, one convention wherever iosight shows one: tables on
the command line, the web pages (as Jinja filters), reports and figure labels.

Bytes in decimal SI units (``2.2 TB``, ``1.4 GB/s``: 1 kB is 1000 B, as disks and
networks count), durations as ``3 min 12 s``, rank-seconds (time summed over ranks, as
Darshan sums it) as ``27.9 rank-h``; never scientific notation. Machine formats (CSV,
JSON) keep raw values. In tables the unit is chosen from the column name (Darshan's
counters and iosight's columns say what they hold: ``POSIX_BYTES_READ``, ``io_time``,
``bytes_per_s``), so nothing is guessed from the value alone.
"""

from __future__ import annotations

import math
import numbers

PATH_WIDTH = 60  # longer paths are elided in the middle, keeping both ends readable

_TIME_EXACT = {"time", "duration", "seconds", "run_time", "runtime", "elapsed"}
_NOT_DURATION = ("start", "end", "stamp", "epoch", "_at", "date", "bin", "first", "last")
_MAX_DECIMALS = 15  # below 1e-15 a positional number is all zeros: shown as 0


def significant(v: float, digits: int = 3) -> str:
    """``v`` to ``digits`` significant digits, positional: ``0.000123``, ``12.3``, and
    from ``10**digits`` on whole and grouped (``123,457``), never ``1.23e+05``."""
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    if abs(v) >= 10**digits:
        return f"{v:,.0f}"
    decimals = min(_MAX_DECIMALS, max(0, digits - 1 - math.floor(math.log10(abs(v)))))
    text = f"{v:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("0", "-0") else text


def human_bytes(n: float) -> str:
    """Bytes in decimal units: ``2199023255552`` -> ``2.2 TB``."""
    if abs(n) < 999.5:
        return f"{n:.0f} B"
    for unit in ("kB", "MB", "GB", "TB", "PB", "EB"):
        n /= 1000
        if abs(n) < 999.5 or unit == "EB":
            return f"{significant(n)} {unit}"
    raise AssertionError("unreachable")


def human_rate(n: float) -> str:
    """Bytes per second: ``1.4e9`` -> ``1.4 GB/s``."""
    return human_bytes(n) + "/s"


def human_duration(s: float) -> str:
    """Seconds as ``24 µs``, ``537 ms``, ``12.3 s``, ``3 min 12 s``, ``2 h 05 min``, ``3 d 4 h``
    (``5 min``, ``2 h``, ``3 d`` when the smaller unit is 0)."""
    if not math.isfinite(s):
        return f"{s} s"
    if s < 0:
        return "-" + human_duration(-s)
    if s == 0:
        return "0 s"
    if s < 1e-3:
        return f"{significant(s * 1e6)} µs"
    if s < 1:
        return f"{significant(s * 1e3)} ms"
    if s < 59.95:
        return f"{significant(s)} s"
    s = round(s)
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    if s < 86400:
        return f"{s // 3600} h" + (f" {s % 3600 // 60:02d} min" if s % 3600 // 60 else "")
    return f"{s // 86400} d" + (f" {s % 86400 // 3600} h" if s % 86400 // 3600 else "")


def human_rank_time(s: float) -> str:
    """Rank-seconds (time summed over ranks) as ``12.3 rank-s``, ``2,400 rank-s``, ``27.9 rank-h``.

    A plain number of one unit, not ``1 d 3 h``: a sum over 2048 ranks is no span of
    wall-clock time, and a rank-hour reads as the core-hour of one core per rank.
    """
    if not math.isfinite(s) or abs(s) < 3600:
        return f"{significant(s)} rank-s"
    return f"{significant(s / 3600)} rank-h"


def per_rank_label(mean: float, ranks: int | None) -> str:
    """``47.6 s per rank, 2048 ranks``: a mean I/O time per rank and the ranks it is over."""
    count = "? ranks" if missing(ranks) else f"{ranks} rank{'s' * (ranks != 1)}"
    return count if missing(mean) else f"{human_duration(mean)} per rank, {count}"


def human_number(v: object) -> str:
    """A plain number: integers whole (ids and counts, ungrouped), others to four
    significant digits, never in scientific notation; missing values (None, NaN) empty."""
    if missing(v):
        return ""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return str(v)
    if isinstance(v, numbers.Integral):
        return str(int(v))
    v = float(v)
    if v.is_integer() and abs(v) < 1e18:
        return str(int(v))
    return significant(v, 4)


def missing(v: object) -> bool:
    """Whether ``v`` is no value at all (None, NaN, pandas' NA and NaT)."""
    if v is None:
        return True
    try:
        return bool(v != v)  # NaN, NaT: not equal to themselves
    except TypeError:  # pandas.NA: its comparison has no truth value
        return True
    except ValueError:  # an array: a value, even when it holds NaN
        return False


def elide_middle(text: str, width: int = PATH_WIDTH) -> str:
    """``text`` cut to ``width`` characters by dropping its middle (paths keep both ends)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def column_kind(name: str) -> str:
    """What a column holds, from its name: ``rate``, ``bytes``, ``rank_time`` (seconds
    summed over ranks), ``duration`` or ``plain``.

    A ``_per_rank`` suffix (a mean over ranks) holds what the name before it holds.
    """
    n = name.lower().removesuffix("_per_rank")
    if n.endswith(("rank_seconds", "rank_s", "stake_s")):
        return "rank_time"
    if "bytes" in n and ("per_s" in n or "/s" in n or "rate" in n or n.endswith("_bps")):
        return "rate"
    if "bytes" in n or n.endswith(("_extent", "size_estimate")):
        return "bytes"
    if any(w in n for w in _NOT_DURATION):
        return "plain"
    if n in _TIME_EXACT or n.endswith(("_time", "_seconds", "_secs", "_duration")):
        return "duration"
    return "plain"


_BY_KIND = {
    "bytes": human_bytes,
    "rate": human_rate,
    "duration": human_duration,
    "rank_time": human_rank_time,
}


def cell(column: str, v: object) -> str:
    """One table cell: human units by column kind, numbers without exponents."""
    if missing(v):
        return ""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        text = str(v)
        return elide_middle(text) if "/" in text and " " not in text else text
    show = _BY_KIND.get(column_kind(column))
    return show(float(v)) if show else human_number(v)
