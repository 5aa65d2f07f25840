"""Regime ``logs``: features from what the logs held at each time, on SYNTHETIC jobs
(each job's bytes spread over its run, known when its log lands at its end)."""

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import evaluate_forecasts
from iosight.bursts._features import make_features
from iosight.bursts._known import known_ema, known_rows
from iosight.timeline import VALUE_COLUMNS
from tests_support import known_frame

W = 300.0
T0 = 1.6e9


def _jobs(seed: int = 0, days: int = 4) -> pd.DataFrame:
    """SYNTHETIC jobs: ``ckpt`` runs 1-6 h and writes 0.5-2 TB, ``small`` jobs little; a
    log lands up to 20 minutes after its job ends (``known_at``)."""
    rng = np.random.default_rng(seed)
    n = 30 * days
    exe = rng.choice(["ckpt", "small"], n, p=[0.3, 0.7])
    start = np.sort(rng.uniform(T0, T0 + days * 86400.0, n))
    run = np.where(exe == "ckpt", rng.uniform(3600, 6 * 3600, n), rng.uniform(600, 7200, n))
    big = exe == "ckpt"
    return pd.DataFrame({
        "start_time": start, "end_time": start + run, "exe": exe, "source": "synthetic",
        "nprocs": rng.integers(1, 64, n), "read_bytes": rng.uniform(1e9, 1e11, n),
        "write_bytes": np.where(big, rng.uniform(5e11, 2e12, n), rng.uniform(1e9, 5e9, n)),
        "known_at": start + run + rng.uniform(0, 1200, n),
    })  # fmt: skip


def timeline_of(known: pd.DataFrame, n: int) -> pd.DataFrame:
    """The complete timeline: the known rows summed over their known-at bins."""
    tl = known.groupby("bin_start")[[*VALUE_COLUMNS, "active_jobs"]].sum()
    tl = tl.reindex(T0 + W * np.arange(n), fill_value=0).rename_axis("bin_start")
    return tl.reset_index().assign(bin_width=W)


def test_known_ema_equals_the_ema_of_the_series_known_at_each_time():
    jobs = _jobs(days=1)
    n = 288
    known = known_frame(jobs, T0 + W * np.arange(n))
    rows = known_rows(known, T0 + W * np.arange(n), W)
    got = known_ema(rows, "write_bytes", 12)
    a, v = 2 / 13, known["write_bytes"].to_numpy()
    b, k = rows.bin, rows.known
    for t in (0, 5, 50, 143, 287):
        x = np.bincount(b[k <= t], weights=v[k <= t], minlength=n)[: t + 1]  # known at t
        want = sum(a * (1 - a) ** (t - i) * x[i] for i in range(t + 1))  # E_{-1} = 0
        assert got[t] == pytest.approx(want, rel=1e-9, abs=1e-6)
    assert (k > b).any() and got[143] > 0


def _perturbed_after(jobs, known, df, t):
    """Everything known after the end of bin t changed: rows known in a later bin, the
    complete timeline, the end and totals of the jobs running at t, the totals of the
    jobs ended by t whose log lands later, the jobs started after t."""
    T = T0 + (t + 1) * W
    late = known.copy()
    future = late["known_start"] > T - W
    late.loc[future, ["write_bytes", "write_ops", "write_time"]] *= 50
    fut = df.copy()
    fut.loc[:, ["write_bytes", "write_ops", "write_time"]] *= 3  # never a logs feature
    changed = jobs.copy()
    running = (changed["start_time"] < T) & (changed["end_time"] > T)
    assert running.any()
    changed.loc[running, "end_time"] += 5 * 3600.0
    changed.loc[running, "write_bytes"] *= 7
    landing = (changed["end_time"] <= T) & (changed["known_at"] >= T)
    assert landing.any()
    changed.loc[landing, "write_bytes"] *= 9
    after_t = changed["start_time"] >= T
    changed.loc[after_t, "exe"] = "other"
    changed.loc[after_t, "write_bytes"] *= 100
    return changed, late, fut


def test_no_logs_feature_looks_ahead():
    jobs = _jobs(days=4)
    n = 4 * 288
    known = known_frame(jobs, T0 + W * np.arange(n))
    df = timeline_of(known, n)
    before = make_features(df, "write", 4, jobs=jobs, threshold=5e10, known=known)
    # bins whose bytes are partly known only at the next bin's end, past the first days
    b, k = ((known[c] - T0) // W for c in ("bin_start", "known_start"))
    straddle = np.unique(b[(k == b + 1) & (b > 2 * 288)])
    assert straddle.size >= 3
    for t in straddle[:3].astype(int):
        changed, late, fut = _perturbed_after(jobs, known, df, t)
        after = make_features(fut, "write", 4, jobs=changed, threshold=5e10, known=late)
        pd.testing.assert_frame_equal(before.iloc[: t + 1], after.iloc[: t + 1])
        assert not np.allclose(before.iloc[t + 1 :], after.iloc[t + 1 :])
    # the live features of a bin see its complete bytes: the regimes differ
    live = make_features(df, "write", 4, jobs=jobs, threshold=5e10)
    assert not np.allclose(live["write_bytes"], before["write_bytes"])


def test_logs_regime_scores_beside_live_against_the_same_labels():
    jobs = _jobs(seed=1, days=10)
    n = 10 * 288
    known = known_frame(jobs, T0 + W * np.arange(n))
    df = timeline_of(known, n)
    ev = evaluate_forecasts(df, directions="write", models="tree", feature_sets=4,
                            modes="lead", horizons=[5, 30], jobs=jobs,
                            information=["live", "logs"], known=known, workers=1)  # fmt: skip
    assert set(ev["information"]) == {"live", "logs"}
    per = ev.set_index(["information", "horizon_min", "model"])
    for h in (5, 30):  # same labels: same test bursts
        bursts = [per.loc[(i, h, "tree"), "test_bursts"] for i in ("live", "logs")]
        assert bursts[0] == bursts[1] > 0
    models = ev.groupby("information")["model"].agg(set)
    assert models["logs"] == models["live"] | {"nowcast"}
    logs = ev[ev["information"] == "logs"]
    assert logs["known_share"].between(0, 1).all()
    assert (ev.loc[ev["information"] == "live", "known_share"] == 1).all()
    # a log lands up to 20 min after its job's end: more of a bin is known 30 min later
    share = logs.groupby("horizon_min")["known_share"].first()
    assert share[5] < share[30]
    assert logs["nowcast_corr"].notna().all() and logs["nowcast_error"].notna().all()
    with pytest.raises(IosightError, match="lead mode only"):
        evaluate_forecasts(df, directions="write", models="tree", feature_sets=4,
                           modes="interval", horizons=15, jobs=jobs, information="logs",
                           known=known, workers=1)  # fmt: skip
    with pytest.raises(IosightError, match="known-at sums"):
        evaluate_forecasts(df, directions="write", models="tree", information="logs")
