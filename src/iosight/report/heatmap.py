"""A job's HEATMAP bins over their whole extent, for the figures that draw them as lines.

The ``heatmap`` table stores only the bins with bytes (docs/warehouse.md): a line drawn
through the stored bins alone would not fall to 0 across the bins between them, nor
reach the heatmap's end. The bins without rows are put back here as 0, from each
record's ``nbins``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iosight.report.dxt import MAX_DXT_POINTS

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse


def job_heatmap(
    wh: Warehouse, key: str, module: str = "POSIX", max_bins: int = MAX_DXT_POINTS
) -> pd.DataFrame:
    """``bin_start, read_bytes, write_bytes`` of job ``key``'s ``module`` HEATMAP records,
    summed per bin start, over every bin of their extent (for each bin width, the largest
    ``nbins`` of its records; in files written before ``nbins`` was kept, which stored
    every bin, the highest bin plus one), sorted by ``bin_start``; no rows when the job
    has no bin with bytes.

    ``wh``: the warehouse (it must have ``heatmap``); ``key``: the job; ``module``: the
    heatmap's module (Darshan's ``heatmap:POSIX`` is ``POSIX``); ``max_bins``: the most
    bins of one width drawn. A log may claim any ``nbins`` (the stored rows are only the
    bins with bytes), so a wider extent sums adjacent bins into wider ones: memory and
    the points a page ships stay bounded whatever the log says.
    """
    import pandas as pd

    n = "coalesce(nbins, bin + 1)" if "nbins" in wh.column_names("heatmap") else "bin + 1"
    rows = wh.sql(
        f"select bin_width, bin, sum(read_bytes) r, sum(write_bytes) w, max({n}) n "
        "from heatmap where job_key = ? and module = ? group by 1, 2",
        [key, module],
    )
    parts = []
    for width, got in rows.groupby("bin_width", sort=False):
        at = got["bin"].to_numpy(np.int64)
        extent = max(int(got["n"].max()), int(at.max()) + 1)  # a bin past nbins: corrupt
        step = -(-extent // max_bins)  # adjacent bins summed: at most max_bins drawn
        read, write = (np.zeros(-(-extent // step), np.float64) for _ in range(2))
        np.add.at(read, at // step, got["r"].to_numpy(np.float64))
        np.add.at(write, at // step, got["w"].to_numpy(np.float64))
        start = np.arange(len(read)) * (width * step)
        parts.append(pd.DataFrame({"bin_start": start, "read_bytes": read, "write_bytes": write}))
    if not parts:
        return pd.DataFrame({c: np.zeros(0) for c in ("bin_start", "read_bytes", "write_bytes")})
    bins = pd.concat(parts).groupby("bin_start", as_index=False).sum()
    return bins.sort_values("bin_start", ignore_index=True)
