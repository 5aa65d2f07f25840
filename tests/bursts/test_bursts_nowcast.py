"""The nowcast's unseen part: jobs whose log has not landed, at their analogs' rates
(SYNTHETIC jobs worked out by hand)."""

import numpy as np
import pandas as pd
import pytest

from iosight.bursts._nowcast import analog_rates, nowcast, unseen_bytes


def _jobs() -> pd.DataFrame:
    """Job 0 writes 1,000 B over 1,000 s and lands at 1,000 s. Job 1 (same user,
    executable and size) starts after that: rate 1 B/s. Job 2 (same executable, another
    user, twice the processes): 2 B/s. Job 3 (same kind as 0) starts before job 0 landed:
    no analog, 0. Job 4 (same kind) lands at 2,000 s, after job 5 starts: job 5's analog
    is still job 0."""
    return pd.DataFrame({
        "start_time": [0.0, 1200.0, 1500.0, 500.0, 1300.0, 1900.0],
        "end_time": [1000.0, 2400.0, 2400.0, 900.0, 1800.0, 2400.0],
        "known_at": [1000.0, 2400.0, 2400.0, 900.0, 2000.0, 2400.0],
        "exe": ["a", "a", "a", "a", "a", "a"],
        "uid": ["u", "u", "v", "u", "u", "u"],
        "nprocs": [4, 4, 8, 4, 4, 4],
        "source": "synthetic",
        "write_bytes": [1000.0, 5.0, 5.0, 400.0, 5e6, 5.0],
    })  # fmt: skip


def test_analog_rates_use_only_runs_landed_before_the_start():
    r = analog_rates(_jobs(), "write")
    # job 3: job 0 had not landed at 500 s; job 4 lands after job 5 starts
    assert r.tolist() == pytest.approx([0.0, 1.0, 2.0, 0.0, 1.0, 1.0])


def test_unseen_bytes_of_each_bin_up_to_its_end():
    jobs = _jobs()
    starts = np.arange(0.0, 2700.0, 300.0)  # bins of 300 s; ends 300, 600, ..., 2700
    got = unseen_bytes(jobs, starts, 300.0, "write")
    # per bin end T: jobs started before T whose log lands in a later bin, rate x their
    # time in the bin before T. Jobs 0 and 3: rate 0 (no analog). Job 1: 1 B/s from
    # 1,200 s; job 2: 2 B/s from 1,500 s; job 4: 1 B/s from 1,300 s, seen from its
    # landing bin (1,800-2,100 s) on; job 5: 1 B/s from 1,900 s. Jobs 1, 2 and 5 land in
    # the last bin: nothing unseen there.
    want = [0, 0, 0, 0, 300 + 200, 300 + 600 + 300, 300 + 600 + 200, 300 + 600 + 300, 0]
    assert got.tolist() == pytest.approx(want)
    assert nowcast(np.ones(9), got).tolist() == pytest.approx(np.add(want, 1))


def test_a_jobs_own_bytes_never_reach_its_nowcast():
    jobs = _jobs()
    starts = np.arange(0.0, 2700.0, 300.0)
    before = unseen_bytes(jobs, starts, 300.0, "write")
    jobs.loc[[1, 2, 5], "write_bytes"] *= 1000  # running to the end: never landed
    assert unseen_bytes(jobs, starts, 300.0, "write").tolist() == before.tolist()
