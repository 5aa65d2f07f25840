"""Feature set 4's running jobs from Slurm's snapshots (``iosight.bursts.scheduler_jobs``):
recorded Slurm 22.05 JSON (tests/live/slurm_data, Debian 12's Slurm) polled into a
warehouse, beside SYNTHETIC ended runs standing for the logs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iosight.bursts import job_state, scheduler_jobs
from iosight.bursts._nowcast import unseen_bytes
from iosight.live import SlurmFeed, SlurmFeedOptions
from iosight.warehouse import Warehouse

DEB12 = Path(__file__).parents[1] / "live" / "slurm_data" / "squeue-22.05.8-debian12.json"
SEEN = 1795803230.0  # the snapshot's time; job 7 ('job3', 2 tasks) runs since 1795803207
START = 1795803207.0
LANDS = 1795803460.0  # when job 7's SYNTHETIC log lands
WIDTH = 60.0


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    wh = Warehouse(tmp_path_factory.mktemp("slurm") / "wh", create=True)
    SlurmFeed(SlurmFeedOptions(recorded=DEB12)).poll(wh, now=SEEN)
    return wh


def _logs(end: float = 1795803400.0, written: float = 5e9) -> pd.DataFrame:
    """SYNTHETIC logs: three ended runs of 'job3' known days before (1 GB each in 600 s)
    and job 7's own log (ended at ``end``, landing at ``LANDS``)."""
    past = START - 86400 * np.array([4.0, 3.0, 2.0])
    return pd.DataFrame({
        "jobid": [101, 102, 103, 7], "start_time": [*past, START],
        "end_time": [*(past + 600), end], "exe": "job3", "source": "",
        "nprocs": 2, "uid": "root", "known_at": [*(past + 600), LANDS],
        "read_bytes": 0.0, "write_bytes": [1e9, 1e9, 1e9, written],
    })  # fmt: skip


BINS = np.floor(START / WIDTH) * WIDTH + WIDTH * np.arange(-1, 6)  # ends 3180 .. 3540


def test_a_job_slurm_saw_running_counts_once_until_its_log_lands(wh):
    """At the bin ends after the snapshot and before its log lands job 7 runs (once, not
    also as its log's run); the logs alone would end it at its log's end (3400), which
    was not known at 3420; after the log lands nothing runs."""
    ends = BINS + WIDTH
    live = job_state(scheduler_jobs(wh, _logs()), BINS, WIDTH, "write").running
    assert live.tolist() == [float(SEEN <= t < LANDS) for t in ends]
    logs = job_state(_logs(), BINS, WIDTH, "write").running
    assert logs.tolist() == [float(START < t < 1795803400.0) for t in ends]


def test_a_running_jobs_later_log_changes_nothing_before_it_lands(wh):
    """No look-ahead: another end and 1000 times the bytes in job 7's log leave the state
    at every bin end before the log landed as it was; its rate is its application's."""
    a = job_state(scheduler_jobs(wh, _logs()), BINS, WIDTH, "write")
    b = job_state(scheduler_jobs(wh, _logs(end=1795803450.0, written=5e12)), BINS, WIDTH,
                  "write")  # fmt: skip
    before = BINS + WIDTH < LANDS
    for x, y in ((a.running, b.running), (a.elapsed_ratio, b.elapsed_ratio),
                 (a.expected, b.expected)):  # fmt: skip
        np.testing.assert_array_equal(x[before], y[before])
    at = np.flatnonzero(before & (a.running > 0))
    assert a.expected[at, 0] == pytest.approx(1e9 / 600 * WIDTH)


def test_the_nowcast_counts_a_job_slurm_saw_once_while_it_runs(wh):
    """The unseen bytes of the current bin (the nowcast's) take job 7 where Slurm showed
    it running and its log had not landed, once (not also as its log's run), at its
    application's rate; as follow sees the logs (``logs_until=-inf``), its log's run
    counts nowhere, so before the snapshot nothing runs."""
    ends = BINS + WIDTH
    for until in (None, -np.inf):
        sched = scheduler_jobs(wh, _logs(), logs_until=until)
        want = [1e9 / 600 * min(t - START, WIDTH) * (SEEN <= t < LANDS) for t in ends]
        np.testing.assert_allclose(unseen_bytes(sched, BINS, WIDTH, "write"), want)
    running = job_state(scheduler_jobs(wh, _logs(), logs_until=-np.inf), BINS, WIDTH, "write")
    assert running.running.tolist() == [float(SEEN <= t < LANDS) for t in ends]
    bare = Warehouse(wh.path.parent / "bare", create=True)
    follow_view = scheduler_jobs(bare, _logs(), logs_until=-np.inf)
    assert not job_state(follow_view, BINS, WIDTH, "write").running.any()
    assert not unseen_bytes(follow_view, BINS, WIDTH, "write").any()


def test_without_snapshots_the_logs_are_the_job_state(tmp_path):
    """No ``sched_jobs``: the frame is the logs' own, so batch results do not move."""
    bare = Warehouse(tmp_path / "wh", create=True)
    logs = _logs()
    assert scheduler_jobs(bare, logs) is logs


def test_an_empty_snapshot_says_nothing_runs(tmp_path):
    """A snapshot with no job (no ``sched_jobs`` table yet): from it on no log's job
    counts as running, before it the logs' do."""
    import json

    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({**json.loads(DEB12.read_text()), "jobs": []}))
    bare = Warehouse(tmp_path / "wh", create=True)
    SlurmFeed(SlurmFeedOptions(recorded=empty)).poll(bare, now=1795803300.0)
    assert not bare.has_table("sched_jobs")
    running = job_state(scheduler_jobs(bare, _logs()), BINS, WIDTH, "write").running
    assert running.tolist() == [float(START < t < 1795803300.0) for t in BINS + WIDTH]
