"""``iosight live``: the log directory followed and the server answering from one
process; a restart neither loses nor duplicates; SIGTERM stops it cleanly; a refit
trains the saved forecaster again on what has landed."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd

from iosight.data import example_logs
from iosight.live import LiveConfig, LiveService
from iosight.warehouse import Warehouse
from tests_support import child_env, shared_path


def _logs(n: int):
    return sorted({p.name: p for p in example_logs()}.values())[:n]


def _config(tmp_path, **extra) -> LiveConfig:
    (tmp_path / "logs").mkdir(exist_ok=True)
    return LiveConfig.from_mapping(
        {"warehouse": "wh", "interval": 0.1, "logs": {"directory": "logs", "settle": 1,
                                                      "workers": 1}, **extra},
        base=tmp_path,
    )  # fmt: skip


def _jobs(wh: Warehouse) -> list[str]:
    return sorted(wh.sql("select source_path from jobs")["source_path"])


def test_logs_that_land_are_served_and_a_restart_adds_nothing_twice(tmp_path):
    first, second = _logs(2)
    service = LiveService(_config(tmp_path, serve={"port": 0}))
    url = service.start_server()
    try:
        shutil.copy(first, tmp_path / "logs" / first.name)
        lines = service.step()
        assert any("1 ingested" in line for line in lines), lines
        (key,) = service.warehouse.sql("select job_key from jobs")["job_key"]
        with urllib.request.urlopen(f"{url}/jobs") as page:  # the server sees the new job
            assert f"/job/{key}" in page.read().decode()
    finally:
        service.close()
    shutil.copy(second, tmp_path / "logs" / second.name)
    again = LiveService(_config(tmp_path))  # a restart: the first log is seen again
    lines = again.step()
    assert any("1 ingested" in line and "1 already in the warehouse" in line for line in lines)
    assert [p.rsplit("/", 1)[-1] for p in _jobs(again.warehouse)] == sorted(
        [first.name, second.name]
    )


def test_each_round_publishes_its_status_for_metrics(tmp_path):
    """The status ``/metrics`` reads: jobs taken, a corrupt log counted as failed, and
    a log still being written (not settled yet) as backlog."""
    from iosight.live import STATUS

    (log,) = _logs(1)
    (tmp_path / "logs").mkdir()
    cfg = LiveConfig.from_mapping({"warehouse": "wh", "logs": {"directory": "logs",
                                   "settle": 2, "workers": 1}}, base=tmp_path)  # fmt: skip
    service = LiveService(cfg)
    shutil.copy(log, tmp_path / "logs" / log.name)
    (tmp_path / "logs" / "broken.darshan").write_bytes(b"not a darshan log")
    service.step()  # both seen once: settle=2 keeps them waiting
    waiting = service.warehouse.read_state(STATUS)["sources"]["logs"]
    assert waiting["backlog"] == 2 and waiting["rows"] == 0
    service.step()
    done = service.warehouse.read_state(STATUS)
    assert done["sources"]["logs"]["backlog"] == 0
    assert done["sources"]["logs"]["rows"] == 1
    assert done["sources"]["logs"]["warnings"] == {"failed": 1}
    assert done["updated_at"] >= done["started_at"]


def test_the_command_logs_its_events_and_stops_on_sigterm(tmp_path):
    (log,) = _logs(1)
    (tmp_path / "logs").mkdir()
    config = tmp_path / "live.yaml"
    config.write_text(
        f"warehouse: {tmp_path / 'wh'}\ninterval: 0.2\n"
        f"logs: {{directory: {tmp_path / 'logs'}, settle: 1, workers: 1}}\nserve: {{port: 0}}\n"
    )
    proc = subprocess.Popen([sys.executable, "-m", "iosight", "live", str(config)],
                            stderr=subprocess.PIPE, text=True, env=child_env())  # fmt: skip
    try:
        said = _read_until(proc, "serving")
        shutil.copy(log, tmp_path / "logs" / log.name)
        said += _read_until(proc, "ingested")
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, said + rest
    assert "1 ingested" in said and rest.rstrip().endswith("stopped")
    assert "Traceback" not in said + rest
    assert len(_jobs(Warehouse(tmp_path / "wh"))) == 1


def _read_until(proc, word: str, timeout: float = 60.0) -> str:
    """The child's log lines up to the first holding ``word``."""
    said, deadline = "", time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        said += line
        if word in line:
            return said
    raise AssertionError(f"no line with {word!r} from iosight live: {said}")


def test_a_refit_equals_training_afresh_on_what_has_landed(tmp_path):
    """A ``live`` forecaster saved on four days of Summit's App10 job totals (real), then
    the week's jobs: the refit one predicts what one trained afresh on the week does."""
    from iosight.bursts import load_forecaster, train_forecaster
    from iosight.live._config import ForecastSettings
    from iosight.live._service import _Refit
    from iosight.timeline import build_timeline, load_timeline
    from iosight.warehouse import ingest

    root = shared_path("datasets", "summit_darshan_total_2021", "darshan_total")
    df = pd.read_parquet(root / "App10.parquet")
    t0 = pd.Timestamp("2021-03-01", tz="UTC").timestamp()
    week = df[(df["start_time"] >= t0) & (df["start_time"] < t0 + 7 * 86400)]
    wh = Warehouse(tmp_path / "wh", create=True)
    for part, rows in (("a", week[week["end_time"] < t0 + 4 * 86400]),
                       ("b", week[week["end_time"] >= t0 + 4 * 86400])):  # fmt: skip
        rows.to_parquet(tmp_path / f"{part}.parquet")
        assert ingest([tmp_path / f"{part}.parquet"], wh, workers=1).ok
        build_timeline(wh, bin_width=300.0)
        if part == "a":
            old = train_forecaster(load_timeline(wh), model="logreg", max_lead=2, workers=1,
                                   severity=False, name="w")  # fmt: skip
            old.save(wh)
    refit = _Refit(wh.path, ForecastSettings(models=("w",), refit_every=1.0, workers=1))
    refit._run()  # what iosight live's refit thread runs, with the configuration's workers
    assert refit.outcome[0].startswith("refit w: done"), refit.outcome
    new = load_forecaster(wh, "w")
    tl = load_timeline(wh)
    fresh = train_forecaster(tl, **old.settings.options(), workers=1)
    assert new.settings == old.settings
    got, want = new.predict(tl).table, fresh.predict(tl).table
    pd.testing.assert_frame_equal(got, want)
    assert new.metadata["timeline_window"] != old.metadata["timeline_window"]  # the week now


def test_feeds_small_files_are_compacted_as_rounds_go(tmp_path):
    """Each Slurm snapshot (recorded from Debian 12's Slurm, tests/live/slurm_data) is two
    small files; over 40 rounds the service keeps the tables to a bounded number of files
    and loses no row."""
    from iosight.warehouse import AUTO_SMALL_FILES

    replay = tmp_path / "replay"
    replay.mkdir()
    recorded = Path(__file__).parent / "slurm_data" / "squeue-22.05.8-debian12.json"
    for i in range(40):
        shutil.copy(recorded, replay / f"{i:03d}.json")
    cfg = LiveConfig.from_mapping({"warehouse": "wh", "interval": 0.1,
                                   "feeds": {"slurm": {"recorded": str(replay)}}},
                                  base=tmp_path)  # fmt: skip
    service = LiveService(cfg)
    for _ in range(40):
        service.step()
    wh = service.warehouse
    assert wh.sql("select count(*) n from sched_jobs")["n"][0] == 40 * 10
    for table in ("sched_jobs", "sched_snapshots"):
        assert len(wh.table_files(table)) <= AUTO_SMALL_FILES, table
