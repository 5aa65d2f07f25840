"""Forecasts made while following (``ingest --follow --forecast``): a replay of a Summit
slice followed batch by batch forecasts at every bin boundary what the batch ``logs``
evaluation predicts for those bins from the complete warehouse."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import (
    FORECAST_COLUMNS,
    FORECASTS_TABLE,
    FollowForecasts,
    fit_model,
    load_known,
    train_forecaster,
)
from iosight.timeline import build_timeline, load_timeline
from iosight.warehouse import Warehouse, ingest, replay
from tests_support import follow_until, shared_path

WIDTH = 300.0
DAY = 86400.0


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


def _follow_until(logs, wh: Warehouse, forecasts: FollowForecasts, files: int) -> list[int]:
    """Follow ``logs`` into ``wh`` in ingests of at most 80 files, forecasting after each,
    until ``files`` sources came in; the boundaries each forecast passed."""
    passed = []
    follow_until(logs, wh, files, 60, lambda b: passed.append(forecasts.update()),
                 interval=0.05, settle=1, batch_size=80)  # fmt: skip
    return passed


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
    # on a week persistence wins every lead, and it reads only the current bin: a
    # logistic regression on every feature (the EMAs too) makes the test see them all
    X, x = fc.features(tl, known=known), tl["write_bytes"].to_numpy()
    for lead in fc.binary:
        fc.binary[lead] = fit_model("logreg", X[:-lead], x[lead:] > np.quantile(x, 0.97), params={})
    return wh, jobs, known, fc


def _followed(recorded, tmp_path) -> Warehouse:
    """The recorded week replayed in two parts of its known-at times, each followed by
    a new follow (a restart: forecasts resume from the stored ones)."""
    rec, jobs, _, fc = recorded
    wh = Warehouse(tmp_path / "followed", create=True)
    fc.save(wh)
    out = tmp_path / "replayed"
    lo, mid, hi = jobs["known_at"].quantile([0, 0.7, 1.0])
    passed, files = [], 0
    for since, until in ((lo, mid), (mid, hi + 1)):
        files += replay(rec, out, speed=float("inf"), since=since, until=until).tables
        passed += _follow_until(out, wh, FollowForecasts(wh, ["w"]), files)  # sees all again
    assert len(wh.jobs()) == len(rec.jobs())
    assert sum(p > 0 for p in passed) >= 3  # forecasts continued, and resumed
    return wh


def _evaluation(recorded, known) -> pd.DataFrame:
    """The batch evaluation's predictions at every bin of the complete warehouse (rows
    ``known`` at the end of each), as follow's columns."""
    rec, _, _, fc = recorded
    tl = load_timeline(rec)
    starts = tl["bin_start"].to_numpy(np.float64)
    out = fc.forecast(fc.features(tl, known=known), starts, WIDTH)
    out = out.assign(as_of=out.pop("at") + WIDTH)
    return out.sort_values(["as_of", "lead"], ignore_index=True)


def test_follow_forecasts_every_boundary_as_the_batch_evaluation(recorded, tmp_path):
    rec, jobs, known, fc = recorded
    got = _followed(recorded, tmp_path).sql(f"select * from {FORECASTS_TABLE}")
    assert list(got.columns) == list(FORECAST_COLUMNS)
    assert set(got["model"]) == {"w"} and set(got["direction"]) == {"write"}
    got = got.sort_values(["as_of", "lead"], ignore_index=True)
    # every boundary from the end of the bin the first job became known in to the last
    # passed, each once per lead (nothing lost or repeated at the restart)
    first = np.floor(jobs["known_at"].min() / WIDTH) * WIDTH + WIDTH
    last = np.floor(jobs["known_at"].max() / WIDTH) * WIDTH
    for _, as_of in got.groupby("lead")["as_of"]:
        assert np.array_equal(as_of.to_numpy(), np.arange(first, last + 1, WIDTH))
    # the batch evaluation on the complete warehouse, where both have the bin
    want = _evaluation(recorded, known)
    want = want[want["as_of"].between(first, last)].reset_index(drop=True)
    mine = got[got["as_of"] <= want["as_of"].max()].reset_index(drop=True)
    assert len(mine) == len(want) > 1500
    np.testing.assert_allclose(mine["probability"], want["probability"], rtol=1e-9, atol=0)
    for c in ("as_of", "lead", "bin_start", "burst", "severity"):
        assert np.array_equal(mine[c].to_numpy(), want[c].to_numpy()), c
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
