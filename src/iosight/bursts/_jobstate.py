"""System state from the jobs themselves, known at the end of each bin (feature set 4).

Beyond the paper (§V uses the binned series only). At the end ``T`` of bin t the facility
knows which jobs are running (started before ``T``, not ended by ``T``), of which
application and since when, and the totals of the jobs that have *ended* (a Darshan
log, or a job-total row such as Summit's, is written when a job ends). From the ended
runs of the same application it estimates a running job's I/O rate (bytes / run time)
and the chance that it still runs ``L`` bins later (the empirical run-length survival,
conditioned on the time it has already run). Summed over running jobs this gives the
expected I/O of running jobs in each of the next bins.

Strictly causal: a running job's end time and totals are never read; application
statistics come from runs whose log was known (``known_at``, never before the run's end)
before the start of the day holding ``T`` (one snapshot a day keeps the cost linear).
An application is its ``exe``; with fewer than ``MIN_RUNS`` known runs of that ``exe``
the job's source (one published table per application, as Summit's) stands in, then
all known runs together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

N_AHEAD = 24  # bins of expected I/O, two hours of 5-minute bins (§V-B)
MIN_RUNS = 3  # ended runs an application needs before its own statistics are used
_DAY = 86400.0
_NEVER = 9e9  # a run never known (the year 2255): after any real time, below 1e10
_JOB_COLUMNS = ("start_time", "end_time", "exe", "source", "nprocs", "read_bytes", "write_bytes")


def load_jobs(warehouse: Warehouse) -> pd.DataFrame:
    """Per job: ``jobid`` (to match Slurm's), ``start_time``, ``end_time``, ``exe``,
    ``source``, ``nprocs``, ``uid``,
    ``known_at`` (when its log landed: ``iosight.warehouse.KNOWN_AT``) and POSIX+STDIO
    ``read_bytes`` / ``write_bytes`` (records where present, else ``job_totals``), the
    layers the timeline counts (``iosight.timeline``).

    ``warehouse``: the warehouse read.
    """
    from iosight.timeline import LAYERS
    from iosight.warehouse import KNOWN_AT

    warehouse.require("jobs")
    parts = []
    for layer in LAYERS:
        table = layer.lower()
        if warehouse.has_table(table):
            cols = set(warehouse.column_names(table))
            r, w = (f"{layer}_BYTES_{x}" for x in ("READ", "WRITTEN"))
            if r in cols and w in cols:
                parts.append(
                    f'select job_key, greatest(coalesce("{r}", 0), 0) as r, '
                    f'greatest(coalesce("{w}", 0), 0) as w from {table}'
                )
    if warehouse.has_table("job_totals"):
        cols = set(warehouse.column_names("job_totals"))
        for layer in LAYERS:
            r, w = (f"total_{layer}_BYTES_{x}" for x in ("READ", "WRITTEN"))
            if r in cols and w in cols:
                skip = (
                    f"where job_key not in (select job_key from {layer.lower()})"
                    if warehouse.has_table(layer.lower())
                    else ""
                )
                parts.append(
                    f'select job_key, greatest(coalesce("{r}", 0), 0) as r, '
                    f'greatest(coalesce("{w}", 0), 0) as w from job_totals {skip}'
                )
    io = " union all ".join(parts) if parts else "select null as job_key, 0 as r, 0 as w"
    return warehouse.sql(
        "select try_cast(j.jobid as bigint) as jobid, j.start_time, "
        "coalesce(j.end_time, j.start_time) as end_time, "
        "coalesce(j.exe, '') as exe, coalesce(j.source_path, '') as source, "
        "greatest(coalesce(j.nprocs, 1), 1) as nprocs, coalesce(cast(j.uid as varchar), '') "
        f"as uid, coalesce({KNOWN_AT}, j.start_time) as known_at, "
        "coalesce(sum(io.r), 0) as read_bytes, coalesce(sum(io.w), 0) as write_bytes "
        f"from jobs j left join ({io}) io using (job_key) where j.start_time is not null "
        "group by j.job_key, j.jobid, j.start_time, j.end_time, j.exe, j.source_path, "
        "j.nprocs, j.uid, j.known_at "
        "order by j.start_time, j.job_key"
    )


@dataclass(frozen=True)
class JobState:
    """Job state at the end of every bin (one row per bin).

    Attributes
    ----------
    running : ndarray
        Jobs running at the bin's end.
    elapsed_ratio : ndarray
        Mean over running jobs of elapsed time / median run time of the application's
        ended runs (0 without running jobs).
    expected : ndarray, shape (n_bins, N_AHEAD + 1)
        Expected bytes of the running jobs in bin t + L, L = 0..N_AHEAD (L = 0: at the
        current rate, every running job counted whole).
    """

    running: np.ndarray
    elapsed_ratio: np.ndarray
    expected: np.ndarray


def _job_times(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (never before the start) of every job of a :func:`load_jobs` frame."""
    missing = [c for c in _JOB_COLUMNS if c not in jobs.columns]
    if missing:
        raise IosightError(f"the jobs frame lacks {missing}; build it with load_jobs()")
    start = jobs["start_time"].to_numpy(np.float64)
    return start, np.maximum(jobs["end_time"].to_numpy(np.float64), start)


def _known_times(jobs: pd.DataFrame, end: np.ndarray) -> np.ndarray:
    """When each run's totals became known: its log's landing (``known_at``, absent or
    missing: its end), never before its end."""
    if "known_at" not in jobs.columns:
        return end
    return np.fmax(jobs["known_at"].to_numpy(np.float64), end)


def _running_window(
    jobs: pd.DataFrame, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """When each job counts as running (after the first, before the second): its run, or
    the window the scheduler's view gives it (``running_from`` / ``running_until``,
    :func:`iosight.bursts.scheduler_jobs`), never before its start."""
    if "running_from" not in jobs.columns:
        return start, end
    run_from = np.maximum(jobs["running_from"].to_numpy(np.float64), np.nextafter(start, -np.inf))
    return run_from, jobs["running_until"].to_numpy(np.float64)


def job_state(jobs: pd.DataFrame, bin_start: np.ndarray, width: float, direction: str) -> JobState:
    """The state of running jobs at the end of each bin, using only what was known then.

    Parameters
    ----------
    jobs : DataFrame
        :func:`load_jobs` columns.
    bin_start : ndarray
        Bin starts (epoch s), equally spaced by ``width``.
    direction : {"read", "write"}
    """
    start, end = _job_times(jobs)
    n = len(bin_start)
    ends_T = np.asarray(bin_start, np.float64) + width
    runtime = np.maximum(end - start, 1.0)
    known = _known_times(jobs, end)
    nprocs = np.maximum(jobs["nprocs"].to_numpy(np.float64), 1.0)
    rate = jobs[f"{direction}_bytes"].to_numpy(np.float64) / (runtime * nprocs)  # per process
    # (bin, job) pairs: job started before the bin's end and has not ended by then
    run_from, run_until = _running_window(jobs, start, end)
    first = np.searchsorted(ends_T, run_from, side="right")  # first bin whose end > start
    last = np.searchsorted(ends_T, run_until, side="left")  # first bin whose end >= end
    count = np.maximum(last - first, 0)
    job = np.repeat(np.arange(len(start)), count)
    bins = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
    T = ends_T[bins]
    elapsed = T - start[job]
    day = np.floor(T / _DAY) * _DAY
    offsets = (np.arange(N_AHEAD) + 0.5) * width
    rate_p = np.zeros(job.size)
    surv = np.zeros((job.size, N_AHEAD))
    median = np.full(job.size, np.nan)
    done = np.zeros(job.size, bool)
    for key in (jobs["exe"].to_numpy(), jobs["source"].to_numpy(), np.zeros(len(start))):
        todo = ~done
        if not todo.any():
            break
        r, s, m, ok = _history(key, known, runtime, rate, job[todo], day[todo],
                               elapsed[todo], offsets)  # fmt: skip
        idx = np.flatnonzero(todo)[ok]
        rate_p[idx], surv[idx], median[idx] = r[ok] * nprocs[job[idx]], s[ok], m[ok]
        done[idx] = True
    expected = np.zeros((n, N_AHEAD + 1))
    expected[:, 0] = np.bincount(bins, weights=rate_p * width, minlength=n)
    for lead in range(N_AHEAD):
        expected[:, lead + 1] = np.bincount(bins, weights=rate_p * width * surv[:, lead],
                                            minlength=n)  # fmt: skip
    running = np.bincount(bins, minlength=n).astype(np.float64)
    ratio = np.where(done, elapsed / np.where(done, median, 1.0), 0.0)
    elapsed_ratio = np.bincount(bins, weights=ratio, minlength=n) / np.maximum(running, 1)
    return JobState(running, elapsed_ratio, expected)


def bytes_by_start(
    jobs: pd.DataFrame, bin_start: np.ndarray, width: float, direction: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each job's bytes spread over its run in proportion to time (how ``iosight.timeline``
    bins job totals), as ``(bin, job start, bytes)`` triples, one per bin a job touches
    inside the timeline. In hindsight: what each job, once started, brought to every bin.
    """
    from iosight.timeline import spread_fractions

    start, end = _job_times(jobs)
    origin = float(bin_start[0]) if len(bin_start) else 0.0
    rows, bins, frac = spread_fractions(start - origin, end - origin, width)
    inside = (bins >= 0) & (bins < len(bin_start))
    rows, bins = rows[inside], bins[inside]
    value = jobs[f"{direction}_bytes"].to_numpy(np.float64)[rows] * frac[inside]
    return bins, start[rows], value


def started_by(
    triples: tuple[np.ndarray, np.ndarray, np.ndarray],
    bin_start: np.ndarray,
    width: float,
    step: int,
) -> np.ndarray:
    """Bytes of each bin from the jobs that had started by the end of the bin ``step``
    bins earlier (``triples``: :func:`bytes_by_start`); NaN for the first ``step`` bins.

    For a forecast made at the end of bin t for bin t + step, this is everything the jobs
    running at t (and only they) put into the target bin, their futures known exactly.
    """
    bins, start, value = triples
    n = len(bin_start)
    known_at = np.asarray(bin_start, np.float64) + width  # end of each bin
    out = np.full(n, np.nan)
    if n > step:
        src = bins - step  # the bin the forecast is made at
        ok = (src >= 0) & (start < known_at[np.maximum(src, 0)])
        out[step:] = np.bincount(bins[ok], weights=value[ok], minlength=n)[step:]
    return out


def _history(key, known, runtime, rate, job, day, elapsed, offsets):
    """Per (bin, job) pair: rate, conditional survival at each offset and median run time
    of the pair's application from runs known (``known``: their logs' landing) before
    ``day``; ``ok`` where the application had at least ``MIN_RUNS`` such runs."""
    codes, inv = np.unique(key, return_inverse=True)
    order = np.lexsort((known, inv))  # runs grouped by application, by known-at time
    g, e = inv[order], np.minimum(known[order], _NEVER)  # never known (Slurm's): last
    group_first = np.searchsorted(g, np.arange(codes.size))
    # runs of the pair's application known before its day: a prefix of the group
    composite = g.astype(np.float64) * 1e10 + e  # exact: codes < 1e5, times < 1e10
    pos = np.searchsorted(composite, inv[job] * 1e10 + day, side="left")
    n_runs = pos - group_first[inv[job]]
    ok = n_runs >= MIN_RUNS
    cum_b = np.concatenate([[0.0], np.cumsum(rate[order] * runtime[order])])
    cum_t = np.concatenate([[0.0], np.cumsum(runtime[order])])  # time-weighted mean rate
    lo = group_first[inv[job]]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(ok, (cum_b[pos] - cum_b[lo]) / (cum_t[pos] - cum_t[lo]), 0.0)
    surv = np.zeros((job.size, offsets.size))
    median = np.full(job.size, np.nan)
    rt = runtime[order]
    sel = np.flatnonzero(ok)
    combo = lo[sel] * (rt.size + 1) + pos[sel]
    by = np.argsort(combo, kind="stable")
    uniq, cuts = np.unique(combo[by], return_index=True)
    groups = np.split(sel[by], cuts[1:]) if sel.size else []
    for u, pairs in zip(uniq, groups, strict=True):
        a, b = divmod(int(u), rt.size + 1)
        past = np.sort(rt[a:b])
        median[pairs] = past[past.size // 2]
        el = elapsed[pairs]
        alive = past.size - np.searchsorted(past, el, side="right")
        later = past.size - np.searchsorted(past, el[:, None] + offsets[None, :], side="right")
        mean = past.mean()
        tail = np.exp(-offsets[None, :] / mean)  # outlived every earlier run: memoryless
        surv[pairs] = np.where(alive[:, None] > 0, later / np.maximum(alive, 1)[:, None], tail)
    return r, surv, median, ok
