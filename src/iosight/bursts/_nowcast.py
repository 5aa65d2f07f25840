"""Nowcast of the current bin from the logs and the scheduler (regime ``logs``).

At the end of bin t the logs hold only the jobs that have ended; the jobs still running
wrote the rest of the bin, unseen. The nowcast adds to the known part what the running
jobs are expected to have written: each running job at its application's past rate from
the ended runs (:func:`iosight.bursts.job_state`, ``expected[:, 0]``), the scheduler's
view only (start, size, executable), never the job's own bytes.
"""

from __future__ import annotations

import numpy as np


def nowcast(known_now: np.ndarray, running_expected: np.ndarray) -> np.ndarray:
    """The current bin's bytes: the part the logs hold plus the running jobs' estimate."""
    return np.asarray(known_now, np.float64) + np.asarray(running_expected, np.float64)


def nowcast_accuracy(estimate: np.ndarray, truth: np.ndarray, threshold: float) -> dict:
    """How good a nowcast is against the complete timeline's bins: Pearson correlation,
    the relative error of the summed bytes (``sum |est - true| / sum true``), and the
    burst-class F1 of ``estimate > threshold`` against ``truth > threshold``."""
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
