"""Algorithm 1 (§V-B) on hand-worked patterns, and against an exact transcription."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.schedule import POLICIES, choose_start, parse_pattern, policy_alpha

CLEAR = "0" * 24
BURSTS = "1" * 24
AT_START = "111" + "0" * 21
AT_END = "0" * 20 + "1111"

# DLIO of Fig. 10(a): 850 s alone, 4250 s in bursts -> 3 clean bins or 15 burst bins (L=300).
# In work units a clean bin is worth 15, a burst bin 3, the job needs 45.


def _listing(pattern: str, min_time, max_time, alpha, bin_s=300, n=24):
    """Algorithm 1 line by line, in exact rational arithmetic (the test oracle)."""
    progress_nb = Fraction(min_time) / math.ceil(Fraction(min_time, bin_s))
    progress_b = Fraction(min_time) / math.ceil(Fraction(max_time, bin_s))
    best_score, start, runs = math.inf, None, []
    for i in range(n):
        remaining, j = Fraction(min_time), i
        while remaining > 0:
            burst = pattern[j] == "1" if j < len(pattern) else True
            remaining -= progress_b if burst else progress_nb
            j += 1
        delay, run_time = i * bin_s, (j - i) * bin_s
        score = Fraction(alpha).limit_denominator(1000) * delay + (
            1 - Fraction(alpha).limit_denominator(1000)
        ) * (run_time)
        runs.append(run_time)
        if score < best_score:
            best_score, start = score, delay
    return start, runs


def test_all_clear_starts_now_for_every_policy():
    for policy in POLICIES:
        c = choose_start(CLEAR, 850, 4250, policy=policy)
        assert (c.index, c.delay, c.run_time) == (0, 0.0, 900.0)
    opts = choose_start(CLEAR, 850, 4250, alpha=0.5).option_run_time
    assert (opts[:22] == 900).all()
    # start 22: two clean bins (30 units) then bursts 3 units each -> 5 more bins
    assert opts[22] == 7 * 300
    # start 23: one clean bin (15) then 10 burst bins (30)
    assert opts[23] == 11 * 300


def test_all_bursts_runs_max_bins_and_ties_keep_first():
    for policy in POLICIES:
        c = choose_start(BURSTS, 850, 4250, policy=policy)
        assert (c.delay, c.run_time) == (0.0, 15 * 300.0)
    assert (choose_start(BURSTS, 850, 4250, policy="MRT").option_run_time == 4500).all()


def test_bursts_at_start_mrt_waits_mdt_does_not():
    mdt = choose_start(AT_START, 850, 4250, policy="MDT")
    # 3 burst bins (9 units) then 3 clean bins: 24, 39, 54 >= 45 -> 6 bins
    assert (mdt.delay, mdt.run_time) == (0.0, 1800.0)
    mrt = choose_start(AT_START, 850, 4250, policy="MRT")
    assert (mrt.delay, mrt.run_time, mrt.total_time) == (900.0, 900.0, 1800.0)
    # W1: 0.3 * 1800 = 540 < 0.7 * 900 + 0.3 * 900 = 900
    assert choose_start(AT_START, 850, 4250, policy="W1").delay == 0.0


def test_tie_keeps_the_first_option():
    # W3: start now scores 0.5 * 1800 = 900; start at 900 s scores 0.5 * (900 + 900) = 900
    c = choose_start(AT_START, 850, 4250, policy="W3")
    assert c.option_score[0] == pytest.approx(c.option_score[3])
    assert c.index == 0
    # app (b) 1260/3780: 5 clean or 13 burst bins; a burst pair at bins 1-2
    pat = "011" + "0" * 21
    assert choose_start(pat, 1260, 3780, policy="MDT").run_time == 2100.0
    assert choose_start(pat, 1260, 3780, policy="MRT").delay == 900.0
    # W4: 0.6 * 2100 = 1260 = 0.4 * 900 + 0.6 * 1500 -> tie, start now
    w4 = choose_start(pat, 1260, 3780, policy="W4")
    assert (w4.index, w4.run_time) == (0, 2100.0)


def test_bursts_at_end_do_not_matter_to_a_short_job():
    for policy in POLICIES:
        c = choose_start(AT_END, 850, 4250, policy=policy)
        assert (c.delay, c.run_time) == (0.0, 900.0)


def test_fractional_estimator_charges_part_of_the_last_bin():
    c = choose_start(AT_START, 850, 4250, policy="MDT", estimator="fractional")
    # 39 units after 5 bins; the sixth (clean, 15 units) is needed for 6 units: 0.4 bin
    assert c.run_time == pytest.approx(5.4 * 300)
    clear = choose_start(CLEAR, 1000, 2000, policy="MDT", estimator="fractional")
    # 4 clean bins of 250 s of work each: exactly 4 bins, no rounding up to more
    assert clear.run_time == pytest.approx(1200.0)
    bins = choose_start(CLEAR, 1000, 2000, policy="MDT", estimator="bins")
    assert bins.run_time == 1200.0


def test_exact_units_avoid_the_float_residue_of_the_listing():
    # 850 - 3 * (850 / 3) leaves 1.1e-13 > 0 in floating point: the listing, run in floats,
    # would charge a fourth bin. NOTES §2: ceil(850 / 300) = 3 clean bins.
    remaining = 850.0
    for _ in range(3):
        remaining -= 850.0 / 3
    assert remaining > 0
    assert choose_start(CLEAR, 850, 4250, policy="MDT").run_time == 900.0


def test_matches_exact_transcription_on_random_patterns():
    rng = np.random.default_rng(0)
    apps = [(850, 4250), (1260, 3780), (1830, 3660), (300, 300), (299, 1801)]
    for _ in range(60):
        width = int(rng.integers(1, 30))
        pat = "".join(rng.choice(["0", "1"], size=width, p=[0.7, 0.3]))
        mn, mx = apps[int(rng.integers(len(apps)))]
        alpha = float(rng.choice([0.0, 0.4, 0.5, 0.6, 0.7, 1.0, 0.25]))
        start, runs = _listing(pat, mn, mx, alpha)
        c = choose_start(pat, mn, mx, alpha=alpha)
        assert c.delay == start, (pat, mn, mx, alpha)
        assert c.option_run_time.tolist() == runs


def test_options_frame_and_policies():
    c = choose_start("0001100", 850, 4250, policy="MRT")
    df = c.options_frame()
    assert len(df) == 24 and df["chosen"].sum() == 1
    assert df.loc[df["chosen"], "delay_s"].item() == c.delay
    assert policy_alpha("w2") == 0.6
    assert policy_alpha(alpha=0.25) == 0.25


@pytest.mark.parametrize(
    "kwargs",
    [
        {"pattern": "0012", "min_time": 850, "max_time": 4250, "alpha": 0.5},
        {"pattern": "", "min_time": 850, "max_time": 4250, "alpha": 0.5},
        {"pattern": "0", "min_time": 850, "max_time": 800, "alpha": 0.5},
        {"pattern": "0", "min_time": 0, "max_time": 800, "alpha": 0.5},
        {"pattern": "0", "min_time": 850, "max_time": 4250, "alpha": 1.5},
        {"pattern": "0", "min_time": 850, "max_time": 4250, "policy": "FAST"},
        {"pattern": "0", "min_time": 850, "max_time": 4250},
        {"pattern": "0", "min_time": 850, "max_time": 4250, "alpha": 0.5, "policy": "MRT"},
        {"pattern": "0", "min_time": 850, "max_time": 4250, "alpha": 0.5, "estimator": "x"},
        {"pattern": "0", "min_time": 850, "max_time": 4250, "alpha": 0.5, "bin_s": 0},
    ],
)
def test_bad_input_is_an_iosight_error(kwargs):
    with pytest.raises(IosightError):
        choose_start(**kwargs)


def test_parse_pattern_accepts_sequences():
    assert parse_pattern([0, 1, 1]).tolist() == [False, True, True]
    assert parse_pattern("0 1,1").tolist() == [False, True, True]
    with pytest.raises(IosightError):
        parse_pattern([0, 2])


def test_alpha_at_least_half_never_waits():
    # run(0) <= d + run(d), so for alpha >= 0.5 starting now always scores lowest
    rng = np.random.default_rng(7)
    for _ in range(200):
        pat = rng.random(24) < rng.random()
        for estimator in ("bins", "fractional"):
            for alpha in (0.5, 0.6, 0.7, 1.0):
                c = choose_start(pat, 850, 4250, alpha=alpha, estimator=estimator)
                assert c.delay == 0.0


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"min_time": 1e300, "max_time": 1e301, "bin_s": 1e-300}, r"at most 16,777,215 bins"),
        ({"min_time": 850, "max_time": 4250, "n_options": 100_000_000}, r"at most 1,048,576"),
        ({"min_time": 1, "max_time": 5e6, "bin_s": 1, "n_options": 24}, r"at most 3 for a job"),
        ({"min_time": 850, "max_time": 4250, "n_options": 0}, "a positive integer"),
        ({"min_time": 850, "max_time": 4250, "n_options": 2.5}, "a positive integer"),
    ],
)
def test_walks_past_the_memory_bound_are_refused_before_allocating(kwargs, expected):
    """N x (ceil(max_time / L) + 1) <= 2**24 cells, checked before any array is made."""
    with pytest.raises(IosightError, match=expected):
        choose_start("0101", policy="MDT", **kwargs)


def test_the_largest_walk_allowed_runs():
    # 1,048,576 options x (15 + 1) cells = 2**24 exactly: allowed, and the far options
    # (all past the pattern, bursts) cost max_time
    c = choose_start(AT_START, 850, 4250, policy="MRT", n_options=1_048_576)
    assert c.index == 3 and c.run_time == 900
    assert c.option_run_time[-1] == 4500  # 15 whole burst bins
