"""Job-state features (set 4): causality and value on a SYNTHETIC series whose future is a
known function of the running jobs."""

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import evaluate_forecasts, feature_names, job_state, run_length
from iosight.bursts._features import make_features
from iosight.bursts._jobstate import N_AHEAD, bytes_by_start, started_by
from iosight.timeline import bin_intervals

W = 300.0
T0 = 1.6e9


def _timeline(jobs: pd.DataFrame, n: int, io_at_end: float | None = None) -> pd.DataFrame:
    """Bins of the jobs' writes: spread over the run, or (``io_at_end``) all in its last
    ``io_at_end`` seconds (a job that writes its results when it finishes)."""
    s, e = jobs["start_time"].to_numpy() - T0, jobs["end_time"].to_numpy() - T0
    if io_at_end is not None:
        s = np.maximum(s, e - io_at_end)
    keep = s < n * W  # the part inside the timeline
    s, e = s[keep], np.minimum(e[keep], n * W)
    b = jobs["write_bytes"].to_numpy()[keep]
    vals = np.column_stack([b, b / 1e6, np.ones(b.size)])
    sums = bin_intervals(s, e, vals, width=W, n_bins=n, spread="overlap")
    return pd.DataFrame({"bin_start": T0 + W * np.arange(n), "bin_width": W,
                         "read_bytes": 0.0, "write_bytes": sums[:, 0], "read_ops": 0.0,
                         "write_ops": sums[:, 1], "read_time": 0.0, "write_time": sums[:, 2],
                         "active_jobs": 0})  # fmt: skip


def _jobs(seed: int = 0, days: int = 6) -> pd.DataFrame:
    """Two applications (SYNTHETIC): ``big`` runs exactly 4 h and writes 1 TB, one at a time
    after a random pause; ``small`` jobs of random length write little."""
    rng = np.random.default_rng(seed)
    rows, t = [], T0 + 600.0
    while t < T0 + days * 86400:
        rows.append((t, t + 4 * 3600.0, "big", 1e12))
        t += 4 * 3600.0 + rng.uniform(0, 4 * 3600.0)
    for s in rng.uniform(T0, T0 + days * 86400, 40 * days):
        rows.append((s, s + rng.uniform(600, 7200), "small", rng.uniform(1e9, 5e9)))
    df = pd.DataFrame(rows, columns=["start_time", "end_time", "exe", "write_bytes"])
    df["source"], df["nprocs"], df["read_bytes"] = "synthetic", 1, 0.0
    return df.sort_values("start_time", ignore_index=True)


def test_run_length_signed():
    assert run_length(np.array([0, 0, 1, 1, 1, 0])).tolist() == [-1, -2, 1, 2, 3, -1]


def test_expected_io_of_a_known_job():
    # history: three ended 1-hour runs of "a" at 1 MB/s; then one starts at day 2 + 30 min
    jobs = pd.DataFrame({
        "start_time": T0 + np.array([0, 4000, 8000, 86400 * 2 + 1800.0]),
        "end_time": T0 + np.array([3600, 7600, 11600, 86400 * 2 + 5400.0]),
        "exe": "a", "source": "s", "nprocs": 1, "read_bytes": 0.0, "write_bytes": 3.6e9,
    })  # fmt: skip
    starts = T0 + 86400 * 2 + W * np.arange(24)
    st = job_state(jobs, starts, W, "write")
    # at the end of bin 5 (t = 30 min) the job has run 1 bin (it started at minute 30)
    i = 6
    assert st.running[i] == 1 and st.running[5] == 0
    assert st.expected[i, 0] == pytest.approx(1e6 * W)
    # all earlier runs lasted 3600 s: alive at elapsed 300 s + (L - 0.5) * 300 s while < 3600
    alive = 300 + (np.arange(1, N_AHEAD + 1) - 0.5) * W < 3600
    assert np.allclose(st.expected[i, 1:], 1e6 * W * alive)
    assert st.elapsed_ratio[i] == pytest.approx(300 / 3600)


def test_runs_whose_logs_landed_late_are_not_history_yet():
    """A run ended before the day but whose log landed after it is not known then: the
    same jobs as above, the history's logs landing a day late, give no estimate."""
    jobs = pd.DataFrame({
        "start_time": T0 + np.array([0, 4000, 8000, 86400 * 2 + 1800.0]),
        "end_time": T0 + np.array([3600, 7600, 11600, 86400 * 2 + 5400.0]),
        "exe": "a", "source": "s", "nprocs": 1, "read_bytes": 0.0, "write_bytes": 3.6e9,
    })  # fmt: skip
    starts = T0 + 86400 * 2 + W * np.arange(24)
    on_time = job_state(jobs.assign(known_at=jobs["end_time"]), starts, W, "write")
    late = job_state(jobs.assign(known_at=T0 + 86400 * 3.0), starts, W, "write")
    assert on_time.expected[6, 0] == pytest.approx(1e6 * W)
    assert late.running[6] == 1 and late.expected[6].max() == 0


def test_job_state_features_never_look_ahead():
    jobs = _jobs(days=4)
    n = 4 * 288
    df = _timeline(jobs, n)
    t = 2 * 288 + 17  # features at bins <= t
    T = T0 + (t + 1) * W
    before = make_features(df, "write", 4, jobs=jobs, threshold=5e10)
    rng = np.random.default_rng(3)
    fut = df.copy()
    fut.loc[t + 1 :, "write_bytes"] = rng.lognormal(25, 2, n - t - 1)
    changed = jobs.copy()
    running = (changed["start_time"] < T) & (changed["end_time"] > T)
    assert running.any()
    # running at t: later end and other totals (known only when they end)
    changed.loc[running, "end_time"] += 5 * 3600.0
    changed.loc[running, "write_bytes"] *= 7
    later = changed["start_time"] >= T  # jobs started after t: anything may change
    changed.loc[later, "exe"] = "other"
    changed.loc[later, "write_bytes"] *= 100
    new = {"start_time": T + 1, "end_time": T + 9e3, "exe": "big", "source": "synthetic",
           "nprocs": 1, "read_bytes": 0.0, "write_bytes": 1e15}  # fmt: skip
    changed = pd.concat([changed, pd.DataFrame([new])], ignore_index=True)
    after = make_features(fut, "write", 4, jobs=changed, threshold=5e10)
    pd.testing.assert_frame_equal(before.iloc[: t + 1], after.iloc[: t + 1])
    assert not np.allclose(before.iloc[t + 1 :], after.iloc[t + 1 :])


def test_feature_set_4_needs_jobs():
    jobs = _jobs(days=1)
    df = _timeline(jobs, 288)
    assert len(feature_names("write", 4)) == 9 + 5 + (N_AHEAD + 1) + N_AHEAD
    with pytest.raises(IosightError, match="jobs"):
        make_features(df, "write", 4)


def test_jobs_state_forecasts_what_bytes_cannot():
    """SYNTHETIC: ``big`` jobs write only in their last 20 minutes, so a burst 20 minutes
    ahead is a known function of the running jobs (a big job 3 h 20 min in), while the
    bytes show nothing until it starts."""
    jobs = _jobs(seed=1, days=24)
    df = _timeline(jobs, 24 * 288, io_at_end=1200.0)
    ev = evaluate_forecasts(df, directions="write", models="tree", feature_sets=[3, 4],
                            modes="lead", horizons=20, k={"write": 1.0}, jobs=jobs,
                            workers=1)  # fmt: skip
    f1 = ev.set_index(["feature_set", "model"])["f1"]
    assert ev["test_bursts"].iloc[0] >= 20
    assert f1[(4, "tree")] > 0.9
    assert f1[(3, "tree")] < 0.5 and f1[(3, "persistence")] < 0.5
    chosen = ev[ev["model"] == "chosen"].set_index("feature_set")["chosen"]
    assert chosen[4] == "tree"
    # the timeline is not the jobs' bytes spread over their runs: no running-jobs share
    assert ev["running_jobs_share"].isna().all()


def _one_job_each(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["start_time", "end_time", "write_bytes"])
    df["start_time"] += T0
    df["end_time"] += T0
    df["exe"], df["source"], df["nprocs"], df["read_bytes"] = "a", "s", 1, 0.0
    return df


def test_bytes_of_a_bin_from_the_jobs_started_by_an_earlier_bin():
    # A: 0-600 s, 600 bytes (300 per bin); B: 700-1000 s, 300 bytes (200 in bin 2, 100 in 3)
    jobs = _one_job_each([(0, 600, 600.0), (700, 1000, 300.0)])
    starts = T0 + W * np.arange(4)
    triples = bytes_by_start(jobs, starts, W, "write")
    assert np.allclose(np.bincount(triples[0], weights=triples[2], minlength=4),
                       [300, 300, 200, 100])  # fmt: skip
    one = started_by(triples, starts, W, 1)
    # bin 1: A (started by the end of bin 0); bin 2: B starts after bin 1 ends (600 s);
    # bin 3: B started by the end of bin 2 (900 s)
    assert np.isnan(one[0]) and one[1:].tolist() == [300, 0, 100]
    two = started_by(triples, starts, W, 2)
    assert np.isnan(two[:2]).all() and two[2:].tolist() == [0, 0]
    assert started_by(triples, starts, W, 0).tolist() == [300, 300, 200, 100]
    # a job outside the timeline adds nothing; a job that began before it adds its share
    early = _one_job_each([(-600, 300, 900.0)])
    b, s, v = bytes_by_start(early, starts, W, "write")
    assert b.tolist() == [0] and v.tolist() == [300.0] and s.tolist() == [T0 - 600]
    assert bytes_by_start(_one_job_each([(5000, 6000, 1.0)]), starts, W, "write")[0].size == 0


def test_running_jobs_share_of_long_and_short_bursty_jobs():
    """SYNTHETIC, bytes spread over each run. Jobs of 4 hours make most bursts 20 minutes
    ahead on their own; with jobs of 10 minutes every burst 30 minutes ahead comes from a
    job not yet started. The timeline runs a day past
    the last start, so no job is cut at its end."""
    long = _jobs(seed=2, days=12)
    ev = evaluate_forecasts(_timeline(long, 13 * 288), directions="write", models="naive_bayes",
                            feature_sets=1, modes="lead", horizons=[20], k={"write": 0.5},
                            jobs=long, workers=1).set_index("model")  # fmt: skip
    assert ev["running_jobs_share"].iloc[0] > 0.9 and ev["test_bursts"].iloc[0] > 100
    short = long.copy()
    big = short["exe"] == "big"
    short.loc[big, "end_time"] = short.loc[big, "start_time"] + 600.0
    ev = evaluate_forecasts(_timeline(short, 13 * 288), directions="write",
                            models="naive_bayes", feature_sets=1, modes="lead",
                            horizons=[30], k={"write": 0.5}, jobs=short,
                            workers=1).set_index("model")  # fmt: skip
    assert ev["test_bursts"].iloc[0] > 0
    assert (ev["running_jobs_share"] == 0).all()
    # without the jobs there is no ceiling to report
    bare = evaluate_forecasts(_timeline(short, 13 * 288), directions="write",
                              models="naive_bayes", feature_sets=1, modes="lead",
                              horizons=[30], k={"write": 0.5}, workers=1)  # fmt: skip
    assert bare["running_jobs_share"].isna().all()
