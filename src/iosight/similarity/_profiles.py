"""Job profiles: the fixed-size features the paper contrasts with time series.

Betke & Kunkel (2020), §3 ("Job-IO-Balance, Job-IO-Utilization, Job-IO-Problem-Time")
and §4.1 ("IO-metric" and "IO-duration" job profiles), read as in
``docs/methods.md`` §3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iosight.similarity._codings import METRIC_INDEX, METRICS, Categories, categorize

if TYPE_CHECKING:
    import pandas as pd

IO_METRIC_COLUMNS: tuple[str, ...] = ("io_balance", "io_utilization", "io_problem_time")
IO_DURATION_COLUMNS: tuple[str, ...] = tuple(f"{m}_{c}" for m in METRICS for c in (0, 1, 4))


def job_profiles(series: pd.DataFrame, jobs: pd.DataFrame, categories: Categories) -> pd.DataFrame:
    """IO-metric and IO-duration profiles of every job, in the order of ``jobs``.

    Parameters
    ----------
    series : DataFrame
        Segmented series ``job, node, fs, metric, segment, value``.
    jobs : DataFrame
        ``job, n_segments, n_nodes, n_fs``.
    categories : Categories
        Split points.

    Returns
    -------
    DataFrame
        ``job``, :data:`IO_METRIC_COLUMNS`, then the 27 :data:`IO_DURATION_COLUMNS`.

    Notes
    -----
    iosight's reading (docs/methods.md §3, of the paper's reference [4]): a node's load in a
    segment is the largest category score over metrics and file systems; a segment
    is IO-intensive when some node's load is >= 1. Problem-Time is the fraction of
    IO-intensive segments; Utilization the mean, over those segments, of the largest
    node load; Balance the mean of (mean node load / largest node load), the mean
    taken over all the job's nodes. Jobs without IO-intensive segments get 0 for all
    three. The IO-duration profile gives, per metric, the fraction of segments
    whose largest score over nodes and file systems is 0, 1 and 4.
    """
    import pandas as pd

    order = jobs["job"].tolist()
    pos = pd.Series(np.arange(len(order)), index=order)
    nseg = jobs["n_segments"].to_numpy(dtype=float)
    nnodes = jobs["n_nodes"].to_numpy(dtype=float)
    out = pd.DataFrame({"job": order})
    score = categorize(series, categories) if len(series) else np.zeros(0, dtype=np.int8)
    act = series.assign(score=score)[score > 0]

    node_load = act.groupby(["job", "segment", "node"], sort=False, observed=True)["score"].max()
    seg = node_load.groupby(level=["job", "segment"], sort=False, observed=True).agg(["max", "sum"])
    seg = seg.reset_index()
    ji = pos.loc[seg["job"]].to_numpy()
    balance = seg["sum"].to_numpy() / nnodes[ji] / seg["max"].to_numpy()
    per_job = pd.DataFrame({"ji": ji, "util": seg["max"].to_numpy(), "bal": balance})
    per_job = per_job.groupby("ji").agg(
        n=("util", "size"), util=("util", "mean"), bal=("bal", "mean")
    )
    for col in IO_METRIC_COLUMNS:
        out[col] = 0.0
    idx = per_job.index.to_numpy()
    out.loc[idx, "io_problem_time"] = per_job["n"].to_numpy() / nseg[idx]
    out.loc[idx, "io_utilization"] = per_job["util"].to_numpy()
    out.loc[idx, "io_balance"] = per_job["bal"].to_numpy()

    cat = (
        act.groupby(["job", "metric", "segment"], sort=False, observed=True)["score"]
        .max()
        .reset_index()
    )
    counts = np.zeros((len(order), len(METRICS), 3))
    cj = pos.loc[cat["job"]].to_numpy()
    cm = cat["metric"].map(METRIC_INDEX).to_numpy()
    cc = np.where(cat["score"].to_numpy() >= 4, 2, 1)
    np.add.at(counts, (cj, cm, cc), 1.0)
    counts[:, :, 0] = nseg[:, None] - counts[:, :, 1] - counts[:, :, 2]
    frac = (counts / nseg[:, None, None]).reshape(len(order), -1)
    dur = pd.DataFrame(frac, columns=list(IO_DURATION_COLUMNS))
    return pd.concat([out, dur], axis=1)
