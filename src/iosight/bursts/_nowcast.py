"""Nowcast of the current bin from the logs and the scheduler (regime ``logs``).

At the end ``T`` of bin t the logs hold only the jobs whose log has landed; the others
that had started (running, or ended with their log not yet landed) wrote the rest of
the bin, unseen. The nowcast adds to the known part what those jobs are expected to
have written in the bin: each at the rate of its *analog*, the last run of the same
kind whose log had landed before the job started (same user, executable and size, then
looser kinds, :data:`ANALOG_KEYS`), scaled to the job's processes where the size may
differ. The scheduler's view only (start, user, size, executable), never the job's own
bytes or end. Jobs repeat: on Summit 2021 the log write rate of a job and of its analog
of the same user, executable and size correlate at 0.975 (57% of jobs have one;
docs/bursts.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

#: kinds of analog run, most alike first: a job's analog is the last run of its first
#: kind that has one (``nprocs`` in the kind: the same size; else scaled per process)
ANALOG_KEYS = (
    ("uid", "exe", "nprocs"),
    ("uid", "exe"),
    ("uid", "source", "nprocs"),
    ("uid", "source"),
    ("exe",),
    ("source",),
)


def nowcast(known_now: np.ndarray, unseen: np.ndarray) -> np.ndarray:
    """The current bin's bytes (per bin): ``known_now``, the part the logs hold, plus
    ``unseen``, the estimate for jobs whose logs have not landed (:func:`unseen_bytes`)."""
    return np.asarray(known_now, np.float64) + np.asarray(unseen, np.float64)


def known_at(jobs: pd.DataFrame) -> np.ndarray:
    """When each job's log landed: ``known_at`` (:func:`iosight.bursts.load_jobs`), else
    its end."""
    col = "known_at" if "known_at" in jobs else "end_time"
    return np.maximum(jobs[col].to_numpy(np.float64), jobs["start_time"].to_numpy(np.float64))


def analog_rates(jobs: pd.DataFrame, direction: str) -> np.ndarray:
    """Per job, its analog's rate of ``direction`` bytes (bytes per second of run, scaled
    by the ratio of processes unless the kind fixes the size); 0 without any analog.

    ``jobs``: :func:`iosight.bursts.load_jobs`' frame; ``direction``: read or write.
    """
    start = jobs["start_time"].to_numpy(np.float64)
    end = np.maximum(jobs["end_time"].to_numpy(np.float64), start)
    rate = jobs[f"{direction}_bytes"].to_numpy(np.float64) / np.maximum(end - start, 1.0)
    procs = np.maximum(jobs["nprocs"].to_numpy(np.float64), 1.0)
    landed = known_at(jobs)
    out = np.full(len(jobs), np.nan)
    for kind in ANALOG_KEYS:
        prev = _last_landed(_kind_codes(jobs, kind), landed, start)
        found = np.isnan(out) & (prev >= 0)
        p = prev[found]
        scale = 1.0 if "nprocs" in kind else procs[found] / procs[p]
        out[found] = rate[p] * scale
    return np.nan_to_num(out)


def unseen_bytes(
    jobs: pd.DataFrame, bin_start: np.ndarray, width: float, direction: str
) -> np.ndarray:
    """Per bin t, the bytes in t of the jobs started before its end ``T`` whose log had
    not landed by ``T``, at their analog rates over their time in the bin up to ``T``.
    With the scheduler's view (:func:`iosight.bursts.scheduler_jobs`), the jobs it shows
    running at ``T`` (``running_from`` < T < ``running_until``).

    ``jobs``: :func:`iosight.bursts.load_jobs`' frame (or :func:`scheduler_jobs`');
    ``bin_start``: the bins' starts; ``width``: their width (s); ``direction``: read or
    write.
    """
    start = jobs["start_time"].to_numpy(np.float64)
    ends = np.asarray(bin_start, np.float64) + width
    n = len(ends)
    if "running_from" in jobs:
        first = np.searchsorted(ends, jobs["running_from"].to_numpy(np.float64), side="right")
        stop = np.searchsorted(ends, jobs["running_until"].to_numpy(np.float64), side="left")
    else:
        first = np.searchsorted(ends, start, side="right")  # bin holding the start
        stop = np.searchsorted(ends, known_at(jobs), side="right")  # bin the log landed in
    count = np.maximum(stop - first, 0)
    job = np.repeat(np.arange(len(start)), count)
    bins = np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())
    inside = np.minimum(ends[bins] - start[job], width)
    rate = analog_rates(jobs, direction)
    return np.bincount(bins, weights=rate[job] * inside, minlength=n)[:n]


def _kind_codes(jobs: pd.DataFrame, kind: tuple[str, ...]) -> np.ndarray:
    """One integer per distinct combination of the ``kind`` columns (missing: '')."""
    import pandas as pd

    cols = [jobs[c].astype(str) if c in jobs else pd.Series("", index=jobs.index) for c in kind]
    key = cols[0].str.cat(cols[1:], sep="\x1f") if len(cols) > 1 else cols[0]
    return pd.factorize(key)[0]


def _last_landed(code: np.ndarray, landed: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per job, the index of the run of the same ``code`` whose log landed last before the
    job started (-1: none). One search on (code, time) pairs, times as their ranks among
    all landing and start times so the pair is one exact integer."""
    n = len(code)
    times = np.unique(np.concatenate([landed, start]))
    span = times.size + 1
    runs = code * span + np.searchsorted(times, landed)
    order = np.argsort(runs, kind="stable")
    pos = np.searchsorted(runs[order], code * span + np.searchsorted(times, start)) - 1
    ok = pos >= 0
    ok[ok] = code[order[pos[ok]]] == code[ok]
    return np.where(ok, order[np.maximum(pos, 0)], -1) if n else np.zeros(0, np.int64)


def nowcast_accuracy(estimate: np.ndarray, truth: np.ndarray, threshold: float) -> dict:
    """How good a nowcast is against the complete timeline's bins: Pearson correlation,
    the relative error of the summed bytes (``sum |est - true| / sum true``), and the
    burst-class F1 of ``estimate > threshold`` against ``truth > threshold``.

    ``estimate``: the nowcast per bin; ``truth``: the complete bins; ``threshold``: the
    burst threshold (bytes per bin).
    """
    est, tru = np.asarray(estimate, np.float64), np.asarray(truth, np.float64)
    corr = float(np.corrcoef(est, tru)[0, 1]) if est.size > 1 and est.std() and tru.std() else 0.0
    total = float(tru.sum())
    yb, pb = tru > threshold, est > threshold
    tp = float(np.sum(yb & pb))
    return {
        "nowcast_corr": corr,
        "nowcast_error": float(np.abs(est - tru).sum() / total) if total > 0 else float("nan"),
        "nowcast_f1": 2 * tp / (yb.sum() + pb.sum()) if tp else 0.0,
    }
