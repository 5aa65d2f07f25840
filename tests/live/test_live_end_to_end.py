"""``iosight live`` end to end (issue #28): LDMS messages, Prometheus rates and Slurm jobs
arrive while a job's log lands; the service takes them all and answers
``/api/forecast``, ``/api/start`` and ``/metrics``; the live timeline equals the
log-built one for the job whose log landed, plus the stream of the job still running.

The facility's history (two days of jobs, ending at midnight UTC today), the streamed
jobs, the replayed rates and the landed job-total row are SYNTHETIC; the Slurm queue is
the snapshot recorded from Debian 12's Slurm (tests/live/slurm_data). Prometheus is the
real server (Debian's package), as in test_live_prometheus_server.py.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prometheus_server import start_prometheus

from iosight.live import (
    LdmsJob,
    LiveConfig,
    LiveService,
    Recording,
    ReplayExporter,
    live_timeline,
    synthetic_ldms_stream,
)
from iosight.timeline import known_timeline
from tests_support import free_port, recent_facility

WIDTH = 300.0
RECORDED_SLURM = Path(__file__).parent / "slurm_data" / "squeue-22.05.8-debian12.json"
LANDED, STREAM_ONLY = 910001, 910002  # job ids: one whose log lands, one still running


@pytest.fixture(scope="module")
def facility(tmp_path_factory) -> Path:
    """Two days of SYNTHETIC facility jobs before today, their timeline and a ``live``
    write forecaster trained on it."""
    return recent_facility(tmp_path_factory.mktemp("e2e"), WIDTH)


def _stream(path: Path, now: float) -> dict[int, LdmsJob]:
    """SYNTHETIC messages of two jobs that ran in the last 20 minutes, as the connector
    publishes them, into the file an LDMS stream store appends to."""
    jobs = {LANDED: LdmsJob(LANDED, 1000, "/apps/ckpt", now - 20 * 60),
            STREAM_ONLY: LdmsJob(STREAM_ONLY, 1001, "/apps/analysis", now - 12 * 60)}  # fmt: skip
    lines = [*synthetic_ldms_stream(jobs[LANDED], 400, duration=10 * 60, seed=1),
             *synthetic_ldms_stream(jobs[STREAM_ONLY], 300, duration=8 * 60, seed=2)]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return jobs


def _land_log(logs: Path, job: LdmsJob, written: float) -> None:
    """The landed job's log, as a job-total table (Summit's columns) of one row."""
    row = {
        "jobid": [job.job_id],
        "uid": [job.uid],
        "exe": [job.exe],
        "nprocs": [4],
        "start_time": [job.start],
        "end_time": [job.start + 10 * 60],
        "total_POSIX_BYTES_READ": [0.0],
        "total_POSIX_BYTES_WRITTEN": [written],
    }
    pd.DataFrame(row).to_parquet(logs / "ckpt.parquet")


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=120) as answer:
        return answer.status, answer.read().decode()


def _holds_the_end(url: str, exporter: ReplayExporter, rec: Recording) -> bool:
    """Whether Prometheus holds the replay's last sample (its counter's final total)."""
    if not exporter.started:
        return False
    query = urllib.parse.urlencode(
        {"query": "lustre_write_bytes_total", "time": f"{exporter.clock_start + rec.duration:.3f}"}
    )
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as answer:
        got = json.loads(answer.read())["data"]["result"]
    return bool(got) and float(got[0]["value"][1]) == float(rec.write_bytes.sum())


def _holds_the_replay(wh, rec: Recording) -> pd.DataFrame:
    """``live_rates`` (bin_start, write_bytes), asserted to be the replay's four bins and,
    where the clock passed a 5-minute boundary since the replay ended (once at most in a
    test of seconds), a bin of no bytes: Prometheus still scrapes the final totals."""
    rates = wh.sql("select bin_start, write_bytes from live_rates order by 1")
    n = len(rec.write_bytes)
    np.testing.assert_allclose(rates["write_bytes"][:n], rec.write_bytes, rtol=1e-9)
    np.testing.assert_array_equal(np.diff(rates["bin_start"]), WIDTH)
    assert len(rates) - n <= 1 and (rates["write_bytes"][n:] == 0).all(), rates
    return rates


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """A real Prometheus that scraped a SYNTHETIC replay of four 5-minute bins ending
    about now: (its URL, the recording)."""
    rng = np.random.default_rng(7)
    read, write = np.round(10 ** rng.uniform(8, 10, 4)), np.round(10 ** rng.uniform(9, 12, 4))
    rec = Recording.from_bins(WIDTH * np.arange(4), read, write, WIDTH)  # replayed up to now
    exporter = ReplayExporter(rec, speed=600.0, resolution=60, port=free_port())
    root = tmp_path_factory.mktemp("prometheus")
    with exporter, start_prometheus(root, [f"127.0.0.1:{exporter.port}"], "25ms") as url:
        deadline = time.monotonic() + 30
        while not _holds_the_end(url, exporter, rec):
            assert time.monotonic() < deadline, "the replay did not reach Prometheus"
            time.sleep(0.05)
        yield url, rec


def test_live_feeds_drive_the_service_and_its_answers(facility, prometheus, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    url, rec = prometheus
    wh_path = shutil.copytree(facility, tmp_path / "wh")
    logs, replay = tmp_path / "logs", tmp_path / "slurm"
    logs.mkdir()
    replay.mkdir()
    shutil.copy(RECORDED_SLURM, replay / "001.json")
    now = time.time()
    jobs = _stream(tmp_path / "darshan.jsonl", now)
    config = LiveConfig.from_mapping({
        "warehouse": str(wh_path), "interval": 0.1,
        "logs": {"directory": "logs", "settle": 1, "workers": 1},
        "feeds": {"ldms": {"source": "darshan.jsonl"},
                  "prometheus": {"url": url, "delay": "0s", "backfill": "1h"},
                  "slurm": {"recorded": "slurm", "sacct": None}},
        "serve": {"port": 0},
    }, base=tmp_path)  # fmt: skip
    service = LiveService(config)
    served = service.start_server()
    try:
        service.step()
        wh = service.warehouse
        streamed = wh.sql("select jobid, sum(write_bytes) w from live_io group by jobid")
        streamed = dict(zip(streamed["jobid"], streamed["w"], strict=True))
        assert set(streamed) == {LANDED, STREAM_ONLY}
        _holds_the_replay(wh, rec)
        assert len(wh.sql("select * from sched_jobs")) == 10  # the recorded queue

        before = live_timeline(wh)
        _land_log(logs, jobs[LANDED], float(streamed[LANDED]))
        service.step()  # the log lands: its job's stream stops counting
        status = wh.read_state("live")["sources"]
        assert status["logs"]["rows"] == 1 and status["ldms"]["rows"] > 0
        rates = _holds_the_replay(wh, rec)  # a bin more if a 5-minute boundary passed
        assert status["slurm"]["rows"] == 10 and status["prometheus"]["rows"] == len(rates)

        after, logs_only = live_timeline(wh), known_timeline(wh, bin_width=WIDTH).to_pandas()
        grid = after.merge(logs_only, on="bin_start", how="left", suffixes=("", "_logs"))
        stream_only = wh.sql(f"select bin_start, sum(write_bytes) w from live_io where "
                             f"jobid = {STREAM_ONLY} and module = 'POSIX' group by 1")  # fmt: skip
        extra = grid["bin_start"].map(dict(zip(stream_only["bin_start"], stream_only["w"],
                                               strict=True))).fillna(0)  # fmt: skip
        want = grid["write_bytes_logs"].fillna(0) + extra
        np.testing.assert_allclose(grid["write_bytes"], want, rtol=1e-12)
        # the landed job counts once: by its log now, not by its stream as well
        assert after["write_bytes"].sum() == pytest.approx(before["write_bytes"].sum(), rel=1e-12)

        assert service.decisions.wait()  # computed in the background after the round
        status, body = _get(f"{served}/api/forecast")
        forecast = json.loads(body)["directions"]["write"]
        assert status == 200 and forecast["rates"] == "live_rates"
        assert forecast["as_of"] == float(rates["bin_start"].iloc[-1]) + WIDTH
        assert [b["lead"] for b in forecast["bins"]] == list(range(1, 25))
        status, body = _get(f"{served}/api/start?min_time=600&max_time=1800&policy=MDT"
                            "&direction=write")  # fmt: skip
        start = json.loads(body)
        assert status == 200 and start["start_at"] >= forecast["as_of"], start
        assert start["forecast"]["as_of"] == forecast["as_of"]  # on the forecast served
        status, body = _get(f"{served}/metrics")
        families = {f.name: f for f in text_string_to_metric_families(body)}
        assert status == 200 and families, body[:400]
        assert any("burst" in name for name in families), sorted(families)
    finally:
        service.close()
