"""Forecasts made while following (``ingest --follow --forecast``): a replay of a Summit
slice followed batch by batch forecasts at every bin boundary what the batch ``logs``
evaluation predicts for those bins from the complete warehouse; feature set 4 reads the
running jobs from Slurm's snapshots (recorded ``squeue --json``) polled as the replay
goes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import (
    FORECASTS_TABLE,
    FollowForecasts,
    fit_model,
    load_jobs,
    load_known,
    scheduler_jobs,
    train_forecaster,
)
from iosight.bursts._follow import FORECAST_COLUMNS
from iosight.live import SlurmFeed, SlurmFeedOptions
from iosight.timeline import build_timeline, load_timeline
from iosight.warehouse import Warehouse, ingest, replay
from tests_support import follow_until, shared_path

WIDTH = 300.0
DAY = 86400.0
SQUEUE = Path(__file__).parents[1] / "live" / "slurm_data" / "squeue-22.05.8-debian12.json"


def _summit_week(path) -> pd.DataFrame:
    """A week of Summit's 2021 App10 and App8 job totals (real), each job known a
    SYNTHETIC 0-3 h after it ended (as a log copied in late would be), in a
    ``known_at`` column, so that known-at and end times differ."""
    root = shared_path("datasets", "summit_darshan_total_2021", "darshan_total")
    df = pd.concat([pd.read_parquet(root / f"App{a}.parquet") for a in (10, 8)])
    t0 = pd.Timestamp("2021-03-01", tz="UTC").timestamp()
    df = df[(df["start_time"] >= t0) & (df["start_time"] < t0 + 7 * DAY)]
    rng = np.random.default_rng(3)
    df = df.assign(known_at=df["end_time"] + rng.uniform(0, 3 * 3600, len(df)).round())
    df.to_parquet(path)
    return df


def _squeue(jobs: pd.DataFrame, folder: Path) -> list[float]:
    """SYNTHETIC Slurm snapshots of the week: every 2 hours (7.5 min past) from day 1.5 to
    day 5.5, ``squeue --json`` of Slurm 22.05 (the recorded job of SQUEUE as template)
    listing the jobs running then: Summit's job id, application (``exe``) as the job
    name, user, tasks; the time limit the run rounded up plus 30 minutes. Files named by
    their time, read in name order by a recorded feed; returns the times."""
    doc = json.loads(SQUEUE.read_text())
    template = doc["jobs"][0]
    t0 = pd.Timestamp("2021-03-01", tz="UTC").timestamp()
    times = [t0 + 1.5 * DAY + 450.0 + 7200.0 * h for h in range(48)]
    folder.mkdir()
    for t in times:
        run = jobs[(jobs["start_time"] <= t) & (jobs["end_time"] > t)]
        doc["jobs"] = [
            {**template, "job_id": int(j.jobid), "name": j.exe, "user_name": str(j.uid),
             "tasks": int(j.nprocs), "job_state": "RUNNING", "start_time": int(j.start_time),
             "end_time": 0, "time_limit": math.ceil((j.end_time - j.start_time) / 60) + 30}
            for j in run.itertuples()
        ]  # fmt: skip
        (folder / f"{t:.0f}.json").write_text(json.dumps(doc))
    return times


def _poll(feed: SlurmFeed, wh: Warehouse, times: list[float], until: float) -> None:
    """Take the recorded snapshots of ``times`` not yet taken up to ``until``, each at
    its time."""
    from iosight.bursts import last_snapshot

    last = last_snapshot(wh)
    for t in times:
        if (last is None or t > last[0]) and t <= until:
            feed.poll(wh, now=t)


def _follow_until(logs, wh: Warehouse, forecasts: FollowForecasts, files: int, slurm=None):
    """Follow ``logs`` into ``wh`` in ingests of at most 80 files until ``files`` sources
    came in; after each, take the Slurm snapshots (``slurm``: feed and times) up to the
    data's clock, then forecast. The boundaries each forecast passed."""
    from iosight.warehouse import KNOWN_AT

    passed = []

    def after(batch) -> None:
        if slurm is not None:
            clock = wh.connect().execute(f"select max({KNOWN_AT}) from jobs").fetchall()[0][0]
            _poll(*slurm[:1], wh, slurm[1], clock)
        passed.append(forecasts.update())

    follow_until(logs, wh, files, 60, after, interval=0.05, settle=1, batch_size=80)
    return passed


def _logreg_on_all(fc, X: np.ndarray, x: np.ndarray) -> None:
    """On a week persistence wins every lead, and it reads only the current bin: a
    logistic regression on every feature (the EMAs, set 4's state too) makes the test
    see them all."""
    for lead in fc.binary:
        fc.binary[lead] = fit_model("logreg", X[:-lead], x[lead:] > np.quantile(x, 0.97), params={})


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The week ingested at once (the complete warehouse), its timeline, its known-at
    sums and a ``logs`` forecaster of leads 1-3 trained on it."""
    tmp = tmp_path_factory.mktemp("follow-forecasts")
    jobs = _summit_week(tmp / "week.parquet")
    wh = Warehouse(tmp / "recorded", create=True)
    assert ingest([tmp / "week.parquet"], wh, workers=1).ok
    build_timeline(wh, bin_width=WIDTH)
    known = load_known(wh)
    tl = load_timeline(wh)
    fc = train_forecaster(tl, direction="write", model="logreg", max_lead=3,
                          information="logs", known=known, workers=1, name="w")  # fmt: skip
    _logreg_on_all(fc, fc.features(tl, known=known), tl["write_bytes"].to_numpy())
    return wh, jobs, known, fc


@pytest.fixture(scope="module")
def slurm(recorded, tmp_path_factory):
    """The week's Slurm snapshots (their folder, times, and a warehouse holding them all:
    the batch side's scheduler view), that view as follow sees it (the logs never show a
    job running) and a set-4 ``logs`` forecaster of leads 1-3 trained on it."""
    rec, jobs, known, _ = recorded
    tmp = tmp_path_factory.mktemp("slurm-view")
    times = _squeue(jobs, tmp / "squeue")
    view = Warehouse(tmp / "view", create=True)
    _poll(SlurmFeed(SlurmFeedOptions(recorded=tmp / "squeue")), view, times, math.inf)
    sched = scheduler_jobs(view, load_jobs(rec), logs_until=-math.inf)
    tl = load_timeline(rec)
    fc = train_forecaster(tl, direction="write", model="logreg", max_lead=3, feature_set=4,
                          information="logs", known=known, jobs=sched, n_jobs=1,
                          name="w4")  # fmt: skip
    _logreg_on_all(fc, fc.features(tl, sched, known), tl["write_bytes"].to_numpy())
    return tmp / "squeue", times, view, sched, fc


def _followed(recorded, slurm, tmp_path) -> Warehouse:
    """The recorded week replayed in two parts of its known-at times, each followed by
    a new follow (a restart: forecasts resume from the stored ones), Slurm polled in
    step with the data's clock."""
    rec, jobs, _, fc = recorded
    squeue, times, _, _, fc4 = slurm
    wh = Warehouse(tmp_path / "followed", create=True)
    fc.save(wh)
    fc4.save(wh)
    out = tmp_path / "replayed"
    lo, mid, hi = jobs["known_at"].quantile([0, 0.7, 1.0])
    passed, files = [], 0
    for since, until in ((lo, mid), (mid, hi + 1)):
        files += replay(rec, out, speed=float("inf"), since=since, until=until).tables
        feed = SlurmFeed(SlurmFeedOptions(recorded=squeue))
        forecasts = FollowForecasts(wh, ["w", "w4"])  # sees all again
        passed += _follow_until(out, wh, forecasts, files, (feed, times))
    assert len(wh.jobs()) == len(rec.jobs())
    assert sum(p > 0 for p in passed) >= 3  # forecasts continued, and resumed
    assert len(wh.sql("select * from sched_snapshots")) == len(times)
    return wh


def _evaluation(recorded, known, fc=None, jobs=None) -> pd.DataFrame:
    """The batch evaluation's predictions at every bin of the complete warehouse (rows
    ``known`` at the end of each; set 4: the scheduler's view ``jobs``), as follow's
    columns."""
    rec, _, _, fc3 = recorded
    fc = fc or fc3
    tl = load_timeline(rec)
    starts = tl["bin_start"].to_numpy(np.float64)
    out = fc.forecast(fc.features(tl, jobs, known), starts, WIDTH)
    out = out.assign(as_of=out.pop("at") + WIDTH)
    return out.sort_values(["as_of", "lead"], ignore_index=True)


def _same(got: pd.DataFrame, want: pd.DataFrame) -> pd.DataFrame:
    """Follow's forecasts ``got`` where the batch's ``want`` has the bin, checked equal."""
    mine = got[got["as_of"] <= want["as_of"].max()].reset_index(drop=True)
    assert len(mine) == len(want) > 1500
    np.testing.assert_allclose(mine["probability"], want["probability"], rtol=1e-9, atol=0)
    for c in ("as_of", "lead", "bin_start", "burst", "severity"):
        assert np.array_equal(mine[c].to_numpy(), want[c].to_numpy()), c
    return mine


@pytest.fixture(scope="module")
def follow_wh(recorded, slurm, tmp_path_factory) -> Warehouse:
    """The followed warehouse: the week's jobs, its timeline, Slurm's snapshots, both
    forecasters and their forecasts; its timeline brought up to date (the test's follow
    only forecasts)."""
    wh = _followed(recorded, slurm, tmp_path_factory.mktemp("followed"))
    build_timeline(wh, bin_width=WIDTH)
    return wh


@pytest.fixture(scope="module")
def followed(follow_wh) -> pd.DataFrame:
    """The forecasts follow stored (both models), by model, boundary and lead."""
    got = follow_wh.sql(f"select * from {FORECASTS_TABLE}")
    assert list(got.columns) == list(FORECAST_COLUMNS)
    return got.sort_values(["model", "as_of", "lead"], ignore_index=True)


def test_follow_forecasts_every_boundary_as_the_batch_evaluation(recorded, followed):
    rec, jobs, known, fc = recorded
    got = followed[followed["model"] == "w"].reset_index(drop=True)
    assert set(got["direction"]) == {"write"}
    # every boundary from the end of the bin the first job became known in to the last
    # passed, each once per lead (nothing lost or repeated at the restart)
    first = np.floor(jobs["known_at"].min() / WIDTH) * WIDTH + WIDTH
    last = np.floor(jobs["known_at"].max() / WIDTH) * WIDTH
    for _, as_of in got.groupby("lead")["as_of"]:
        assert np.array_equal(as_of.to_numpy(), np.arange(first, last + 1, WIDTH))
    # the batch evaluation on the complete warehouse, where both have the bin
    want = _evaluation(recorded, known)
    want = want[want["as_of"].between(first, last)].reset_index(drop=True)
    mine = _same(got, want)
    # and the forecaster's own predict at a few of those boundaries
    tl = load_timeline(rec)
    for at in mine["as_of"].iloc[:: len(mine) // 7]:
        p = fc.predict(tl, at=at - WIDTH, known=known).table
        row = mine[mine["as_of"] == at]
        np.testing.assert_allclose(row["probability"], p["probability"], rtol=1e-9)
    # the comparison sees a peek: had each row been known at the end of its own bin (a
    # job's bytes known as it ran), the forecasts would differ
    peeked = _evaluation(recorded, known.assign(known_start=known["bin_start"]))
    peeked = peeked[peeked["as_of"].between(first, last)]
    assert not np.allclose(peeked["probability"], want["probability"])


def test_set_4_follow_reads_slurms_running_jobs_as_the_batch_evaluation(recorded, slurm, followed):
    """A set-4 ``logs`` forecaster followed with Slurm polled in step forecasts at every
    boundary what the batch evaluation gives with the same scheduler view (Slurm's
    snapshots; the logs showing no job running). The view matters: the running jobs come
    from Slurm in the compared bins, and counting each job from its start rather than
    from the snapshot that showed it, or the logs' running jobs (the batch regime's
    default view) change the forecasts."""
    rec, jobs, known, _ = recorded
    _, times, view, sched, fc = slurm
    got = followed[followed["model"] == "w4"].reset_index(drop=True)
    first = np.floor(jobs["known_at"].min() / WIDTH) * WIDTH + WIDTH
    last = np.floor(jobs["known_at"].max() / WIDTH) * WIDTH
    assert np.array_equal(np.unique(got["as_of"]), np.arange(first, last + 1, WIDTH))
    want = _evaluation(recorded, known, fc, sched)
    want = want[want["as_of"].between(first, last)].reset_index(drop=True)
    _same(got, want)
    tl = load_timeline(rec)
    X = pd.DataFrame(fc.features(tl, sched, known), columns=fc.metadata["features"])
    ends = (tl["bin_start"] + WIDTH).to_numpy()
    assert (X["running_jobs"][(ends >= times[0]) & (ends <= times[-1])] > 0).mean() > 0.5
    assert (X["running_jobs"][ends < times[0]] == 0).all()  # none from the logs, as follow saw
    slurm_rows = np.isinf(sched["known_at"])
    early = sched.assign(running_from=np.where(slurm_rows, sched["start_time"],
                                               sched["running_from"]))  # fmt: skip
    for other in (early, scheduler_jobs(view, load_jobs(rec))):
        peek = _evaluation(recorded, known, fc, other)
        peek = peek[peek["as_of"].between(first, last)]
        assert not np.allclose(peek["probability"], want["probability"])


def test_predict_next_takes_the_running_jobs_slurm_saw_and_says_so(follow_wh, slurm, tmp_path):
    """``predict_next`` (and ``iosight bursts predict``) of a set-4 forecaster reads
    Slurm's running jobs where the warehouse has snapshots (``auto``, ``slurm``), the
    logs' otherwise or when asked (``logs``), and says which in ``running_jobs``; Slurm
    asked for where there is none, or an unknown source, is one line."""
    from typer.testing import CliRunner

    from iosight.cli import app

    _, times, _, _, fc = slurm
    tl, known = load_timeline(follow_wh), load_known(follow_wh)
    views = {"slurm": scheduler_jobs(follow_wh, load_jobs(follow_wh)), "logs": load_jobs(follow_wh)}
    differ = 0
    for at in times[10:40:10]:
        at = np.floor(at / WIDTH) * WIDTH
        got = {r: fc.predict_next(follow_wh, at, running=r).table for r in ("slurm", "logs")}
        for r, table in got.items():
            assert set(table["running_jobs"]) == {r}
            want = fc.predict(tl, at, jobs=views[r], known=known).table["probability"]
            np.testing.assert_allclose(table["probability"], want, rtol=1e-12)
        differ += not np.allclose(got["slurm"]["probability"], got["logs"]["probability"])
    assert differ >= 2  # of 3 times, the views give other forecasts
    auto = fc.predict_next(follow_wh, at).table  # snapshots there: Slurm's
    assert set(auto["running_jobs"]) == {"slurm"}
    np.testing.assert_array_equal(auto["probability"], got["slurm"]["probability"])
    args = ["bursts", "predict", "-w", str(follow_wh.path), "--model", "w4", "--at",
            "2021-03-04 12:00", "--format", "json"]  # fmt: skip
    r = CliRunner().invoke(app, [*args, "--running", "slurm"])
    assert r.exit_code == 0, r.output
    assert {row["running_jobs"] for row in json.loads(r.output)} == {"slurm"}
    bare = Warehouse(tmp_path / "bare", create=True)
    fc.save(bare)
    with pytest.raises(IosightError, match="no Slurm snapshot"):
        fc.predict_next(bare, running="slurm")
    r = CliRunner().invoke(app, [*args, "--running", "squeue"])
    assert r.exit_code == 1 and "'auto', 'slurm' or 'logs'" in r.output
    assert "Traceback" not in r.output


def test_what_follow_cannot_forecast_with_is_one_line(recorded, tmp_path):
    """A ``live`` forecaster (it assumes the system's rates are known up to now), a
    missing one, and --forecast without --follow: one line each, nothing followed."""
    from typer.testing import CliRunner

    from iosight.cli import app

    rec, _, _, _ = recorded
    live = train_forecaster(load_timeline(rec), direction="write", model="logreg", max_lead=1,
                            workers=1, name="live-w")  # fmt: skip
    wh = Warehouse(tmp_path / "wh", create=True)
    live.save(wh)
    logs = tmp_path / "logs"
    logs.mkdir()
    for args, expected in (
        (["--follow", "--forecast", "live-w"], "--information live: follow mode knows only"),
        (["--follow", "--forecast", "nope"], "no model 'nope'"),
        (["--forecast", "live-w"], "--forecast forecasts as logs land: it goes with --follow"),
    ):
        result = CliRunner().invoke(app, ["ingest", str(logs), "-w", str(wh.path), *args])
        assert result.exit_code == 1, result.output
        assert expected in " ".join(result.output.split()) and "Traceback" not in result.output
        assert "following" not in result.output and not wh.has_table("jobs")
    with pytest.raises(IosightError, match="--information live"):
        FollowForecasts(wh, ["live-w"])
