"""``iosight.live.SlurmFeed`` and ``schedule start --format sbatch`` against a real
single-node Slurm (Debian's slurm-wlm + munge, started here; skipped, saying why, where it
cannot start). No accounting runs here, so sacct is off: it runs against a real slurmdbd
in test_live_slurm_accounting.py, and on recorded JSON in test_live_slurm_recorded.py.
The cli_filter of the docs (docs/slurm/cli_filter.lua) runs in every sbatch here; only a
job that asks uses it."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_server import plain, sbatch, start_slurm, until
from typer.testing import CliRunner

from iosight.cli import app
from iosight.live import SlurmFeed, SlurmFeedOptions, sched_snapshot, scheduler_view
from iosight.warehouse import Warehouse

IST = "IST-5:30"  # POSIX TZ: UTC+05:30, no tzdata needed
CLI_FILTER = Path(__file__).resolve().parents[2] / "docs" / "slurm" / "cli_filter.lua"
PATTERN = "111" + "0" * 21  # bursts in the next three bins: Algorithm 1 waits


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    root = tmp_path_factory.mktemp("slurm")
    shutil.copy(CLI_FILTER, root / "cli_filter.lua")  # beside slurm.conf, where Slurm looks
    with (
        start_slurm(root, ("CliFilterPlugins=cli_filter/lua",)) as cluster,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])  # the feed's squeue: this Slurm
        yield cluster.env


def _chosen(env: dict) -> tuple[str, float]:
    """A decision time an hour ahead (a bin boundary, ISO UTC) and the start Algorithm 1
    chooses for PATTERN from it (epoch s)."""
    from iosight.schedule import choose_start

    at = math.ceil(time.time() / 300) * 300 + 3600
    delay = choose_start(PATTERN, 850, 4250, policy="MRT").delay
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)), at + delay


def _job(env: dict, jobid: int) -> dict:
    out = subprocess.run(["squeue", "--json"], env=env, capture_output=True, text=True,
                         timeout=10, check=True)  # fmt: skip
    (job,) = [j for j in json.loads(out.stdout)["jobs"] if j["job_id"] == jobid]
    return job


def _queue(env: dict) -> dict[int, tuple]:
    """What ``squeue --json`` says now: jobid -> (state, name, nodes, tasks, submit, start)."""
    out = subprocess.run(["squeue", "--json"], env=env, capture_output=True, text=True,
                         timeout=10, check=True)  # fmt: skip
    rows = {}
    for j in json.loads(out.stdout)["jobs"]:
        state = j["job_state"][0] if isinstance(j["job_state"], list) else j["job_state"]
        rows[j["job_id"]] = (state, j["name"], plain(j["node_count"]), plain(j["tasks"]),
                             plain(j["submit_time"]), plain(j["start_time"]))  # fmt: skip
    return rows


def test_a_snapshot_equals_what_squeue_said(slurm, tmp_path):
    """Two jobs filling the node one after the other and a third behind them: one runs,
    two wait with Slurm's expected starts; the snapshot holds exactly what squeue said."""
    cpus = str(os.cpu_count())
    first = sbatch(slurm, "-n", cpus, "-t", "2", "-J", "ior", "--wrap", "sleep 60")
    second = sbatch(slurm, "-n", cpus, "-t", "2", "-J", "ior", "--wrap", "sleep 60")
    third = sbatch(slurm, "-n", "1", "-t", "5", "-J", "vpic", "--wrap", "sleep 60")

    def planned() -> bool:
        q = _queue(slurm)
        return q[first][0] == "RUNNING" and bool(q[second][5] and q[third][5])

    until(planned, "the first job running, the others planned")
    wh = Warehouse(tmp_path / "wh", create=True)
    feed = SlurmFeed(SlurmFeedOptions(sacct=None))
    for _ in range(3):  # the queue may change between squeue's calls: poll between equal ones
        before = _queue(slurm)
        report = feed.poll(wh)
        after = _queue(slurm)
        if before == after:
            break
    assert before == after and not report.warnings
    snap = sched_snapshot(wh)
    cols = ["state", "name", "nodes", "ntasks", "submit_time", "start_time"]
    got = {int(r.jobid): tuple(r[c] for c in cols) for _, r in snap.iterrows()}
    assert got == after
    view = scheduler_view(wh)
    assert first in set(view.running["jobid"])
    assert {second, third} <= set(view.pending["jobid"])
    starts = dict(zip(snap["jobid"], snap["start_time"], strict=True))
    assert starts[second] == starts[first] + 120  # Slurm expects it when the first's limit ends


def test_a_job_submitted_with_the_begin_iosight_chose_waits_until_it(slurm, tmp_path):
    """``sbatch $(iosight schedule start ... --format sbatch) ...``: Slurm's eligible time
    is the start iosight chose, to the second. sbatch reads --begin in its local time zone
    (TZ; here UTC+05:30 for both iosight and sbatch, the daemons in UTC); Slurm keeps epoch
    seconds."""
    iso, chosen = _chosen(slurm)
    args = ["schedule", "start", "--pattern", PATTERN, "--min-time", "850",
            "--max-time", "4250", "--policy", "MRT", "--at", iso, "--format", "sbatch"]  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TZ", IST)
        time.tzset()
        try:
            res = CliRunner().invoke(app, args)
        finally:
            mp.delenv("TZ")
            time.tzset()
    assert res.exit_code == 0, res.output
    begin = res.output.strip()
    env = {**slurm, "TZ": IST}
    jobid = sbatch(env, begin, "-J", "checkpoint", "--wrap", "true")
    job = _job(env, jobid)
    assert plain(job["eligible_time"]) == chosen
    assert job["state_reason"] == "BeginTime"
    show = subprocess.run(["scontrol", "show", "job", str(jobid)], env=env,
                          capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
    assert f"EligibleTime={begin.removeprefix('--begin=')}" in show.stdout
    wh = Warehouse(tmp_path / "wh", create=True)
    SlurmFeed(SlurmFeedOptions(sacct=None)).poll(wh)
    pending = scheduler_view(wh).pending.set_index("jobid")
    assert pending.loc[jobid, "start_time"] == chosen  # Slurm's expected start: the begin


def test_the_cli_filter_of_the_docs_gives_a_job_that_asks_the_begin_iosight_chose(slurm):
    """docs/slurm/cli_filter.lua in sbatch: a job with IOSIGHT_MIN_TIME/MAX_TIME gets the
    --begin of ``iosight schedule start`` (this iosight, run by the filter)."""
    import iosight

    iso, chosen = _chosen(slurm)
    command = (f"{sys.executable} -m iosight schedule start --pattern {PATTERN} "
               f"--policy MRT --at {iso}")  # fmt: skip
    src = str(Path(iosight.__file__).resolve().parents[1])
    env = {**slurm, "TZ": IST, "IOSIGHT_MIN_TIME": "850", "IOSIGHT_MAX_TIME": "4250",
           "IOSIGHT_START_COMMAND": command,
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    jobid = sbatch(env, "-J", "asks", "--wrap", "true")
    assert plain(_job(env, jobid)["eligible_time"]) == chosen
    own = sbatch(env, "--begin=now+7200", "-J", "own", "--wrap", "true")  # its own: kept
    assert abs(plain(_job(env, own)["eligible_time"]) - (time.time() + 7200)) < 60
