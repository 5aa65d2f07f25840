"""Simulation of Algorithm 1 over every burst window (§V-B, Fig. 10-11)."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.schedule import (
    PAPER_APPS,
    POLICIES,
    App,
    burst_windows,
    choose_start,
    simulate_series,
    simulate_windows,
)


def _bursty_series(n_bins: int = 3000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    flags = np.zeros(n_bins, dtype=bool)
    for s, length in zip(rng.integers(0, n_bins, 40), rng.integers(1, 9, 40), strict=True):
        flags[s : s + length] = True
    return flags


def test_windows_are_counted_as_the_paper_does():
    flags = np.zeros(30, dtype=bool)
    flags[[5, 6, 28]] = True
    # 7 windows of 4 bins (starts 0..26); with a burst: starts 2..6 and 25..26
    win = burst_windows(flags, width=4)
    assert win.starts.tolist() == [2, 3, 4, 5, 6, 25, 26]
    assert win.patterns[0].tolist() == [False, False, False, True]
    # distinct patterns: 0001, 0011, 0110, 1100, 1000, 0001 (again), 0010 -> 6
    assert win.n_patterns == 6
    ext = burst_windows(flags, width=4, extra=3)
    assert ext.patterns.shape == (7, 7)
    assert ext.patterns[-1].tolist() == [False, False, True, False, True, True, True]
    with pytest.raises(IosightError):
        burst_windows(flags[:3], width=4)


def test_mrt_never_runs_longer_than_mdt_and_mdt_never_waits():
    sim = simulate_series(_bursty_series())
    w = sim.windows
    assert sim.n_windows > 100 and 1 < sim.n_patterns <= sim.n_windows
    for app in PAPER_APPS:
        mdt = w[(w.app == app.name) & (w.policy == "MDT")].sort_values("window")
        mrt = w[(w.app == app.name) & (w.policy == "MRT")].sort_values("window")
        assert (mdt["delay"] == 0).all()
        assert (mrt["run_time"].to_numpy() <= mdt["run_time"].to_numpy()).all()
        assert (mrt["run_time"].to_numpy() < mdt["run_time"].to_numpy()).any()
    summary = sim.summary()
    assert len(summary) == len(PAPER_APPS) * len(POLICIES)
    assert (summary["windows"] == sim.n_windows).all()


def test_each_window_matches_choose_start():
    flags = _bursty_series(800, seed=3)
    win = burst_windows(flags)
    sim = simulate_series(flags, apps=[App("b", 1260, 3780)], policies=["W4", "0.25"])
    rng = np.random.default_rng(1)
    for k in rng.choice(len(win), 25, replace=False):
        for policy, kw in (("W4", {"policy": "W4"}), ("a=0.25", {"alpha": 0.25})):
            c = choose_start(win.patterns[k].astype(int), 1260, 3780, **kw)
            row = sim.windows[(sim.windows.window == k) & (sim.windows.policy == policy)]
            assert row["delay"].item() == c.delay
            assert row["run_time"].item() == c.run_time
            assert row["start_bin"].item() == win.starts[k]


def test_actual_pattern_is_charged():
    predicted = np.zeros((3, 24), dtype=bool)
    actual = predicted.copy()
    actual[1, :3] = True  # a burst the forecast missed
    predicted[2, :3] = True  # a false alarm: MRT waits for nothing
    sim = simulate_windows(predicted, [App("dlio", 850, 4250)], ["MDT", "MRT"], actual=actual)
    w = sim.windows.set_index(["policy", "window"])
    assert w.loc[("MDT", 0), "run_time"] == 900.0
    assert w.loc[("MDT", 1), "est_run_time"] == 900.0
    assert w.loc[("MDT", 1), "run_time"] == 1800.0
    assert w.loc[("MRT", 2), "delay"] == 900.0 and w.loc[("MRT", 2), "run_time"] == 900.0
    same = simulate_windows(predicted, actual=predicted)
    plain = simulate_windows(predicted)
    assert np.array_equal(same.windows["run_time"], plain.windows["run_time"])
    assert np.array_equal(same.windows["run_time"], same.windows["est_run_time"])
    assert "mean_est_run_time" in same.summary()
    with pytest.raises(IosightError):
        simulate_windows(predicted, actual=actual[:2])


def test_cdf_is_monotone_and_ends_at_one():
    sim = simulate_series(_bursty_series(), apps=PAPER_APPS[:1])
    cdf = sim.cdf("total_time")
    for _, g in cdf.groupby(["app", "policy"], observed=True):
        assert np.all(np.diff(g["value"]) > 0) and np.all(np.diff(g["fraction"]) > 0)
        assert g["fraction"].iloc[-1] == pytest.approx(1.0)
    with pytest.raises(IosightError):
        sim.cdf("speed")


def test_app_parse():
    assert App.parse("dlio:850:4250") == App("dlio", 850.0, 4250.0)
    for bad in ("dlio", "dlio:x:1", "a:1:2:3", ":1:2"):
        with pytest.raises(IosightError):
            App.parse(bad)
    with pytest.raises(IosightError):
        simulate_series(np.zeros(30, dtype=bool))


def test_policies_by_name_or_alpha():
    sim = simulate_windows(np.ones((2, 24), dtype=bool), policies=["mrt", 0.5, "0.3"])
    assert list(sim.windows["policy"].cat.categories) == ["MRT", "a=0.5", "a=0.3"]
    for bad in (["FAST"], [1.5], []):
        with pytest.raises(IosightError):
            simulate_windows(np.ones((2, 24), dtype=bool), policies=bad)
