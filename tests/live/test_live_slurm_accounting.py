"""``sacct --json`` through a real slurmdbd: Debian's ``slurmdbd`` 22.05.8 with a private
MariaDB (``mariadb-server``), started beside the test Slurm (slurm_server.py,
``accounting=True``; skipped, saying why, where they cannot start). The jobs that left
the queue reach ``iosight live``'s Slurm feed from accounting, as sbatch gave them and
as sacct says; accounting down or hung is one warning, and the queue's snapshot is kept."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from collections import Counter

import pytest
from slurm_server import plain, sbatch, start_slurm, until

from iosight.live import (
    LiveConfig,
    LiveService,
    SlurmFeed,
    SlurmFeedOptions,
    sched_snapshot,
    scheduler_view,
)
from iosight.warehouse import Warehouse

COLUMNS = ("name", "user", "partition", "nodes", "ntasks", "state", "submit_time",
           "start_time", "end_time", "time_limit_s")  # fmt: skip


@pytest.fixture(scope="module")
def accounted(tmp_path_factory):
    root = tmp_path_factory.mktemp("slurmdbd")
    with start_slurm(root, accounting=True) as cluster, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])  # the feed's commands: this Slurm
        yield cluster


def _state(value) -> str:
    return value[0] if isinstance(value, list) else value  # a list from 23.11 on


def _sacct(env: dict, since: float) -> dict[int, dict]:
    """What ``sacct --json`` says of the jobs since ``since``, read here on its own:
    jobid -> the ``sched_jobs`` columns (the size: the most tasks a step launched)."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
    out = subprocess.run(["sacct", "--json", "--allusers", f"--starttime={start}"], env=env,
                         capture_output=True, text=True, timeout=20, check=True)  # fmt: skip
    jobs = {}
    for j in json.loads(out.stdout)["jobs"]:
        t = {k: plain(j["time"][k]) for k in ("submission", "start", "end", "limit")}
        values = (j["name"], j["user"], j["partition"], plain(j["allocation_nodes"]),
                  max(plain(s["tasks"]["count"]) for s in j["steps"]),
                  _state(j["state"]["current"]), t["submission"], t["start"], t["end"],
                  t["limit"] * 60)  # fmt: skip
        jobs[j["job_id"]] = dict(zip(COLUMNS, values, strict=True))
    return jobs


def _rows(wh: Warehouse) -> dict[int, dict]:
    snap = sched_snapshot(wh)
    return {int(r.jobid): {c: r[c] for c in COLUMNS} for _, r in snap.iterrows()}


def test_iosight_live_takes_the_jobs_that_left_the_queue_from_sacct(accounted, tmp_path):
    """Two jobs polled while queued; the controller then forgets them (restarted with its
    state cleared, ``slurmctld -c``: what MinJobAge's purge does, which runs only once a
    minute), so the next round's snapshot has them from sacct alone (its window starts at
    the last snapshot), with their real ends; the round after has neither again."""
    env = accounted.env
    service = LiveService(LiveConfig.from_mapping(
        {"warehouse": "wh", "feeds": {"slurm": {"timeout": "20s"}}}, base=tmp_path))  # fmt: skip
    before = math.floor(time.time())
    ior = sbatch(env, "-n", "2", "-t", "2", "-J", "ior", "--wrap", "srun sleep 1")
    vpic = sbatch(env, "-n", "2", "-t", "3", "-J", "vpic", "--wrap", "sleep 1")
    after = time.time()
    service.step()
    queued = _rows(service.warehouse)
    until(lambda: {ior, vpic} <= {j for j, r in _sacct(env, before).items()
                                  if r["state"] == "COMPLETED"}, "both jobs ended", 30)  # fmt: skip
    accounted.restart("slurmctld", "-c")
    service.step()
    wh = service.warehouse
    snapshots = wh.sql("select source, jobs from sched_snapshots order by known_at")
    assert list(snapshots["source"]) == ["squeue+sacct", "squeue+sacct"]
    assert service.status.doc["sources"]["slurm"]["warnings"] == {}
    ended, said = _rows(wh), _sacct(env, before)
    assert set(ended) == {ior, vpic} and scheduler_view(wh).running.empty
    for jobid in (ior, vpic):
        assert ended[jobid] == said[jobid]  # what sacct says, read on its own
        row, asked = ended[jobid], queued[jobid]  # and what squeue said while queued
        assert {c: row[c] for c in COLUMNS[:4]} == {c: asked[c] for c in COLUMNS[:4]}
        assert (row["submit_time"], row["time_limit_s"]) == (asked["submit_time"],
                                                             asked["time_limit_s"])  # fmt: skip
        assert row["state"] == "COMPLETED" and before <= row["submit_time"] <= after
        assert row["submit_time"] <= row["start_time"] <= row["end_time"] - 1  # sleep 1
    assert (ended[ior]["name"], ended[ior]["ntasks"], ended[ior]["time_limit_s"]) == ("ior", 2, 120)
    assert (ended[vpic]["name"], ended[vpic]["time_limit_s"]) == ("vpic", 180)
    # sacct knows the tasks launched: srun's 2 for ior; vpic ran no srun, only its batch
    # script's one task, where squeue said the 2 asked for
    assert (queued[vpic]["ntasks"], ended[vpic]["ntasks"]) == (2, 1)
    service.step()
    assert not {ior, vpic} & set(_rows(wh))  # sacct's window moved on: not taken twice


def test_accounting_down_or_hung_is_one_warning_and_the_queue_is_kept(accounted, tmp_path,
                                                                      caplog):  # fmt: skip
    """slurmdbd stopped: sacct exits 1 at once (``source_down``); slurmdbd hung (SIGSTOP):
    sacct is killed at the feed's timeout (``slow``). Each poll still stores squeue's
    snapshot; with slurmdbd back, sacct's part returns."""
    env, wh = accounted.env, Warehouse(tmp_path / "wh", create=True)
    held = sbatch(env, "--begin=now+3600", "-J", "held", "--wrap", "true")
    feed = SlurmFeed(SlurmFeedOptions(timeout=3))
    accounted.stop("slurmdbd")
    try:
        down = feed.poll(wh)
    finally:
        accounted.start("slurmdbd")
    dbd = accounted.procs["slurmdbd"].pid
    os.kill(dbd, signal.SIGSTOP)
    try:
        hung = feed.poll(wh)
    finally:
        os.kill(dbd, signal.SIGCONT)
    back = feed.poll(wh)
    assert (down.warnings, hung.warnings, back.warnings) == (
        Counter(source_down=1), Counter(slow=1), Counter())  # fmt: skip
    lines = [r.getMessage() for r in caplog.records if r.name == "iosight.live"]
    assert "sacct exited 1" in lines[0] and "Connection refused" in lines[0]
    assert "sacct took over 3 s; killed" in lines[1]
    snapshots = wh.sql("select source from sched_snapshots order by known_at")
    assert list(snapshots["source"]) == ["squeue", "squeue", "squeue+sacct"]
    assert held in set(scheduler_view(wh).pending["jobid"])
