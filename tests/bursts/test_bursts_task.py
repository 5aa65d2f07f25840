"""The burst task object (``iosight.bursts._task``): checked once when made, crossed into
an evaluation's tasks, and read alike by the keyword front doors and the task-based
functions (a real Summit slice and SYNTHETIC series)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import (
    BurstTask,
    Forecaster,
    ForecasterSettings,
    evaluate_forecasts,
    evaluate_tasks,
    make_dataset,
    task_grid,
)
from tests_support import daily_spikes, shared_path


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"threshold_from": "test"}, "'threshold_from' parameter must be 'train' or 'all'"),
        ({"val_fraction": 0}, "'val_fraction' parameter must be a fraction in"),
        ({"horizon_min": -5}, "'horizon_min' parameter must be positive"),
        ({"direction": "both"}, "direction"),
        ({"feature_set": 7}, "feature"),
        ({"information": "oracle"}, "information"),
        ({"max_lead": 0}, "'max_lead' parameter must be between 1 and 288"),
        ({"search_iter": 1, "cv_splits": 1}, "'cv_splits' parameter must be at least 2"),
    ],
)
def test_a_task_is_checked_when_made_and_again_when_changed(settings, match):
    with pytest.raises(IosightError, match=match):
        BurstTask(**settings)
    with pytest.raises(IosightError, match=match):
        BurstTask().replace(**settings)


def test_the_task_is_the_forecasters_settings_and_normalises_its_models():
    task = BurstTask(model="all", direction="read")
    assert ForecasterSettings is BurstTask
    assert task.model == ("logreg", "naive_bayes", "tree", "forest", "xgboost")
    assert task.name == "bursts-read" and task.leads == list(range(1, 25))
    assert task.replace(direction="write").name == "bursts-write"  # a default name follows
    assert task.replace(name="mine").replace(direction="write").name == "mine"
    assert BurstTask(**task.options()) == task
    assert task.at_lead(3, 300.0).horizon_min == 15
    interval = task.replace(mode="interval", horizon_min=30)
    assert interval.leads == [1] and interval.at_lead(1, 300.0) == interval


def test_the_grid_crosses_the_lists_regime_first_horizon_last():
    base = BurstTask(model="tree", train_fraction=0.7)
    grid = task_grid(base, information="live", directions="read,write", feature_sets=[1, 3],
                     modes="lead", horizons="5,30", k={"write": 2.5})  # fmt: skip
    got = [(t.direction, t.feature_set, t.horizon_min, t.k) for t in grid]
    assert got == [(d, fs, h, 2.5 if d == "write" else None)
                   for d in ("read", "write") for fs in (1, 3) for h in (5.0, 30.0)]  # fmt: skip
    assert {(t.train_fraction, t.model, t.mode) for t in grid} == {(0.7, ("tree",), "lead")}


def test_an_evaluation_refuses_a_crossed_field_among_its_shared_settings():
    df = daily_spikes(days=3)
    with pytest.raises(IosightError, match="'settings' parameter must be free of fields set "
                       r"per task .* Got \['direction'\]"):  # fmt: skip
        evaluate_forecasts(df, models="tree", direction="read")
    with pytest.raises(TypeError):  # not a setting at all: Python's own error
        evaluate_forecasts(df, models="tree", horizon=5)


def test_make_dataset_reads_a_task_and_keeps_interval_mode_by_default():
    df = daily_spikes(days=5)
    task = BurstTask(mode="lead", horizon_min=15, k=3.0, train_fraction=0.6)
    ds = make_dataset(df, task)
    assert ds.step == 3 and ds.n_train == int(0.6 * len(df)) - 3
    same = make_dataset(df, mode="lead", horizon_min=15, k=3.0, train_fraction=0.6)
    np.testing.assert_array_equal(ds.X, same.X) and np.testing.assert_array_equal(ds.y, same.y)
    assert make_dataset(df, horizon_min=60, k=3.0).bin_width == 3600  # interval: re-binned


@pytest.fixture(scope="module")
def summit_timeline() -> pd.DataFrame:
    """Eight days of Summit's 2021 App10 job totals (real) as a 5-minute timeline, each
    job's bytes spread over its run (``timeline_from_job_totals``)."""
    from iosight.timeline import timeline_from_job_totals

    root = shared_path("datasets", "summit_darshan_total_2021", "darshan_total")
    jobs = pd.read_parquet(root / "App10.parquet")
    t0 = pd.Timestamp("2021-03-01", tz="UTC").timestamp()
    jobs = jobs[(jobs["start_time"] >= t0) & (jobs["start_time"] < t0 + 8 * 86400)]
    return timeline_from_job_totals(jobs).to_pandas()


def test_the_task_objects_give_the_keywords_table_and_the_forecasters_scores(summit_timeline):
    """On real Summit bins: the evaluation through task objects is the keyword one, and
    the lead-1 row chosen there scores what the forecaster of the same task stores."""
    tl = summit_timeline
    kw = {"train_fraction": 0.75, "val_fraction": 0.3, "seed": 2}
    by_keywords = evaluate_forecasts(tl, directions="write,read", models="tree",
                                     modes="lead", horizons=[5, 15], workers=1, **kw)  # fmt: skip
    base = BurstTask(model="tree", **kw)
    tasks = task_grid(base, directions="write,read", modes="lead", horizons=[5, 15])
    by_tasks = evaluate_tasks(tl, tasks, workers=1)
    pd.testing.assert_frame_equal(by_tasks, by_keywords)
    assert (by_tasks["n_train"] == [int(0.75 * len(tl)) - s for s in by_tasks["horizon_min"]
                                    // 5]).all()  # fmt: skip
    fc = Forecaster.fit(tl, base.replace(direction="read", max_lead=1, severity=False), workers=1)
    row = by_tasks.set_index(["direction", "horizon_min", "model"]).loc[("read", 5.0, "chosen")]
    assert fc.metadata["chosen"]["1"] == row["chosen"]
    assert fc.metadata["test_metrics"]["1"]["f1"] == pytest.approx(row["f1"], abs=1e-12)
    assert fc.metadata["test_metrics"]["1"]["persistence_f1"] == pytest.approx(
        row["f1"] - row["f1_gain"], abs=1e-12
    )
