"""The scheduler's view (Slurm's snapshots, tables ``sched_jobs`` and ``sched_snapshots``
written by :class:`iosight.live.SlurmFeed`) read back, and joined to the ended runs as
the running-job state of feature set 4.

A Darshan log lands when its job ends, so a live warehouse's logs never hold the jobs
still running. Where Slurm's snapshots exist, the jobs running at t are those of the
last snapshot at or before t that have no log known by t (matched by ``jobid``); the
logs give the ended runs (their statistics, known from ``known_at``) and, before the
first snapshot, the running jobs as before. A running job's end and bytes are never
read: Slurm gives neither, and its log, which lands later, is not looked at before it
lands. The layering keeps these readers here: ``iosight.live`` imports ``bursts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

SCHED_JOBS = "sched_jobs"
SCHED_SNAPSHOTS = "sched_snapshots"
RUNNING = frozenset({"RUNNING", "COMPLETING"})
PENDING = "PENDING"
#: where feature set 4's running jobs come from (:func:`set4_jobs`)
RUNNING_SOURCES = ("auto", "slurm", "logs")
_UNLIMITED_RUN = 365 * 86400.0  # how long a running job without a time limit may run
SCHED_COLUMNS = ("jobid", "name", "user", "partition", "nodes", "ntasks", "state",
                 "submit_time", "start_time", "end_time", "time_limit_s")  # fmt: skip


def last_snapshot(warehouse: Warehouse, at: float | None = None) -> tuple[float, str] | None:
    """Time and source of the last snapshot taken at or before ``at`` (default: any).

    ``warehouse``: the warehouse holding ``sched_snapshots``.
    """
    if not warehouse.has_table(SCHED_SNAPSHOTS):
        return None
    where, params = ("where known_at <= ?", [float(at)]) if at is not None else ("", [])
    rows = warehouse.rows(
        f"select known_at, source from {SCHED_SNAPSHOTS} {where} order by known_at desc limit 1",
        params,
    )
    if not len(rows):
        return None
    (row,) = rows.records()
    return float(row["known_at"]), str(row["source"])


def sched_snapshot(warehouse: Warehouse, at: float | None = None) -> pd.DataFrame:
    """The jobs of the last snapshot taken at or before ``at`` (``sched_jobs`` rows);
    empty when there is none yet or it held no job.

    ``warehouse``: the warehouse holding the snapshots.
    """
    return _jobs_of(warehouse, last_snapshot(warehouse, at))


def _jobs_of(warehouse: Warehouse, last: tuple[float, str] | None) -> pd.DataFrame:
    """The ``sched_jobs`` rows of the snapshot ``last`` (time, source)."""
    if last is None or not warehouse.has_table(SCHED_JOBS):
        import pandas as pd

        return pd.DataFrame(columns=[*SCHED_COLUMNS, "known_at"])
    return warehouse.sql(f"select * from {SCHED_JOBS} where known_at = ? order by jobid", [last[0]])


@dataclass(frozen=True)
class SchedulerView:
    """What Slurm showed at ``as_of`` (its last snapshot at or before the asked time):
    ``running`` jobs (start, size, name) and ``pending`` ones with Slurm's expected start
    (``start_time``; missing where Slurm has not planned the job yet)."""

    as_of: float | None
    running: pd.DataFrame
    pending: pd.DataFrame


def scheduler_view(warehouse: Warehouse, at: float | None = None) -> SchedulerView:
    """The scheduler's view at ``at`` (epoch s; default the last snapshot).

    ``warehouse``: the warehouse holding the snapshots.
    """
    last = last_snapshot(warehouse, at)
    jobs = _jobs_of(warehouse, last)
    running = jobs[jobs["state"].isin(RUNNING)].reset_index(drop=True)
    pending = jobs[jobs["state"] == PENDING].sort_values(["start_time", "jobid"], kind="mergesort")
    return SchedulerView(last[0] if last else None, running, pending.reset_index(drop=True))


def slurm_running_jobs(warehouse: Warehouse, at: float | None = None) -> pd.DataFrame:
    """Jobs running at ``at`` as Slurm saw them, in :func:`iosight.bursts.load_jobs`'
    columns, to join the ended runs in :func:`iosight.bursts.job_state`.

    ``exe`` is the Slurm job name (what stands for the application when no log has
    landed), ``nprocs`` the tasks launched (Slurm's total over the job's nodes; the node
    count where Slurm gives none), ``source`` ``"slurm"``. A running job's end and bytes
    are unknown: its bytes are 0 and its end is the end of its time limit (a year where it
    has none), Slurm's own expectation, never before the snapshot; ``known_at`` is that
    end too, so no run is taken as an ended one before it could have ended.

    ``warehouse``: the warehouse holding the snapshots.
    """
    view = scheduler_view(warehouse, at)
    seen = view.as_of if view.as_of is not None else -np.inf
    jobs = _as_jobs(view.running, np.full(len(view.running), seen))
    jobs["known_at"] = jobs["end_time"]
    return jobs.drop(columns="jobid")


def _as_jobs(run: pd.DataFrame, seen: np.ndarray) -> pd.DataFrame:
    """``sched_jobs`` rows of running jobs, each seen running at ``seen``, in
    :func:`load_jobs`' columns (and ``jobid``): bytes 0, end the end of the time limit
    (a year without one), never before ``seen``."""
    import pandas as pd

    start = run["start_time"].to_numpy(np.float64)
    limit = run["time_limit_s"].to_numpy(np.float64)
    limit = np.where(np.isfinite(limit), limit, _UNLIMITED_RUN)
    tasks = run["ntasks"].astype("Float64").fillna(run["nodes"].astype("Float64"))
    return pd.DataFrame(
        {
            "start_time": start,
            "end_time": np.maximum(start + limit, seen),
            "exe": run["name"].astype(str).to_numpy(),
            "source": "slurm",
            "nprocs": tasks.fillna(1).clip(lower=1).to_numpy(np.int64),
            "uid": run["user"].astype(str).to_numpy(),
            "read_bytes": 0.0,
            "write_bytes": 0.0,
            "jobid": run["jobid"].to_numpy(np.int64),
        }
    )


def scheduler_jobs(
    warehouse: Warehouse,
    jobs: pd.DataFrame,
    *,
    logs_until: float | None = None,
    since: float = -np.inf,
) -> pd.DataFrame:
    """The jobs of feature set 4 with Slurm's view of the running ones: ``jobs``
    (:func:`load_jobs`, with ``jobid``) counted running only before ``logs_until``, plus
    one row per job and snapshot that showed it running, counted running from that
    snapshot until the next one or until the job's log is known, whichever is first.

    ``logs_until``: until when the logs' jobs stand for the scheduler's view (default:
    the first snapshot, as the batch ``logs`` regime assumes before it; ``-inf``: never,
    as follow mode sees them: a log lands after its job ended, so the logs known at t
    show no job running at t). ``since``: only Slurm's rows of snapshots whose window
    reaches past it (a caller that needs bins ending after ``since`` only: follow mode
    reads the snapshots of the bins it forecasts, not the year's). The window a row
    counts as running in is
    ``running_from`` / ``running_until`` (read by :func:`job_state` and the nowcast);
    Slurm's rows never count as ended runs (``known_at`` infinite). ``jobs`` unchanged
    when the warehouse has no snapshot and ``logs_until`` is not given.

    ``warehouse``: the warehouse holding the snapshots.
    """
    import pandas as pd

    first = _first_snapshot(warehouse)
    if logs_until is None:
        if first is None:
            return jobs
        logs_until = first
    logs = jobs.assign(running_from=jobs["start_time"],
                       running_until=np.minimum(jobs["end_time"], logs_until))  # fmt: skip
    if first is None or not warehouse.has_table(SCHED_JOBS):  # no snapshot, or all empty
        return logs
    run = _running_windows(warehouse, since)
    landed = jobs.groupby("jobid")["known_at"].min()
    log_at = run["jobid"].map(landed).to_numpy(np.float64)
    until = np.fmin(run["until"].to_numpy(np.float64), log_at)
    seen = run["seen"].to_numpy(np.float64)
    slurm = _as_jobs(run, seen).assign(
        known_at=np.inf,
        running_from=np.nextafter(seen, -np.inf),  # a snapshot at T counts at T
        running_until=until,
    )
    slurm = slurm[until > seen]
    return pd.concat([logs, slurm], ignore_index=True)


def set4_jobs(warehouse: Warehouse, running: str = "auto") -> tuple[pd.DataFrame, str]:
    """Feature set 4's jobs of ``warehouse`` and where their running jobs come from:
    ``"slurm"`` (Slurm's snapshots, :func:`scheduler_jobs`: the logs' jobs stand in before
    the first) or ``"logs"`` (:func:`load_jobs`: the logs' start times, sizes and
    executables, as the batch ``logs`` regime assumes the scheduler knew them).
    ``running``: one of those, or ``"auto"``, Slurm's where the warehouse has a snapshot."""
    from iosight.bursts._jobstate import load_jobs

    check_param("running", running, running in RUNNING_SOURCES, "'auto', 'slurm' or 'logs'")
    has = _first_snapshot(warehouse) is not None
    if running == "slurm" and not has:
        raise IosightError(
            f"no Slurm snapshot in {warehouse.path} (table {SCHED_SNAPSHOTS}): poll them with "
            "iosight live's slurm feed, or take the running jobs from the logs"
        )
    jobs = load_jobs(warehouse)
    if running == "logs" or not has:
        return jobs, "logs"
    return scheduler_jobs(warehouse, jobs), "slurm"


def _first_snapshot(warehouse: Warehouse) -> float | None:
    """Time of the first snapshot (None: none)."""
    if not warehouse.has_table(SCHED_SNAPSHOTS):
        return None
    got = warehouse.rows(f"select min(known_at) as t from {SCHED_SNAPSHOTS}")
    (row,) = got.records()
    return None if row["t"] is None else float(row["t"])


def _running_windows(warehouse: Warehouse, since: float = -np.inf) -> pd.DataFrame:
    """The running rows of every snapshot whose window ends after ``since``, with
    ``seen`` (its time) and ``until`` (the next snapshot's; infinite after the last)."""
    states = ", ".join(f"'{s}'" for s in sorted(RUNNING))
    return warehouse.sql(
        "with s as (select known_at, coalesce(lead(known_at) over (order by known_at), "
        f"'inf'::double) as nxt from (select distinct known_at from {SCHED_SNAPSHOTS})) "
        "select j.*, s.known_at as seen, s.nxt as until "
        f"from {SCHED_JOBS} j join s using (known_at) where j.state in ({states}) "
        "and s.nxt > ? order by seen, jobid",
        [float(since)],
    )
