"""The live timeline: the logs' timeline plus the stream's rows of the jobs with no log.

A job's Darshan log is complete and exact; its LDMS messages are what was seen of it
while it ran. So at time T a job counts once: by its log when the log is known by T
(``jobs`` has its ``jobid`` and :data:`~iosight.warehouse.KNOWN_AT` <= T), else by the
``live_io`` rows known by T. A log replaces the rows of its job id in the bins its run
touches, not others: job ids are recycled, and a later run of the id is another job.
Only the layers the timeline counts reach it (:data:`iosight.timeline.LAYERS`: MPI-IO
and HDF5 run over POSIX and would count twice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError
from iosight.live._ldms import BIN_WIDTH, LIVE_IO

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse


def _live_sql(as_of: float | None, with_jobs: bool) -> str:
    """Per live job and bin: bytes and operations of the timeline's layers, and the job's
    first and last bin (``b0``, ``b1``), of the rows no log replaces."""
    from iosight.timeline import LAYERS
    from iosight.warehouse import known_at_sql

    known = "true" if as_of is None else f"known_at <= {float(as_of)!r}"
    layers = ", ".join(f"'{m}'" for m in LAYERS)
    kept = "l"
    if with_jobs:
        log_known = "true" if as_of is None else f"{known_at_sql('j')} <= {float(as_of)!r}"
        kept = (
            "(select * from l where not exists (select 1 from jobs j where j.jobid = l.jobid "
            f"and {log_known} and l.bin_start <= coalesce(j.end_time, j.start_time) "
            f"and l.bin_start + {BIN_WIDTH!r} > j.start_time))"
        )

    def layer(col: str) -> str:
        return f"sum(case when k.module in ({layers}) then k.{col} else 0 end)"

    return (
        f"with l as (select * from {LIVE_IO} where {known}), kept as (select * from {kept}), "
        "span as (select jobid, min(bin_start) as b0, max(bin_start) as b1 from kept "
        "group by jobid) "
        f"select k.jobid, s.b0, s.b1, k.bin_start, {layer('read_bytes')} as read_bytes, "
        f"{layer('write_bytes')} as write_bytes, {layer('reads')} as read_ops, "
        f"{layer('writes')} as write_ops from kept k join span s using (jobid) "
        "group by k.jobid, s.b0, s.b1, k.bin_start"
    )


def live_rows(warehouse: Warehouse, as_of: float | None = None) -> pd.DataFrame:
    """The ``live_io`` sums of ``warehouse`` known by ``as_of`` (all: None) that no log
    known by then replaces: one row per (``jobid``, ``bin_start``) with ``b0``/``b1``
    (the job's first and last such bin), bytes and operations of the timeline's layers."""
    import pandas as pd

    if not warehouse.has_table(LIVE_IO):
        return pd.DataFrame(columns=["jobid", "b0", "b1", "bin_start", "read_bytes",
                                     "write_bytes", "read_ops", "write_ops"])  # fmt: skip
    return warehouse.sql(_live_sql(as_of, warehouse.has_table("jobs")))


def live_timeline(
    warehouse: Warehouse, as_of: float | None = None, *, bin_width: float = BIN_WIDTH
) -> pd.DataFrame:
    """The timeline of ``warehouse`` as of ``as_of`` (epoch s; None: everything stored):
    the logs' timeline of the jobs known then (:func:`iosight.timeline.known_timeline`) plus the
    live rows known then of the jobs with no log known then (:func:`live_rows`).

    A frame like :func:`iosight.timeline.load_timeline`'s (``TIMELINE_COLUMNS``, every
    bin from first to last, sorted). A live job adds its bytes and operations to the bins
    of its messages' ends (no I/O time: the stream's durations are not summed) and
    counts as active from its first to its last bin in the stream. ``bin_width`` is a
    multiple of the stream's 300 s.
    """
    from iosight.timeline import known_timeline

    ratio = bin_width / BIN_WIDTH
    if not (ratio >= 1 and float(ratio).is_integer()):
        raise IosightError(f"bin_width must be a multiple of {BIN_WIDTH:g} s, not {bin_width!r}")
    logs = known_timeline(warehouse, as_of, bin_width=bin_width)
    live = live_rows(warehouse, as_of)
    if logs is None and live.empty:
        raise IosightError("no jobs and no live rows known then to build a timeline from")
    return _merge(None if logs is None else logs.to_pandas(), live, float(bin_width))


def stream_timeline(
    warehouse: Warehouse,
    bin_width: float = BIN_WIDTH,
    *,
    as_of: float | None = None,
    logs: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame | None, float]:
    """The system's rate in bins of ``bin_width`` s as the logs and the LDMS stream of
    ``warehouse`` tell it at ``as_of`` (epoch s; None: everything stored), and the start
    of its last complete bin: the last that
    ended by the stream's newest row known then (the stream's clock: a message arrives
    after the I/O it reports). ``(None, nan)`` without a stream row known then.

    The frame is :func:`live_timeline`'s, or, given ``logs`` (the logs' timeline of the
    jobs known at ``as_of``, e.g. the stored one when ``as_of`` is None), ``logs`` plus
    :func:`live_rows`: a server at hand has the stored timeline and need not stream the
    jobs again. A ``live`` forecaster reads it as the system's rate where no server-side
    rate exists: every job counts once, by its log once known, else by its stream.
    """
    import math

    if not warehouse.has_table(LIVE_IO):
        return None, math.nan
    known = "" if as_of is None else f" where known_at <= {float(as_of)!r}"
    newest = warehouse.connect().execute(f"select max(known_at) from {LIVE_IO}{known}")
    newest = newest.fetchall()[0][0]
    if newest is None:
        return None, math.nan
    if logs is None:
        df = live_timeline(warehouse, as_of, bin_width=bin_width)
    else:
        df = _merge(logs, live_rows(warehouse, as_of), float(bin_width))
    complete = df["bin_start"][df["bin_start"] + bin_width <= float(newest)]
    if complete.empty:
        return None, math.nan
    return df, float(complete.iloc[-1])


def _merge(logs: pd.DataFrame | None, live: pd.DataFrame, width: float) -> pd.DataFrame:
    """``logs`` (a timeline frame, or None) with the ``live`` rows added, on one grid."""
    import pandas as pd

    from iosight.timeline import TIMELINE_COLUMNS, VALUE_COLUMNS

    firsts = [np.floor(live["b0"].min() / width)] if len(live) else []
    lasts = [np.floor(live["b1"].max() / width)] if len(live) else []
    if logs is not None:
        firsts.append(round(logs["bin_start"].iloc[0] / width))
        lasts.append(round(logs["bin_start"].iloc[-1] / width))
    k0, k1 = int(min(firsts)), int(max(lasts))
    n = k1 - k0 + 1
    sums = np.zeros((n, len(VALUE_COLUMNS)))
    active = np.zeros(n, dtype=np.int64)
    if logs is not None:
        at = np.round(logs["bin_start"].to_numpy() / width).astype(np.int64) - k0
        sums[at] = logs[list(VALUE_COLUMNS)].to_numpy()
        active[at] = logs["active_jobs"].to_numpy()
    if len(live):
        at = np.floor(live["bin_start"].to_numpy(float) / width).astype(np.int64) - k0
        for col in ("read_bytes", "write_bytes", "read_ops", "write_ops"):
            np.add.at(sums[:, VALUE_COLUMNS.index(col)], at, live[col].to_numpy(float))
        jobs = live.drop_duplicates("jobid")
        lo = np.floor(jobs["b0"].to_numpy(float) / width).astype(np.int64) - k0
        hi = np.floor(jobs["b1"].to_numpy(float) / width).astype(np.int64) - k0
        diff = np.zeros(n + 1, dtype=np.int64)
        np.add.at(diff, lo, 1)
        np.add.at(diff, hi + 1, -1)
        active += np.cumsum(diff[:-1])
    frame = {"bin_start": width * np.arange(k0, k1 + 1, dtype=np.float64),
             "bin_width": np.full(n, width)}  # fmt: skip
    frame |= {c: sums[:, i] for i, c in enumerate(VALUE_COLUMNS)}
    frame["active_jobs"] = active
    return pd.DataFrame(frame, columns=list(TIMELINE_COLUMNS))
