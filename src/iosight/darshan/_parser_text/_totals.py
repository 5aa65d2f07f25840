"""``job_totals`` from a dump's own ``total_*`` and ``--perf`` lines."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from iosight._errors import CorruptLogError

if TYPE_CHECKING:
    import pyarrow as pa

_PERF_KEYS = ("agg_perf_by_slowest", "agg_time_by_slowest", "total_bytes")  # read_pydarshan's order
_TOTAL = re.compile(r"\n(total_[A-Za-z0-9_]+): ([^\n]*)")


def _printed_totals(text: str, perf: dict[str, dict[str, str]]) -> pa.Table | None:
    """``job_totals`` from the dump's own ``total_*`` and ``--perf`` lines, if it has them.

    These are darshan-parser's own reduction (libdarshan-util's accumulator), so
    they are preferred over recomputing. Integer counters stay int64; ``*_F_*``
    counters and ``<MOD>_agg_perf_by_slowest``/``<MOD>_agg_time_by_slowest`` are
    float64, ``<MOD>_total_bytes`` int64; each module's perf values follow its
    ``total_*`` columns, as :func:`read_pydarshan` orders them.
    """
    import pyarrow as pa

    printed = _TOTAL.findall(text)
    if not printed:
        return None

    def tag_of(key: str) -> str | None:
        return next((t for t in perf if key.startswith(f"total_{t}_")), None)

    items: list[tuple[str, str]] = []
    for i, (key, value) in enumerate(printed):
        items.append((key, value))
        tag = tag_of(key)
        if tag and (i + 1 == len(printed) or tag_of(printed[i + 1][0]) != tag):
            items += [(f"{tag}_{k}", perf[tag][k]) for k in _PERF_KEYS if k in perf[tag]]
    cols: dict[str, pa.Array] = {}
    for key, value in items:
        is_float = "_F_" in key or "_agg_" in key
        try:
            number = float(value) if is_float else int(value)
        except ValueError:
            raise CorruptLogError(f"non-numeric value in {key}") from None
        cols[key] = pa.array([number], pa.float64() if is_float else pa.int64())
    return pa.table(cols)
