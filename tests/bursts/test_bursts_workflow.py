"""The ``bursts train`` workflow (``iosight.bursts._workflow``): the evaluation kept in
the warehouse without losing or doubling rows, a forecaster saved from the task's
settings, and refitted with them (SYNTHETIC series, ``tests_support.daily_spikes``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from iosight._errors import IosightError
from iosight.bursts import EVALUATION_TABLE, load_forecaster, refit_forecaster, train_bursts
from iosight.bursts._workflow import load_evaluation
from tests_support import daily_spikes

OPTIONS = {"directions": "write", "models": "tree", "feature_sets": 3, "modes": "lead",
           "k": {"write": 3.0}, "workers": 1}  # fmt: skip


@pytest.fixture
def spiky(warehouse):
    """A warehouse holding twelve days of a SYNTHETIC timeline."""
    warehouse.write_table("timeline", pa.Table.from_pandas(daily_spikes(days=12)))
    return warehouse


def test_train_bursts_passes_every_task_setting_to_the_evaluation_and_the_forecaster(spiky):
    r = train_bursts(spiky, horizons=[5, 10], train_fraction=0.7, val_fraction=0.3,
                     max_lead=2, seed=3, **OPTIONS)  # fmt: skip
    n = 12 * 288
    ev = r.evaluation.set_index(["horizon_min", "model"])
    assert ev.loc[(5.0, "chosen"), "n_train"] == int(0.7 * n) - 1
    assert ev.loc[(10.0, "chosen"), "n_train"] == int(0.7 * n) - 2
    assert r.saved == ["bursts-write"] and list(r.chosen["bursts-write"]) == ["1", "2"]
    fc = load_forecaster(spiky, "bursts-write")
    s = fc.settings
    assert (s.train_fraction, s.val_fraction, s.max_lead, s.seed, s.k) == (0.7, 0.3, 2, 3, 3.0)
    assert (s.model, s.threshold_from, s.severity) == (("tree",), "train", False)
    # lead 1 is the 5-minute task: the forecaster scores what the evaluation chose
    assert fc.metadata["chosen"]["1"] == ev.loc[(5.0, "chosen"), "chosen"]
    assert fc.metadata["test_metrics"]["1"]["f1"] == pytest.approx(ev.loc[(5.0, "chosen"), "f1"])


def test_a_second_run_replaces_its_tasks_rows_and_keeps_the_others(spiky):
    train_bursts(spiky, horizons=[5, 10], save=False, **OPTIONS)
    first = load_evaluation(spiky)
    train_bursts(spiky, horizons=[10, 15], save=False, **OPTIONS)
    table = load_evaluation(spiky)
    keys = ["information", "direction", "feature_set", "mode", "horizon_min", "target", "model"]
    assert not table.duplicated(keys).any()
    assert sorted(table["horizon_min"].unique()) == [5.0, 10.0, 15.0]
    kept = table[table["horizon_min"] == 5.0]
    assert kept["trained_at"].eq(first["trained_at"].iloc[0]).all()
    assert (table[table["horizon_min"] != 5.0]["trained_at"] != first["trained_at"].iloc[0]).all()
    assert len(table) == len(first) // 2 * 3
    assert not (spiky.path / "models").exists()  # save=False saves nothing


def test_train_bursts_refuses_settings_it_sets_per_task(spiky):
    for bad in ({"direction": "read"}, {"name": "mine"}, {"severity": True}):
        with pytest.raises(IosightError, match="'settings' parameter must be free of fields"):
            train_bursts(spiky, **OPTIONS, **bad)
    assert not spiky.has_table(EVALUATION_TABLE)
    with pytest.raises(IosightError, match="train first: 'iosight bursts train"):
        load_evaluation(spiky)


def test_a_refit_keeps_the_saved_settings(spiky):
    train_bursts(spiky, horizons=[5], max_lead=1, train_fraction=0.6, **OPTIONS)
    old = load_forecaster(spiky, "bursts-write")
    spiky.write_table("timeline", pa.Table.from_pandas(daily_spikes(days=14)))
    new = refit_forecaster(spiky, "bursts-write", workers=1)
    assert new.settings == old.settings and new.settings.train_fraction == 0.6
    assert new.metadata["timeline_window"][1] > old.metadata["timeline_window"][1]
    assert load_forecaster(spiky, "bursts-write").metadata["timeline_window"] == \
        new.metadata["timeline_window"]  # fmt: skip
