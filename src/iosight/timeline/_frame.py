"""Reading the ``timeline`` table back, durations, and re-binning (Fig. 3 of §IV)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
_SUMMED = ("read_bytes", "write_bytes", "read_ops", "write_ops", "read_time", "write_time")


def parse_duration(text: str | float, *, zero: bool = False) -> float:
    """Seconds in ``"300"``, ``"300s"``, ``"5min"``, ``"2h"``, ``"1d"``, ``"1w"`` (or a number);
    positive, or with ``zero`` also 0 (a delay, say).

    ``text``: the duration.
    """
    if isinstance(text, int | float):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", str(text).lower())
        if not m or m.group(2) not in ("", *_UNITS):
            raise IosightError(
                f"cannot read duration {text!r}; write e.g. 300, 300s, 5min, 2h or 1d"
            )
        value = float(m.group(1)) * _UNITS.get(m.group(2), 1)
    if not np.isfinite(value) or value < 0 or (value == 0 and not zero):
        what = "0 or more" if zero else "positive"
        raise IosightError(f"a duration must be {what}. Got {text!r} instead.")
    return value


def parse_time(text: str | float) -> float:
    """Epoch seconds of ``"2024-03-01 12:00"`` (UTC unless an offset is given), ``"now"``
    or a number; finite times only.

    ``text``: the time.
    """
    import pandas as pd

    try:
        value = float(text)
    except (ValueError, TypeError):
        try:
            # tz="UTC": a naive time is UTC, and "now" the current time whatever the local zone
            value = pd.Timestamp(text, tz="UTC").timestamp()
        except (ValueError, TypeError):
            value = None
    if value is None or not np.isfinite(value):
        raise IosightError(f"cannot read time {text!r}; write e.g. '2024-03-01 12:00'")
    return value


def load_timeline(warehouse: Warehouse) -> pd.DataFrame:
    """The ``timeline`` table as a DataFrame sorted by ``bin_start``.

    ``warehouse``: the warehouse holding the ``timeline`` table.
    """
    warehouse.require("timeline")
    df = warehouse.table("timeline").to_pandas()
    return df.sort_values("bin_start", kind="mergesort").reset_index(drop=True)


def bin_width_of(df: pd.DataFrame) -> float:
    """The single bin width of a timeline frame (an error when it has several).

    ``df``: a timeline frame.
    """
    if df.empty:
        raise IosightError("the timeline is empty")
    widths = np.unique(df["bin_width"].to_numpy(float))
    if len(widths) != 1:
        raise IosightError(f"the timeline mixes bin widths {widths.tolist()}")
    return float(widths[0])


def rebin(df: pd.DataFrame, width_s: float | str) -> pd.DataFrame:
    """Sum a timeline into coarser bins: a multiple of its width, or ``"month"``.

    Bytes, operations and I/O time are summed; ``active_jobs`` becomes the peak of the
    finer bins (a lower bound of the jobs that touched the coarse bin). Bins are
    aligned to the epoch (so hourly bins start on the hour, UTC); calendar months are
    variable-width bins with ``bin_width`` their length in seconds.

    ``df``: a timeline frame; ``width_s``: the coarser width in seconds (or as text, ``"1h"``),
    or ``"month"``.
    """
    import pandas as pd

    base = bin_width_of(df)
    starts = df["bin_start"].to_numpy(float)
    if isinstance(width_s, str) and width_s.lower() in ("month", "monthly", "1mo"):
        month = starts.astype("datetime64[s]").astype("datetime64[M]")
        key = month.astype("datetime64[s]").astype(np.float64)
        nxt = (month + 1).astype("datetime64[s]").astype(np.float64)
        width = pd.Series(nxt - key).groupby(key).first()
    else:
        w = parse_duration(width_s)
        ratio = w / base
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise IosightError(
                f"cannot re-bin {base:g} s bins into {w:g} s bins: not a whole multiple"
            )
        key = np.floor(starts / w) * w
        width = None
    agg = {c: "sum" for c in _SUMMED if c in df.columns}
    if "active_jobs" in df.columns:
        agg["active_jobs"] = "max"
    out = df.groupby(key, sort=True).agg(agg)
    out.insert(0, "bin_width", width.reindex(out.index).to_numpy() if width is not None else w)
    out.insert(0, "bin_start", out.index.to_numpy(float))
    return out.reset_index(drop=True)
