"""The decisions served: /api/forecast, /api/start, /api/now and /metrics, over HTTP.

The warehouse is a copy of the serve tests' SYNTHETIC facility; the live rows written
here (``live_rates``, ``live_io``, ``forecasts``, the ``live`` state) are SYNTHETIC too,
in the tables' schemas of issue #28's design.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from iosight.bursts import load_forecaster
from iosight.schedule import choose_start, recommend_start
from iosight.serve import BackgroundServer, create_app
from iosight.warehouse import Warehouse

WIDTH = 300.0


def get_once(server, path: str):
    """Status, body and headers (a case-insensitive message) of one request."""
    try:
        with urllib.request.urlopen(server.url + path, timeout=60) as r:
            return r.status, r.read().decode(), r.headers
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), err.headers


def get(server, path: str) -> tuple[int, str]:
    """The answer, asked again while it is a 503 (the forecasts are computed in the
    background after the server starts or the warehouse changes), for 120 s at most."""
    until = time.monotonic() + 120
    while True:
        status, body, _ = get_once(server, path)
        if status != 503 or time.monotonic() > until:
            return status, body
        time.sleep(0.05)


def get_json(server, path: str) -> tuple[int, dict]:
    status, body = get(server, path)
    return status, json.loads(body)


@pytest.fixture(scope="module")
def plain(served_path):
    """A server over the facility as trained: logs only, no live source."""
    with BackgroundServer(create_app(served_path)) as srv:
        yield srv


def logs_end(wh: Warehouse) -> float:
    """End of the timeline's last bin that ended by the newest job's known-at time."""
    return float(wh.sql(
        "select max(bin_start + bin_width) t from timeline where bin_start + bin_width <= "
        "(select max(coalesce(known_at, end_time, start_time)) from jobs)")["t"].iloc[0]
    )  # fmt: skip


@pytest.fixture(scope="module")
def live_path(served_path, tmp_path_factory):
    """The facility with SYNTHETIC live rows after the logs' end: four rate bins (the last
    one partial), a stream of two jobs (POSIX and MPI-IO, the latter not counted), and the
    state iosight live publishes."""
    path = tmp_path_factory.mktemp("live") / "wh"
    shutil.copytree(served_path, path)
    wh = Warehouse(path)
    end = logs_end(wh)
    starts = [end + i * WIDTH for i in range(4)]
    wh.write_table("live_rates", pa.table({
        "bin_start": starts, "read_bytes": [3e9, 1e9, 2e9, 5e8],
        "write_bytes": [6e11, 1e9, 4e9, 1e9], "source": ["lustre"] * 4,
        "known_at": [s + WIDTH + 5 for s in starts[:3]] + [starts[3] + 100],
    }), mode="append")  # fmt: skip
    wh.write_table("live_io", pa.table({
        "jobid": pa.array([7, 7, 8], pa.int64()), "uid": pa.array([1, 1, 2], pa.int64()),
        "exe": ["a", "a", "b"], "module": ["POSIX", "MPI-IO", "POSIX"],
        "bin_start": [starts[1], starts[1], starts[2]],
        "read_bytes": pa.array([100, 999, 300], pa.int64()),
        "write_bytes": pa.array([200, 999, 400], pa.int64()),
        "reads": pa.array([1, 1, 1], pa.int64()), "writes": pa.array([1, 1, 1], pa.int64()),
        "known_at": [starts[2] + 10] * 3,
    }), mode="append")  # fmt: skip
    wh.write_state("live", {"sources": {
        "logs": {"rows": 3, "warnings": {"failed": 1}, "backlog": 4},
        "prometheus": {"rows": 4, "warnings": {"source_down": 2, "malformed": 1}},
    }})  # fmt: skip
    return path


@pytest.fixture(scope="module")
def live(live_path):
    with BackgroundServer(create_app(live_path)) as srv:
        yield srv


def test_forecast_is_the_saved_forecasters_next_bins(plain, served_path):
    status, doc = get_json(plain, "/api/forecast")
    assert status == 200
    write, read = doc["directions"]["write"], doc["directions"]["read"]
    assert "no saved lead-mode forecaster of read bursts" in read["error"]
    wh = Warehouse(served_path)
    fc = load_forecaster(wh, "bursts-write")
    expected = fc.predict_next(wh).table  # the CLI's path: the timeline's last bin
    assert write["model"] == {"name": "bursts-write", "feature_set": fc.metadata["feature_set"],
                              "information": "live"}  # fmt: skip
    assert (write["information"], write["rates"], write["source"]) == ("live", "logs", "computed")
    assert len(write["bins"]) == 24
    assert [b["bin_start"] for b in write["bins"]] == expected["bin_start"].tolist()
    assert [b["probability"] for b in write["bins"]] == pytest.approx(expected["probability"])
    assert [b["burst"] for b in write["bins"]] == expected["burst"].tolist()
    assert write["as_of"] == write["bins"][0]["bin_start"]  # lead 1 is the bin after as_of


def test_start_is_algorithm_1_on_the_served_forecast(plain, served_path):
    status, doc = get_json(plain, "/api/start?min_time=600&max_time=3000&policy=W4")
    assert status == 200
    rec = recommend_start(Warehouse(served_path), "bursts-write", 600, 3000, policy="W4")
    assert doc["start_at"] == rec.start_at and doc["delay_s"] == rec.choice.delay
    assert doc["run_time_s"] == rec.choice.run_time and doc["alpha"] == 0.4
    used = [b["burst"] for b in doc["forecast"]["bins"]]
    assert used == rec.forecast["burst"].tolist()
    query = "min_time=600&max_time=1800&pattern=110000&bin=300&policy=MRT"
    status, doc = get_json(plain, f"/api/start?{query}")
    choice = choose_start("110000", 600, 1800, bin_s=300, policy="MRT")
    assert (doc["delay_s"], doc["run_time_s"], doc["start_at"]) == (
        choice.delay,
        choice.run_time,
        None,
    )


@pytest.mark.parametrize("query", [
    "/api/start?max_time=10", "/api/start?min_time=x&max_time=10",
    "/api/start?min_time=-5&max_time=10", "/api/start?min_time=10&max_time=1e12",
    "/api/start?min_time=10&max_time=20&options=100000",
    "/api/start?min_time=10&max_time=20&policy=NOPE",
    "/api/start?min_time=10&max_time=20&pattern=01x", "/api/start?min_time=10&max_time=20&bin=1",
    "/api/start?min_time=10&max_time=20&direction=up",
    "/api/start?min_time=10&max_time=20&model=..%2Fetc",
    "/api/forecast?model=nope", "/api/forecast?model=" + "a" * 5000,
])  # fmt: skip
def test_a_bad_parameter_is_a_400_with_one_line(plain, query):
    status, body = get(plain, query)
    assert status == 400, body
    doc = json.loads(body)
    assert list(doc) == ["error"] and "\n" not in doc["error"] and doc["error"]
    assert "Traceback" not in body


def test_a_follow_forecast_is_served_as_stored(live_path):
    """Forecasts follow mode stored (rows written here, SYNTHETIC) win over computing."""
    path = live_path.parent / "follow"
    shutil.copytree(live_path, path)
    wh = Warehouse(path)
    rows = [{"as_of": t, "model": "bursts-write", "direction": "write", "lead": lead,
             "bin_start": t + (lead - 1) * WIDTH, "probability": p, "burst": p > 0.5,
             "severity": 2 if p > 0.5 else 0}
            for t, p in ((1000 * WIDTH, 0.9), (1001 * WIDTH, 0.25))
            for lead in range(1, 25)]  # fmt: skip
    wh.write_table("forecasts", pa.Table.from_pylist(rows), mode="append")
    with BackgroundServer(create_app(path)) as srv:
        _, doc = get_json(srv, "/api/forecast")
    write = doc["directions"]["write"]
    assert (write["source"], write["as_of"]) == ("follow", 1001 * WIDTH)
    assert {b["probability"] for b in write["bins"]} == {0.25}
    assert [b["lead"] for b in write["bins"]] == list(range(1, 25))


def test_live_rates_feed_a_live_forecaster_to_the_last_complete_bin(live, live_path):
    _, doc = get_json(live, "/api/forecast")
    write = doc["directions"]["write"]
    end = logs_end(Warehouse(live_path))
    assert write["rates"] == "live_rates" and write["information"] == "live"
    assert write["as_of"] == end + 3 * WIDTH  # the fourth rate bin is not over yet


def test_now_shows_the_live_bins_after_the_logs(live, live_path):
    status, doc = get_json(live, "/api/now")
    assert status == 200
    end = logs_end(Warehouse(live_path))
    traces = {t["name"]: t for t in doc["figure"]["data"]}
    rates = traces["write (live_rates)"]
    assert rates["x"] == [(end + i * WIDTH) * 1000 for i in range(4)]
    assert rates["y"] == pytest.approx([6e11 / WIDTH, 1e9 / WIDTH, 4e9 / WIDTH, 1e9 / WIDTH])
    assert rates["marker"]["symbol"] == ["circle"] * 3 + ["circle-open"]
    streamed = traces["read (live_io)"]  # MPI-IO is over POSIX: not counted again
    assert streamed["y"] == pytest.approx([100 / WIDTH, 300 / WIDTH])
    assert streamed["marker"]["symbol"] == ["circle", "circle-open"]
    assert "4 live bins" in doc["summary"] and "2 partial" in doc["summary"]


def test_metrics_parse_and_equal_the_warehouse(live, live_path):
    from prometheus_client.parser import text_string_to_metric_families

    get_json(live, "/api/forecast")  # computed in the background: /metrics shows it once done
    status, body = get(live, "/metrics")
    assert status == 200
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for f in text_string_to_metric_families(body) for s in f.samples}  # fmt: skip
    wh = Warehouse(live_path)
    end = logs_end(wh)
    last = wh.sql("select * from timeline where bin_start = ?", [end - WIDTH]).iloc[0]
    rate = "iosight_rate_bytes_per_second"
    assert got[(rate, (("direction", "write"), ("source", "logs")))] == last["write_bytes"] / WIDTH
    assert got[(rate, (("direction", "read"), ("source", "live_rates")))] == 2e9 / WIDTH
    assert got[("iosight_rate_bin_start_seconds", (("source", "live_rates"),))] == end + 2 * WIDTH
    _, forecast = get_json(live, "/api/forecast")
    bins = {b["lead"]: b["probability"] for b in forecast["directions"]["write"]["bins"]}
    for minutes in (5, 30, 60, 120):
        key = ("iosight_burst_probability", (("direction", "write"), ("information", "live"),
                                             ("lead_minutes", str(minutes)),
                                             ("model", "bursts-write")))  # fmt: skip
        assert got[key] == bins[minutes // 5]
    newest = float(wh.sql("select max(known_at) t from live_rates")["t"].iloc[0])
    lag = got[("iosight_ingest_lag_seconds", (("table", "live_rates"),))]
    assert 0 <= (time.time() - newest) - lag < 60  # the scrape came first
    failed = int(wh.sql("select count(*) n from ingest_errors")["n"].iloc[0])
    assert failed >= 1 and got[("iosight_ingest_errors", (("kind", "invalid"),))] == failed
    assert got[("iosight_ingest_backlog_files", ())] == 4
    warned = (("kind", "source_down"), ("source", "prometheus"))
    assert got[("iosight_source_warnings", warned)] == 2
    assert not any(math.isnan(v) for v in got.values())


def test_metrics_are_read_from_the_warehouse_at_each_scrape(live_path):
    """A scrape after the kept answer expired sees rows committed meanwhile."""
    from prometheus_client.parser import text_string_to_metric_families

    from iosight.serve._decisions import Decisions
    from iosight.serve._metrics import WarehouseCollector, metrics_text
    from iosight.serve._readonly import ServedWarehouse

    path = live_path.parent / "scrapes"
    shutil.copytree(live_path, path)
    clock = [1e9]
    collector = WarehouseCollector(Decisions(ServedWarehouse(path)), ttl=5, clock=lambda: clock[0])

    def backlog() -> float:
        text = metrics_text(collector).decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        return families["iosight_ingest_backlog_files"].samples[0].value

    assert backlog() == 4
    Warehouse(path).write_state("live", {"sources": {"logs": {"backlog": 9}}})
    clock[0] += 1
    assert backlog() == 4  # kept for ttl seconds
    clock[0] += 5
    assert backlog() == 9


def test_api_answers_only_to_served_hosts(plain):
    req = urllib.request.Request(plain.url + "/metrics", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)
    assert err.value.code == 400
    assert "script-src 'self'" in err.value.headers["content-security-policy"]


@pytest.fixture(scope="module")
def logs_path(served_path, tmp_path_factory):
    """The facility with a ``logs`` forecaster of read bursts (from what the landed logs
    held at each bin), as follow mode feeds."""
    from iosight.bursts import train_bursts

    path = tmp_path_factory.mktemp("logs") / "wh"
    shutil.copytree(served_path, path)
    train_bursts(Warehouse(path), directions="read", models="tree", feature_sets=3,
                 modes="lead", horizons=[5], search_iter=0, cv_splits=2, seed=0,
                 information="logs", workers=1)  # fmt: skip
    return path


def test_a_logs_forecaster_forecasts_as_of_the_datas_last_boundary(logs_path):
    """Computed on the served (locked-down) warehouse, it equals the forecaster's own
    prediction at the last bin that ended before the newest job became known (here the
    real logs ingested by the fixture arrived today: the timeline's last bin)."""
    with BackgroundServer(create_app(logs_path)) as srv:
        status, doc = get_json(srv, "/api/forecast")
    assert status == 200
    read = doc["directions"]["read"]
    assert read["model"]["name"] == "bursts-read-logs"
    assert (read["information"], read["source"]) == ("logs", "computed")
    wh = Warehouse(logs_path)
    clock = float(wh.sql("select max(coalesce(known_at, end_time)) t from jobs")["t"].iloc[0])
    end = float(wh.sql("select max(bin_start + bin_width) t from timeline")["t"].iloc[0])
    boundary = min(math.floor(clock / WIDTH) * WIDTH, end)  # the timeline's end at most
    assert read["as_of"] == boundary
    expected = load_forecaster(wh, "bursts-read-logs").predict_next(wh, boundary - WIDTH).table
    assert [b["probability"] for b in read["bins"]] == pytest.approx(expected["probability"])
    assert [b["bin_start"] for b in read["bins"]] == expected["bin_start"].tolist()


def test_a_direction_prometheus_had_no_sample_for_stays_unknown(live_path):
    """The Prometheus feed writes NaN for a direction without a sample in a bin: the
    forecast still answers, and /metrics gives no rate rather than NaN."""
    from prometheus_client.parser import text_string_to_metric_families

    path = live_path.parent / "nan"
    shutil.copytree(live_path, path)
    wh = Warehouse(path)
    after = float(wh.sql("select max(bin_start) t from live_rates")["t"].iloc[0]) + WIDTH
    wh.write_table("live_rates", pa.table({
        "bin_start": [after], "read_bytes": [float("nan")], "write_bytes": [7e9],
        "source": ["lustre"], "known_at": [after + WIDTH + 1]}), mode="append")  # fmt: skip
    with BackgroundServer(create_app(path)) as srv:
        status, doc = get_json(srv, "/api/forecast")
        _, body = get(srv, "/metrics")
    assert status == 200 and doc["directions"]["write"]["as_of"] == after + WIDTH
    rates = {tuple(sorted(s.labels.items())): s.value
             for f in text_string_to_metric_families(body) for s in f.samples
             if s.name == "iosight_rate_bytes_per_second"}  # fmt: skip
    assert rates[(("direction", "write"), ("source", "live_rates"))] == 7e9 / WIDTH
    assert (("direction", "read"), ("source", "live_rates")) not in rates


EXTRA = 30  # jobs only Slurm knows of (no log yet)


@pytest.fixture(scope="module")
def slurm_path(served_path, tmp_path_factory):
    """The facility with one Slurm snapshot (the recorded 22.05 squeue document's running
    job as the template, SYNTHETIC jobs) at the end of the timeline's last bin T: every
    job the logs show running at T, as Slurm shows it, and ``EXTRA`` 128-task jobs of the
    commonest application that have no log."""
    from iosight.bursts import load_jobs
    from iosight.live import SlurmFeed, SlurmFeedOptions
    from iosight.timeline import load_timeline

    root = tmp_path_factory.mktemp("slurm")
    shutil.copytree(served_path, root / "wh")
    wh = Warehouse(root / "wh")
    at = float(load_timeline(wh)["bin_start"].iloc[-1]) + WIDTH
    jobs = load_jobs(wh)
    run = jobs[(jobs["start_time"] < at) & (jobs["end_time"] > at)]
    common = jobs["exe"].mode()[0]
    doc = json.loads(SLURM_DOC.read_text())
    template = next(j for j in doc["jobs"] if j["job_state"] == "RUNNING")

    def job(jobid, name, tasks, start):
        return {**template, "job_id": int(jobid), "name": name, "tasks": int(tasks),
                "start_time": float(start), "time_limit": 10**6}  # fmt: skip

    doc["jobs"] = [job(r.jobid, r.exe, r.nprocs, r.start_time) for r in run.itertuples()]
    doc["jobs"] += [job(10**12 + i, common, 128, at - 600) for i in range(EXTRA)]
    (root / "squeue.json").write_text(json.dumps(doc))
    SlurmFeed(SlurmFeedOptions(recorded=root / "squeue.json")).poll(wh, now=at)
    return root / "wh"


SLURM_DOC = Path(__file__).parents[1] / "live" / "slurm_data" / "squeue-22.05.8-debian12.json"


def test_a_set_4_forecast_reads_the_running_jobs_slurm_saw(slurm_path):
    """/api/forecast's feature set 4 takes Slurm's running jobs: its job state differs from
    the logs' alone only at the snapshot's bin, by the jobs without a log, and the
    forecast served is the forecaster's on that state (this tree's probabilities happen
    to be the same on the logs' state alone)."""
    from iosight.bursts import job_state, load_jobs, scheduler_jobs
    from iosight.timeline import load_timeline

    with BackgroundServer(create_app(slurm_path)) as srv:
        status, doc = get_json(srv, "/api/forecast")
    assert status == 200
    write = doc["directions"]["write"]
    wh = Warehouse(slurm_path)
    fc = load_forecaster(wh, write["model"]["name"])
    assert fc.metadata["feature_set"] == 4
    timeline, logs = load_timeline(wh), load_jobs(wh)
    live = scheduler_jobs(wh, logs)
    starts = timeline["bin_start"].to_numpy()
    a, b = (job_state(j, starts, WIDTH, "write") for j in (logs, live))
    assert (b.running - a.running).tolist() == [0.0] * (len(starts) - 1) + [float(EXTRA)]
    np.testing.assert_array_equal(a.expected[:-1], b.expected[:-1])
    assert b.expected[-1, 0] > a.expected[-1, 0]
    expected = fc.predict(timeline, jobs=live).table
    assert write["as_of"] == starts[-1] + WIDTH
    assert [x["probability"] for x in write["bins"]] == pytest.approx(expected["probability"])


def stream(wh: Warehouse, rows: list[tuple]) -> None:
    """Append SYNTHETIC ``live_io`` rows: (jobid, module, bin_start, write_bytes, known_at)."""
    jobid, module, start, written, known = (list(c) for c in zip(*rows, strict=True))
    n = len(rows)
    wh.write_table("live_io", pa.table({
        "jobid": pa.array(jobid, pa.int64()), "uid": pa.array([1] * n, pa.int64()),
        "exe": ["a"] * n, "module": module, "bin_start": [float(s) for s in start],
        "read_bytes": pa.array([0] * n, pa.int64()), "write_bytes": pa.array(written, pa.int64()),
        "reads": pa.array([0] * n, pa.int64()), "writes": pa.array([1] * n, pa.int64()),
        "known_at": [float(k) for k in known],
    }), mode="append")  # fmt: skip


@pytest.fixture()
def stream_path(served_path, tmp_path):
    """The facility with no live source yet: its ``live`` forecaster forecasts from the
    stored timeline until a stream row arrives."""
    return Path(shutil.copytree(served_path, tmp_path / "wh"))


def until_as_of(srv, as_of: float) -> dict:
    """/api/forecast's write direction once it is as of ``as_of`` (computed in the
    background after the warehouse changed), 120 s at most."""
    until = time.monotonic() + 120
    while True:
        status, doc = get_json(srv, "/api/forecast")
        write = doc["directions"]["write"]
        if write.get("as_of") == as_of or time.monotonic() > until:
            return write
        time.sleep(0.05)


def test_an_ldms_message_moves_the_live_forecast(stream_path):
    """Without server-side rates, a ``live`` forecaster's system rate is the live
    timeline: the logs plus the stream of the jobs with no log. A message for the bin
    after the logs makes that bin the forecast's last, its bytes the model's current
    bytes (POSIX only: MPI-IO runs over it); the next message moves it again."""
    from iosight.bursts import load_jobs, scheduler_jobs
    from iosight.live import stream_timeline
    from iosight.timeline import load_timeline

    wh = Warehouse(stream_path)
    end, fc = logs_end(wh), load_forecaster(wh, "bursts-write")
    jobs = scheduler_jobs(wh, load_jobs(wh))  # feature set 4's, as served
    with BackgroundServer(create_app(stream_path)) as srv:
        _, doc = get_json(srv, "/api/forecast")
        assert doc["directions"]["write"]["rates"] == "logs" and doc["computed_at"] > 0
        stream(wh, [(9_000_001, "POSIX", end, 5_000_000_000, end + WIDTH + 5),
                    (9_000_001, "MPI-IO", end, 7_000_000_000, end + WIDTH + 5)])  # fmt: skip
        first = until_as_of(srv, end + WIDTH)
        frame, complete = stream_timeline(wh, WIDTH, logs=load_timeline(wh))
        assert complete == end and first["rates"] == "live_io"
        used = frame[frame["bin_start"] <= complete]
        assert fc.features(used, jobs)[-1, 0] == 5e9  # the current bin's write bytes
        expected = fc.predict(frame, complete, jobs=jobs).table
        assert [b["probability"] for b in first["bins"]] == pytest.approx(expected["probability"])
        stream(wh, [(9_000_001, "POSIX", end + WIDTH, 1_000, end + 2 * WIDTH + 1)])
        second = until_as_of(srv, end + 2 * WIDTH)
    frame, complete = stream_timeline(wh, WIDTH, logs=load_timeline(wh))
    assert complete == end + WIDTH and second["rates"] == "live_io"
    assert fc.features(frame, jobs)[-2:, 0].tolist() == [5e9, 1e3]


def test_nothing_known_after_t_changes_the_stream_forecast_at_t(stream_path):
    """The live timeline as of t (a log, or a message, known after t) is what was known
    at t: the same frame and last complete bin before and after the later rows arrive."""
    from iosight.live import stream_timeline

    wh = Warehouse(stream_path)
    end = logs_end(wh)
    stream(wh, [(9_000_002, "POSIX", end, 4_000, end + WIDTH + 5)])
    t = end + WIDTH + 10
    before, at_t = stream_timeline(wh, WIDTH, as_of=t)
    stream(wh, [(9_000_002, "POSIX", end, 6_000, t + 1),
                (9_000_003, "POSIX", end + WIDTH, 8_000, end + 2 * WIDTH + 5)])  # fmt: skip
    after, still = stream_timeline(wh, WIDTH, as_of=t)
    assert still == at_t == end
    pd.testing.assert_frame_equal(after, before)
    later, last = stream_timeline(wh, WIDTH, as_of=end + 2 * WIDTH + 5)
    assert last == end + WIDTH  # the later rows do count once known
    assert later.set_index("bin_start")["write_bytes"][end] == 10_000


def test_a_job_whose_log_landed_counts_once_in_the_forecast(stream_path):
    """A job's stream rows stop counting once its log is known: the bin keeps the logs'
    bytes, not the logs' plus the stream's."""
    from iosight.bursts import load_jobs
    from iosight.live import stream_timeline
    from iosight.timeline import load_timeline

    wh = Warehouse(stream_path)
    timeline = load_timeline(wh)
    jobs = load_jobs(wh)
    job = jobs[(jobs["write_bytes"] > 0) & (jobs["end_time"] - jobs["start_time"] > 900)
               & (jobs["start_time"] > timeline["bin_start"].iloc[0])].iloc[0]  # fmt: skip
    b = math.floor((float(job["start_time"]) + 600) / WIDTH) * WIDTH
    end = logs_end(wh)
    stream(wh, [(int(job["jobid"]), "POSIX", b, 7 * 10**12, float(job["end_time"]) - 1),
                (9_000_004, "POSIX", end, 1, end + WIDTH + 1)])  # fmt: skip
    frame, complete = stream_timeline(wh, WIDTH, logs=timeline)
    assert complete == end
    got = frame.set_index("bin_start")["write_bytes"]
    assert got[b] == timeline.set_index("bin_start")["write_bytes"][b]
    assert got[end] == 1


def test_a_request_never_computes_the_forecast(stream_path, monkeypatch):
    """The forecasts are computed on the server's own thread: while the first is being
    computed /api/forecast and /api/start answer 503 with Retry-After and a JSON reason
    (and /metrics leaves the probabilities out); once the warehouse changes, the last
    forecast is served, with its as-of time, until the new one is computed."""
    import threading

    from iosight.serve import _decisions

    gate, real = threading.Event(), _decisions._make_forecast

    def held(wh, name, kept):
        assert gate.wait(120), "the test never opened the gate"
        return real(wh, name, kept)

    monkeypatch.setattr(_decisions, "_make_forecast", held)
    wh = Warehouse(stream_path)
    end = logs_end(wh)
    with BackgroundServer(create_app(stream_path)) as srv:
        for path in ("/api/forecast", "/api/start?min_time=600&max_time=900&policy=W3"):
            status, body, headers = get_once(srv, path)
            assert status == 503 and headers["Retry-After"] == "2", (path, body)
            doc = json.loads(body)
            assert "being computed" in doc["error"] and doc["retry_after"] == 2
        status, body, _ = get_once(srv, "/metrics")
        assert status == 200 and "iosight_burst_probability{" not in body
        gate.set()
        status, doc = get_json(srv, "/api/forecast")
        old = doc["directions"]["write"]
        assert status == 200 and old["rates"] == "logs"
        gate.clear()
        stream(wh, [(9_000_005, "POSIX", end, 10**9, end + WIDTH + 1)])
        status, body, _ = get_once(srv, "/api/forecast")
        assert status == 200 and json.loads(body)["directions"]["write"] == old  # the last one
        gate.set()
        assert until_as_of(srv, end + WIDTH)["rates"] == "live_io"


def test_a_failed_computation_is_one_line_and_tried_again(stream_path, monkeypatch):
    """A bug in the computation is logged with its traceback on the server's side; the
    answer is one line per direction, and the next request computes again."""
    from iosight.serve import _decisions

    real = _decisions._make_forecast
    monkeypatch.setattr(_decisions, "_make_forecast", lambda wh, name, kept: 1 / 0)
    with BackgroundServer(create_app(stream_path)) as srv:
        status, doc = get_json(srv, "/api/forecast")
        assert status == 200
        assert doc["directions"]["write"]["error"] == (
            "computing the forecast failed (ZeroDivisionError); the server's log has the details"
        )
        monkeypatch.setattr(_decisions, "_make_forecast", real)
        until = time.monotonic() + 120
        while "error" in (write := get_json(srv, "/api/forecast")[1]["directions"]["write"]):
            assert time.monotonic() < until, write
            time.sleep(0.05)
    assert write["model"]["name"] == "bursts-write"


def test_a_stream_row_computes_again_only_the_forecasts_that_read_it(logs_path, tmp_path,
                                                                     monkeypatch):  # fmt: skip
    """Each forecast is computed again only when the files of the tables it reads or its
    model changed: a stream row moves the ``live`` forecaster's forecast (its timeline and
    jobs kept from before), not the ``logs`` one's; so does a Slurm snapshot (feature set
    4 reads it, the ``logs`` one has set 3); a commit to ``jobs`` moves both. Each served
    forecast equals one computed from scratch on the warehouse as it is."""
    from iosight.live import SlurmFeed, SlurmFeedOptions
    from iosight.serve import Decisions, ServedWarehouse, _decisions

    path = Path(shutil.copytree(logs_path, tmp_path / "wh"))
    made, real = [], _decisions._make_forecast

    def counted(wh, name, kept):
        made.append(name)
        return real(wh, name, kept)

    def served(decisions):
        assert decisions.wait(120)
        return {d: decisions.forecast(d) for d in ("read", "write")}

    def assert_from_scratch(got):
        fresh = served(Decisions(ServedWarehouse(path)))
        for d, f in got.items():
            assert (f.model, f.rates, f.as_of) == (fresh[d].model, fresh[d].rates, fresh[d].as_of)
            pd.testing.assert_frame_equal(f.bins, fresh[d].bins)

    monkeypatch.setattr(_decisions, "_make_forecast", counted)
    decisions = Decisions(ServedWarehouse(path))
    first = served(decisions)
    assert sorted(made) == ["bursts-read-logs", "bursts-write"]
    wh = Warehouse(path)
    end = logs_end(wh)
    stream(wh, [(9_000_006, "POSIX", end, 10**9, end + WIDTH + 1)])
    second = served(decisions)
    assert made[2:] == ["bursts-write"]  # the logs forecaster reads no stream
    assert second["read"] is first["read"] and second["write"].rates == "live_io"
    monkeypatch.setattr(_decisions, "_make_forecast", real)
    assert_from_scratch(second)
    monkeypatch.setattr(_decisions, "_make_forecast", counted)
    SlurmFeed(SlurmFeedOptions(recorded=SLURM_DOC)).poll(wh, now=end + WIDTH + 2)
    after_slurm = served(decisions)
    assert made[3:] == ["bursts-write"] and after_slurm["read"] is first["read"]
    monkeypatch.setattr(_decisions, "_make_forecast", real)
    assert_from_scratch(after_slurm)
    monkeypatch.setattr(_decisions, "_make_forecast", counted)
    wh.write_table("jobs", wh.table("jobs"), mode="replace")  # new files, the same rows
    third = served(decisions)
    assert sorted(made[4:]) == ["bursts-read-logs", "bursts-write"]
    assert third["read"] is not first["read"]
    monkeypatch.setattr(_decisions, "_make_forecast", real)
    assert_from_scratch(third)


def test_the_facility_form_answers_from_the_served_forecast(stream_path, monkeypatch):
    """The Facility page's recommended start is Algorithm 1 on the forecast the server
    computed in the background, as /api/start's: while none is computed the page answers
    503 with Retry-After and says to retry (it computes nothing itself); then it shows
    the served forecast's bins and /api/start's start."""
    import threading

    from iosight.serve import _decisions

    gate, real = threading.Event(), _decisions._make_forecast

    def held(wh, name, kept):
        assert gate.wait(120), "the test never opened the gate"
        return real(wh, name, kept)

    monkeypatch.setattr(_decisions, "_make_forecast", held)
    ask = "min_time=600&max_time=1800&policy=W3"
    with BackgroundServer(create_app(stream_path)) as srv:
        status, body, headers = get_once(srv, f"/facility?model=bursts-write&{ask}")
        assert status == 503 and headers["Retry-After"] == "2"
        assert 'id="rec-wait"' in body and "being computed" in body
        assert 'id="recommendation"' not in body and 'id="fig-facility"' in body
        gate.set()
        status, body = get(srv, f"/facility?model=bursts-write&{ask}")
        _, start = get_json(srv, f"/api/start?{ask}")
    assert status == 200 and 'id="recommendation"' in body and 'id="rec-wait"' not in body
    rows = re.findall(r"<tr( class=\"chosen\")?><td>(\d+)</td>", body)
    assert [int(lead) for _, lead in rows] == [b["lead"] for b in start["forecast"]["bins"]]
    (chosen,) = [int(lead) for mark, lead in rows if mark]
    assert chosen == start["forecast"]["bins"][start["option"]]["lead"]
    for b in start["forecast"]["bins"]:
        assert f"<td>{b['lead']}</td>" in body
