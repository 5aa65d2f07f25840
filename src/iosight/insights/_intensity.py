"""Whether a job is read- or write-intensive, by operations and by bytes (P01-P04).

Drishti's ``check_operation_intensive`` and ``check_size_intensive``: informational.
"""

from __future__ import annotations

import numpy as np

from iosight._units import human_bytes
from iosight.insights._frame import JobData
from iosight.insights._rules import findings, pct, rule, share
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds

_OPS = ("reads", "writes")
_BYTES = ("bytes_read", "bytes_written")


def _intensive(d: JobData, t: Thresholds, a: str, b: str, what: str, unit: str) -> Table:
    j = d.jobs
    x, y = j.num(a), j.num(b)
    diff = share(np.abs(x - y), x + y)
    fmt = human_bytes if unit == "bytes" else (lambda v: f"{v:.0f}")
    return findings(
        j,
        (x > y) & (diff > t.imbalance_operations),
        level="info",
        message=lambda i: [
            f"Application is {what}-intensive by {unit}: {fmt(u)} against {fmt(v)} "
            f"({pct(w)} difference)"
            for u, v, w in zip(x[i], y[i], diff[i], strict=True)
        ],
        evidence={a: x, b: y, "difference_share": diff},
        recommendation="",
    )


@rule("P01", "intensity", "write-intensive by operations", counters=_OPS)
def write_count(d: JobData, t: Thresholds) -> Table:
    return _intensive(d, t, "writes", "reads", "write", "operations")


@rule("P02", "intensity", "read-intensive by operations", counters=_OPS)
def read_count(d: JobData, t: Thresholds) -> Table:
    return _intensive(d, t, "reads", "writes", "read", "operations")


@rule("P03", "intensity", "write-intensive by bytes", counters=_BYTES)
def write_size(d: JobData, t: Thresholds) -> Table:
    return _intensive(d, t, "bytes_written", "bytes_read", "write", "bytes")


@rule("P04", "intensity", "read-intensive by bytes", counters=_BYTES)
def read_size(d: JobData, t: Thresholds) -> Table:
    return _intensive(d, t, "bytes_read", "bytes_written", "read", "bytes")
