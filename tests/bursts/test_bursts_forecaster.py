"""Trained burst forecasters (``iosight.bursts._forecaster``): fitted from a task, saved,
listed, loaded (a model saved before a setting existed too) and their refusals, on
SYNTHETIC series (``tests_support.daily_spikes``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import (
    BurstTask,
    Forecaster,
    describe_choice,
    list_forecasters,
    load_forecaster,
    train_forecaster,
)
from tests_support import daily_spikes

TASK = BurstTask(model="tree", max_lead=3, k=3.0, train_fraction=0.75)


@pytest.fixture(scope="module")
def fitted() -> tuple[Forecaster, pd.DataFrame]:
    timeline = daily_spikes(days=12)
    return Forecaster.fit(timeline, TASK, workers=1), timeline


def _without_time(metadata: dict) -> dict:
    return {k: v for k, v in metadata.items() if k != "created"}


def test_the_keyword_front_door_fits_the_same_forecaster(fitted):
    fc, timeline = fitted
    again = train_forecaster(timeline, **TASK.options(), workers=1)
    changed = train_forecaster(timeline, TASK, max_lead=2, workers=1)
    assert again.settings == fc.settings == TASK
    assert _without_time(again.metadata) == _without_time(fc.metadata)
    pd.testing.assert_frame_equal(again.predict(timeline).table, fc.predict(timeline).table)
    assert changed.settings == TASK.replace(max_lead=2) and changed.metadata["leads"] == [1, 2]
    # what the task says is what the metadata records
    md = fc.metadata
    assert (md["train_fraction"], md["leads"], md["model"]) == (0.75, [1, 2, 3], "tree")
    assert md["training_window"][1] == timeline["bin_start"].iloc[int(0.75 * len(timeline)) - 1]


def _same_forecaster(a: Forecaster, b: Forecaster, timeline: pd.DataFrame) -> None:
    assert a.settings == b.settings and _without_time(a.metadata) == _without_time(b.metadata)
    pd.testing.assert_frame_equal(a.predict(timeline).table, b.predict(timeline).table)


def test_two_workers_fit_the_same_forecaster(fitted):
    """Where the leads are fitted changes nothing: seeded fits, results in lead order."""
    fc, timeline = fitted
    _same_forecaster(Forecaster.fit(timeline, TASK, workers=2), fc, timeline)


def test_a_dask_cluster_fits_the_same_forecaster(fitted):
    distributed = pytest.importorskip("distributed")
    fc, timeline = fitted
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = Forecaster.fit(timeline, TASK, scheduler=cluster.scheduler_address)
    _same_forecaster(on_dask, fc, timeline)


def test_a_forecaster_saved_before_threshold_from_existed_still_loads(fitted, warehouse):
    fc, timeline = fitted
    path = fc.save(warehouse)
    md = json.loads((path / "metadata.json").read_text())
    assert md["settings"]["threshold_from"] == "train"
    del md["settings"]["threshold_from"]  # what iosight saved before the task object
    (path / "metadata.json").write_text(json.dumps(md))
    back = load_forecaster(warehouse, fc.name)
    assert back.settings == fc.settings
    pd.testing.assert_frame_equal(back.predict(timeline).table, fc.predict(timeline).table)
    md["settings"]["mode"] = "hourly"  # a hand-edited file: one line
    (path / "metadata.json").write_text(json.dumps(md))
    with pytest.raises(IosightError, match="'mode' parameter must be 'lead' or 'interval'"):
        load_forecaster(warehouse, fc.name)


def test_listing_skips_a_save_in_progress_and_a_missing_model_names_the_saved(fitted, warehouse):
    fc, _ = fitted
    fc.save(warehouse)
    hidden = warehouse.path / "models" / ".bursts-write.tmp-1-x"
    hidden.mkdir()
    (hidden / "metadata.json").write_text("{}")
    assert list_forecasters(warehouse) == ["bursts-write"]
    with pytest.raises(IosightError, match=r"no model 'other' .*\(models: bursts-write\)"):
        load_forecaster(warehouse, "other")
    with pytest.raises(IosightError, match="invalid model name"):
        load_forecaster(warehouse, "../bursts-write")


def test_predict_refuses_other_bins_another_feature_set_and_a_time_outside(fitted):
    fc, timeline = fitted
    with pytest.raises(IosightError, match="trained on 300 s bins but the timeline has 600 s"):
        fc.predict(daily_spikes(days=12, width=600.0))
    with pytest.raises(IosightError, match="uses feature set 3, not 4"):
        fc.predict(timeline, feature_set=4)
    with pytest.raises(IosightError, match="is outside the timeline"):
        fc.predict(timeline, at=float(timeline["bin_start"].iloc[-1]) + 300.0)
    at = float(timeline["bin_start"].iloc[100])
    table = fc.predict(timeline, at=at).table
    assert table["lead"].tolist() == [1, 2, 3]
    assert np.allclose(table["bin_start"], at + 300.0 * table["lead"])


def test_the_chosen_candidates_are_described_per_run_of_leads(fitted):
    fc, _ = fitted
    assert describe_choice({"1": "tree", "2": "tree", "3": "persistence", "5": "persistence"}) \
        == "1-2: tree; 3: persistence; 5: persistence"  # fmt: skip
    assert fc.describe() == describe_choice(fc.metadata["chosen"]) + " (lead mode, per lead)"


def test_fit_takes_the_known_at_sums_of_the_logs_regime():
    """``Forecaster.fit`` reads a ``logs`` task's known-at sums as the keyword door does
    (SYNTHETIC: each bin's bytes known in full at the end of the next bin)."""
    timeline = daily_spikes(days=10)
    known = timeline.drop(columns="active_jobs").assign(
        known_start=timeline["bin_start"] + 300.0, active_jobs=1
    )
    task = BurstTask(model="tree", max_lead=2, k=3.0, information="logs", severity=False)
    with pytest.raises(IosightError, match="needs the known-at sums"):
        Forecaster.fit(timeline, task, workers=1)
    fc = Forecaster.fit(timeline, task, known=known, workers=1)
    same = train_forecaster(timeline, task, known=known, workers=1)
    assert fc.information == "logs" and fc.metadata["leads"] == [1, 2]
    assert _without_time(fc.metadata) == _without_time(same.metadata)
