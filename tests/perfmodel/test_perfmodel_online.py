"""The deployable predictor: the online median, the shift, and the no-leak rule on real
TOKIO-ABC data (Mira)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iosight.perfmodel import (
    OnlineSettings,
    causal_features,
    session_estimate,
    session_weight,
    tokio_samples,
    tokio_split,
    walk_forward,
)
from iosight.perfmodel._online import best_shift

MIRA = ("datasets", "tokio_abc_year_in_life", "mira-summaries_2017-02-14_2018-02-15.csv.gz")
OUTCOME = ("darshan_agg_perf_by_slowest_posix",)


def test_best_shift_maximises_the_share_within_30_percent():
    # 8 runs at the prediction, 4 runs 50% slower: the smallest shift that catches all
    # puts the slow runs at the edge: predicted x 1.05 = 0.7 x measured
    e = np.log([1.0] * 8 + [1.5] * 4)
    c = best_shift(e)
    inside = np.abs(np.exp(c - e) - 1) <= 0.3 + 1e-12
    assert inside.all() and c == pytest.approx(np.log(1.05))
    assert best_shift(np.zeros(5)) == 0.0  # ties go to no shift


def test_online_median_uses_only_runs_ended_before(tmp_path):
    s = pd.DataFrame(
        {
            "system": "x/fs",
            "app": "ior",
            "nprocs": 4,
            "start_time": [0.0, 100.0, 200.0, 250.0],
            "end_time": [50.0, 150.0, 300.0, 400.0],
            "write_time": [10.0, 20.0, 30.0, 1000.0],
        }
    )
    f = causal_features(s, settings=OnlineSettings(n_prev=2, offset_runs=3))
    # run 2 sees runs 0-1 (median 14.14 = exp(mean log)); run 3 starts before run 2 ends
    assert np.isnan(f["online median"].iloc[0])
    assert f["online median"].iloc[1] == pytest.approx(10.0)
    assert f["online median"].iloc[2] == pytest.approx(np.sqrt(200.0))
    assert f["online median"].iloc[3] == pytest.approx(np.sqrt(200.0))
    assert f["days since last run"].iloc[3] == pytest.approx(100 / 86400)


def _perturb_from(raw: pd.DataFrame, t0: float, rng) -> pd.DataFrame:
    """Change everything measured at or after ``t0``: whole rows of jobs starting later,
    and the outcome and server-side load of jobs running at ``t0``."""
    d = raw.copy()
    later = d["_datetime_start"] > t0
    running = (d["_datetime_end"] >= t0) & ~later
    measured = [c for c in d.columns if c.startswith(("fs_", "jobsdb_")) or c in OUTCOME]
    num = [c for c in d.columns if d[c].dtype.kind == "f" and not c.startswith("_datetime")]
    for c in num:
        d.loc[later, c] = d.loc[later, c] * rng.uniform(0.5, 2.0, later.sum())
    for c in measured:
        if d[c].dtype.kind in "fi":
            d[c] = d[c].astype(float)
            d.loc[running, c] = d.loc[running, c] * rng.uniform(0.5, 2.0, running.sum())
    d["_datetime_end"] = d["_datetime_end"].astype(float)
    d.loc[running | later, "_datetime_end"] += rng.uniform(1, 1e4, (running | later).sum())
    return d


@pytest.mark.slow
def test_no_leak_changing_the_future_changes_no_feature_and_no_prediction(shared, tmp_path):
    raw = pd.read_csv(shared(*MIRA), low_memory=False)
    path = tmp_path / "mira-summaries.csv"
    raw.to_csv(path, index=False)
    s = tokio_samples(path)
    _, test = tokio_split(s, "mira/mira-fs1")
    t0 = float(test["start_time"].iloc[len(test) // 2])
    settings = OnlineSettings(trees=30)
    f = causal_features(s)
    p = walk_forward(s, float(test["start_time"].min()), settings=settings)

    raw2 = _perturb_from(raw, t0, np.random.default_rng(0))
    raw2.to_csv(path, index=False)
    s2 = tokio_samples(path)
    f2 = causal_features(s2)
    p2 = walk_forward(s2, float(test["start_time"].min()), settings=settings)
    past = s.index[s["start_time"] <= t0]
    assert (s2.loc[past, "start_time"] == s.loc[past, "start_time"]).all()
    # the job starting at t0 itself: its own write time changed, its features did not
    job = s.index[s["start_time"] == t0]
    assert (s2.loc[job, "write_time"] != s.loc[job, "write_time"]).all()
    pd.testing.assert_frame_equal(f2.loc[past], f.loc[past])
    done = p.index[p.index.isin(past)]
    assert len(done) > 50
    pd.testing.assert_frame_equal(p2.loc[done], p.loc[done])

    # control: changing a run that ended before t0 does change the features at t0
    before = raw["_datetime_end"] < t0
    last = raw.index[before & (raw["darshan_app"] == raw.loc[before, "darshan_app"].iloc[-1])]
    raw3 = raw.copy()
    raw3.loc[last[-5:], "darshan_agg_perf_by_slowest_posix"] /= 3
    raw3.to_csv(path, index=False)
    f3 = causal_features(tokio_samples(path))
    assert not f3.loc[past].equals(f.loc[past])


def test_system_last_deviation_reads_the_last_run_of_any_configuration():
    # IOR runs, then HACC starts 10 min after an IOR run that was 3x slower than usual
    s = pd.DataFrame(
        {
            "system": "x/fs",
            "app": ["ior"] * 4 + ["hacc"],
            "nprocs": 4,
            "start_time": [0.0, 100.0, 200.0, 300.0, 1000.0],
            "end_time": [10.0, 110.0, 210.0, 400.0, 1100.0],
            "write_time": [10.0, 10.0, 10.0, 30.0, 20.0],
        }
    )
    f = causal_features(s, settings=OnlineSettings(n_prev=3, offset_runs=3))
    # run 3's deviation from its offset median (10 s) is log 3, known when HACC starts
    assert f["system last deviation"].iloc[4] == pytest.approx(np.log(3.0))
    assert f["hours since system last run"].iloc[4] == pytest.approx(600 / 3600)
    assert f["same-session deviation"].iloc[4] == pytest.approx(np.log(3.0))
    assert np.isnan(f["system last deviation"].iloc[0])
    # two hours later it is another session: the deviation stays, the session one is 0
    s.loc[4, ["start_time", "end_time"]] = [400.0 + 7200, 500.0 + 7200]
    later = causal_features(s, settings=OnlineSettings(n_prev=3, offset_runs=3)).iloc[4]
    assert later["system last deviation"] == pytest.approx(np.log(3.0))
    assert later["same-session deviation"] == 0.0


def _sessions(days: int, ratio: float = 2.0, gap_s: float = 600.0) -> pd.DataFrame:
    """Daily sessions: IOR, then HACC-IO ``gap_s`` after IOR ended, ``ratio`` times slower."""
    rows = []
    for d in range(days):
        t0, ior = d * 86400.0, 10.0 + d
        rows.append(("ior", 4, t0, t0 + ior, ior))
        h0 = t0 + ior + gap_s
        rows.append(("hacc", 4, h0, h0 + ratio * ior, ratio * ior))
    cols = ["app", "nprocs", "start_time", "end_time", "write_time"]
    return pd.DataFrame(rows, columns=cols).assign(system="x/fs")


def test_session_estimate_is_the_sibling_times_the_earlier_ratio():
    s = _sessions(5)
    est = session_estimate(s, settings=OnlineSettings(min_session_pairs=3))
    hacc = s.index[s["app"] == "hacc"]
    # the first three HACC runs have fewer than 3 earlier shared sessions; then
    # today's IOR time x the median ratio 2
    assert np.isnan(est[hacc[:3]]).all()
    assert np.exp(est[hacc[3:]]) == pytest.approx(2 * s.loc[hacc[3:] - 1, "write_time"])
    # IOR runs first in its session: no sibling, no estimate
    assert np.isnan(est[s.index[s["app"] == "ior"]]).all()


def test_no_samples_give_no_estimates_and_no_features():
    empty = _sessions(1).iloc[:0]
    assert session_estimate(empty).shape == (0,)
    assert len(causal_features(empty)) == 0


def test_session_estimate_needs_a_recent_finished_sibling_of_the_same_scale():
    st = OnlineSettings(min_session_pairs=3)
    late = _sessions(5, gap_s=2 * 3600)  # HACC two hours after IOR: another session
    assert np.isnan(session_estimate(late, settings=st)).all()
    other = _sessions(5)
    other.loc[other["app"] == "hacc", "nprocs"] = 8  # HACC at another scale
    assert np.isnan(session_estimate(other, settings=st)).all()
    anyscale = session_estimate(
        other, settings=OnlineSettings(min_session_pairs=3, session="any scale")
    )
    assert np.isfinite(anyscale).sum() == 2
    running = _sessions(5, gap_s=-5.0)  # HACC starts before IOR ended: IOR not known yet
    assert np.isnan(session_estimate(running, settings=st)).all()
    assert np.isnan(session_estimate(_sessions(5), settings=OnlineSettings(session="none"))).all()


def test_session_weight_follows_the_estimate_only_where_it_is_better():
    rng = np.random.default_rng(0)
    logt = rng.normal(4.0, 0.5, 200)
    offset = np.full(200, 4.0)  # the median: often off by more than 30%
    exact = logt - offset  # moving by this reaches every run
    assert session_weight(offset, exact, logt) == 1.0
    assert session_weight(offset, np.zeros(200), logt) == 0.0  # no gain: the smaller weight
    assert session_weight(offset, -exact, logt) == 0.0  # pointing the wrong way


def test_settings_refuse_an_unknown_session_sibling_or_pair_count():
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match="session"):
        OnlineSettings(session="same app")
    with pytest.raises(IosightError, match="min_session_pairs"):
        OnlineSettings(session_pairs=3, min_session_pairs=5)
