"""``iosight.live.SlurmFeed`` on recorded Slurm JSON (22.05 to 24.05, see slurm_data/README.md)
and on commands that fail: snapshots, the view at t, resume, one warning per fault."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from iosight.cli import app
from iosight.live import (
    SlurmFeed,
    SlurmFeedOptions,
    sched_snapshot,
    scheduler_view,
    slurm_running_jobs,
)
from iosight.warehouse import Warehouse

DATA = Path(__file__).parent / "slurm_data"
DEB12 = DATA / "squeue-22.05.8-debian12.json"


@pytest.fixture
def wh(tmp_path):
    return Warehouse(tmp_path / "wh", create=True)


def _poll(wh, path: Path, now: float):
    return SlurmFeed(SlurmFeedOptions(recorded=path)).poll(wh, now=now)


def test_a_22_05_snapshot_is_what_squeue_said(wh):
    """Debian 12's Slurm: plain integers; squeue's end of a live job (its limit, or
    garbage for an unlimited one) is not stored as an end."""
    raw = {j["job_id"]: j for j in json.loads(DEB12.read_text())["jobs"]}
    report = _poll(wh, DEB12, now=1795803230.0)
    assert report.rows == len(raw) and not report.warnings
    got = sched_snapshot(wh).set_index("jobid")
    assert sorted(got.index) == sorted(raw)
    for jobid, job in raw.items():
        row = got.loc[jobid]
        assert (row["name"], row["user"], row["partition"]) == (
            job["name"], job["user_name"], job["partition"])  # fmt: skip
        assert (row["state"], row["nodes"], row["ntasks"]) == (
            job["job_state"], job["node_count"], job["tasks"])  # fmt: skip
        assert row["submit_time"] == job["submit_time"]
        assert row["start_time"] == job["start_time"]
        ended = job["job_state"] == "COMPLETED"
        assert row["end_time"] == job["end_time"] if ended else math.isnan(row["end_time"])
        limit = job["time_limit"]
        assert row["time_limit_s"] == limit * 60 if limit else math.isnan(row["time_limit_s"])
        assert row["known_at"] == 1795803230.0


def test_the_view_at_t_has_running_jobs_and_pending_ones_with_expected_starts(wh):
    raw = json.loads(DEB12.read_text())["jobs"]
    _poll(wh, DEB12, now=1795803230.0)
    view = scheduler_view(wh, at=1795803231.0)
    assert view.as_of == 1795803230.0
    assert list(view.running["jobid"]) == [j["job_id"] for j in raw if j["job_state"] == "RUNNING"]
    pending = sorted((j["start_time"], j["job_id"]) for j in raw if j["job_state"] == "PENDING")
    assert list(zip(view.pending["start_time"], view.pending["jobid"], strict=True)) == pending
    assert scheduler_view(wh, at=1795803229.0).as_of is None  # before the first snapshot


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        # 23.02: counts nested, times plain; a held job's start 0 is unknown
        ("squeue-23.02.4-excerpt.json",
         {52175550: ("PENDING", 1, 1, 1694675236, None, None, 7200.0),
          52173767: ("COMPLETED", 1, 1, 1694674833, 1694675238, 1694675491, 7200.0),
          52410472: ("PENDING", 1, 1, 1694761621, None, None, 7200.0)}),
        # 23.11: times nested, the state a list; a running job's end is its limit
        ("squeue-23.11.1-excerpt.json",
         {6080221: ("RUNNING", 1, 1, 1711533827, 1711534808, None, 11520 * 60.0)}),
        # sacct 22.05 (the test slurmdbd's): plain numbers, the state under
        # "state.current" a string; tasks from the steps: srun's 2 for job 1, the batch
        # script's 1 for job 2 (no srun, though it asked for 2)
        ("sacct-22.05.8-debian12.json",
         {1: ("COMPLETED", 1, 2, 1796531725, 1796531725, 1796531726, 120.0),
          2: ("COMPLETED", 1, 1, 1796531725, 1796531727, 1796531728, 180.0)}),
        # sacct 24.05: times under "time", the state under "state.current", tasks from
        # the steps, an infinite limit
        ("sacct-24.05.4-excerpt.json",
         {26: ("COMPLETED", 1, 1, 1744187887, 1744187888, 1744187888, math.inf)}),
    ],
)  # fmt: skip
def test_later_slurm_shapes(wh, name, expect):
    report = _poll(wh, DATA / name, now=1.8e9)
    assert report.rows == len(expect) and not report.warnings
    got = sched_snapshot(wh).set_index("jobid")
    cols = ["state", "nodes", "ntasks", "submit_time", "start_time", "end_time", "time_limit_s"]
    for jobid, want in expect.items():
        row = [None if isinstance(v, float) and math.isnan(v) else v for v in got.loc[jobid, cols]]
        assert row == list(want)


def test_a_replayed_directory_gives_a_snapshot_a_poll_and_resumes_after_a_restart(wh, tmp_path):
    replay = tmp_path / "replay"
    replay.mkdir()
    shutil.copy(DEB12, replay / "001.json")
    (replay / "002.json").write_text('{"jobs": []}')  # the queue emptied (SYNTHETIC)
    assert _poll(wh, replay, now=100.0).rows == 10
    report = _poll(wh, replay, now=200.0)  # a new feed: the resume point is in the warehouse
    assert report.rows == 0 and not report.warnings
    assert _poll(wh, replay, now=300.0).lag is None  # nothing left: nothing written
    snaps = wh.sql("select known_at, jobs, source from sched_snapshots order by known_at")
    assert snaps.values.tolist() == [[100.0, 10, "001.json"], [200.0, 0, "002.json"]]
    assert len(sched_snapshot(wh, at=150.0)) == 10
    assert sched_snapshot(wh, at=250.0).empty  # the empty queue is known, not the old one
    assert wh.sql("select count(*) as n from sched_jobs")["n"][0] == 10


def test_a_clock_not_after_the_last_snapshot_takes_nothing(wh, caplog):
    _poll(wh, DEB12, now=100.0)
    report = _poll(wh, DEB12, now=100.0)
    assert report.warnings == {"future_clock": 1} and report.rows == 0
    assert "future_clock" in caplog.text
    assert wh.sql("select count(*) as n from sched_snapshots")["n"][0] == 1


@pytest.mark.parametrize(
    ("squeue", "kind"),
    [
        (("/nonexistent/squeue", "--json"), "source_down"),
        (("sh", "-c", "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; "
                      "exit 1"), "source_down"),
        (("sleep", "5"), "slow"),
        (("echo", "squeue: error: invalid"), "malformed"),
        (("echo", '{"jobs": 3}'), "malformed"),
    ],
)  # fmt: skip
def test_a_failing_squeue_is_one_warning_and_no_snapshot(wh, squeue, kind):
    feed = SlurmFeed(SlurmFeedOptions(squeue=squeue, sacct=None, timeout=0.5))
    report = feed.poll(wh, now=100.0)
    assert report.warnings == {kind: 1} and report.rows == 0
    assert not wh.has_table("sched_snapshots")


def test_a_failing_sacct_warns_and_keeps_the_queue(wh, tmp_path):
    """Debian's single-node Slurm runs no accounting: sacct fails, the queue is kept."""
    squeue = ("cat", str(DEB12))
    sacct = ("sh", "-c", "echo 'Slurm accounting storage is disabled' >&2; exit 1")
    report = SlurmFeed(SlurmFeedOptions(squeue=squeue, sacct=sacct)).poll(wh, now=100.0)
    assert report.warnings == {"source_down": 1} and report.rows == 10


def test_sacct_adds_the_ended_jobs_from_the_last_snapshot_on(wh, tmp_path):
    """sacct's window starts at the resume point; the queue's record of a job wins."""
    seen = tmp_path / "argv"
    squeue = ("cat", str(DEB12))
    sacct = ("sh", "-c", f'echo "$@" >> {seen}; cat {DATA / "sacct-24.05.4-excerpt.json"}', "-")
    feed = SlurmFeed(SlurmFeedOptions(squeue=squeue, sacct=sacct, lookback=3600.0))
    assert feed.poll(wh, now=1795803230.0).rows == 11
    assert feed.poll(wh, now=1795803290.0).rows == 11
    local = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))  # noqa: E731
    assert seen.read_text().splitlines() == [  # an hour back, then from the last snapshot
        f"--starttime={local(1795803230 - 3600)}", f"--starttime={local(1795803230)}"]  # fmt: skip
    assert sched_snapshot(wh).set_index("jobid").loc[26, "state"] == "COMPLETED"
    assert wh.sql("select source from sched_snapshots")["source"].tolist() == ["squeue+sacct"] * 2


def test_one_unreadable_job_is_one_warning(wh, tmp_path):
    doc = json.loads(DEB12.read_text())
    del doc["jobs"][0]["job_state"]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    report = _poll(wh, tmp_path / "bad.json", now=100.0)
    assert report.warnings == {"malformed": 1} and report.rows == 9


def test_running_jobs_join_the_job_state_of_the_logs_forecaster(wh):
    """Slurm's running jobs in load_jobs' columns: job_state counts them running from
    their start and gives them the I/O rate of their application's ended runs (here
    three SYNTHETIC ended runs of 'job3', the running job's name)."""
    import pandas as pd

    from iosight.bursts import job_state

    _poll(wh, DEB12, now=1795803230.0)
    running = slurm_running_jobs(wh)
    assert running[["exe", "nprocs", "uid"]].values.tolist() == [["job3", 2, "root"]]
    start = running["start_time"][0]
    assert running["end_time"][0] == start + 300  # its 5-minute limit
    ended = pd.DataFrame(  # SYNTHETIC history: 3 runs of job3, 1 GB each, known days ago
        {"start_time": start - 86400 * np.array([4.0, 3.0, 2.0]), "exe": "job3",
         "source": "", "nprocs": 2, "uid": "root", "read_bytes": 0.0, "write_bytes": 1e9}
    )  # fmt: skip
    ended["end_time"] = ended["start_time"] + 600
    ended["known_at"] = ended["end_time"]
    bins = np.floor(start / 300) * 300 + 300 * np.arange(-1, 2)
    state = job_state(pd.concat([ended, running], ignore_index=True), bins, 300.0, "write")
    assert state.running.tolist() == [0.0, 1.0, 0.0]  # runs at the end of its bin only
    assert state.expected[1, 0] == pytest.approx(1e9 / 600 * 300)


def test_schedule_start_prints_sbatchs_begin_in_local_time(monkeypatch):
    """--format sbatch: the --begin= option of the start Algorithm 1 chose, in the local
    time zone sbatch reads it in (here UTC+05:30, a POSIX TZ)."""
    from iosight.schedule import choose_start

    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    try:
        args = ["schedule", "start", "--pattern", "111" + "0" * 21, "--min-time", "850",
                "--max-time", "4250", "--policy", "MRT", "--at", "2026-11-27T20:00:00"]  # fmt: skip
        res = CliRunner().invoke(app, [*args, "--format", "sbatch"])
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert res.exit_code == 0, res.output
    delay = choose_start("111" + "0" * 21, 850, 4250, policy="MRT").delay
    at = 1795809600.0  # 2026-11-27T20:00:00 UTC
    local = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at + delay + 5.5 * 3600))
    assert res.output == f"--begin={local}\n"
    bad = CliRunner().invoke(app, [*args, "--format", "slurm"])
    assert bad.exit_code == 1 and "sbatch" in bad.output and "Traceback" not in bad.output


def test_iosight_live_configures_and_drives_the_slurm_feed(tmp_path):
    """``feeds: {slurm: {...}}`` of iosight live's configuration: the commands as strings,
    durations, a recorded replay; each round takes one snapshot and publishes its count."""
    from iosight._errors import IosightError
    from iosight.live import STATUS, LiveConfig, LiveService, make_feed

    feed = make_feed("slurm", {"squeue": "squeue --json --states=all", "sacct": None,
                               "timeout": "5s", "lookback": "2h"})  # fmt: skip
    assert feed.options.squeue == ("squeue", "--json", "--states=all")
    assert (feed.options.sacct, feed.options.timeout, feed.options.lookback) == (None, 5, 7200)
    with pytest.raises(IosightError, match="unknown setting 'squeu' in 'feeds.slurm'"):
        make_feed("slurm", {"squeu": "squeue --json"})
    replay = tmp_path / "replay"
    replay.mkdir()
    shutil.copy(DEB12, replay / "001.json")
    cfg = LiveConfig.from_mapping(
        {"warehouse": "wh", "feeds": {"slurm": {"recorded": str(replay)}}}, base=tmp_path
    )
    service = LiveService(cfg)
    try:
        service.step()
        service.step()  # the replay is over: nothing more
    finally:
        service.close()
    assert service.warehouse.read_state(STATUS)["sources"]["slurm"]["rows"] == 10
    assert len(sched_snapshot(service.warehouse)) == 10
