"""The model contract, as a notebook uses it: a burst forecaster and a write model are
fitted, saved, loaded and asked to predict through the same verbs (SYNTHETIC data)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import (
    BurstPrediction,
    Forecaster,
    ForecasterSettings,
    fit_model,
    load_forecaster,
)
from iosight.perfmodel import (
    WriteModel,
    WriteModelSettings,
    WritePrediction,
    group_runs,
    load_platform,
)
from iosight.synth.writes import WriteSimConfig, simulate_writes
from iosight.warehouse import Warehouse
from tests_support import daily_spikes, planted_pickle


@pytest.fixture(scope="module")
def forecaster() -> tuple[Forecaster, pd.DataFrame]:
    timeline = daily_spikes(days=14, anytime=True)
    settings = ForecasterSettings(model="tree", max_lead=2, k=3.0)
    return Forecaster.fit(timeline, settings, workers=1), timeline


def test_fit_save_load_predict_with_the_same_verbs(forecaster, tmp_path):
    fc, timeline = forecaster
    titan = load_platform("titan")
    cfg = WriteSimConfig(scales=(1, 2, 4, 200), patterns_per_scale=8, seed=3)
    samples = group_runs(simulate_writes(titan, cfg))
    settings = WriteModelSettings(families=("lasso", "linear"), min_time=0.5)
    wm = WriteModel.fit(samples, titan, settings)
    wh = Warehouse(tmp_path / "wh", create=True)
    patterns = samples[samples.nodes > 128].head(5)

    burst_before, write_before = fc.predict(timeline), wm.predict(patterns)
    fc.save(wh), wm.save(tmp_path / "write-model")
    fc_back = Forecaster.load(wh, fc.name)
    wm_back = WriteModel.load(tmp_path / "write-model")
    burst_after, write_after = fc_back.predict(timeline), wm_back.predict(patterns)

    assert isinstance(burst_after, BurstPrediction) and isinstance(write_after, WritePrediction)
    pd.testing.assert_frame_equal(burst_after.table, burst_before.table)
    pd.testing.assert_frame_equal(write_after.table, write_before.table)
    assert fc_back.settings == fc.settings and wm_back.settings == wm.settings
    # a tree (skops) at lead 1, a baseline (JSON) at lead 2; no pickle
    assert fc.metadata["chosen"]["1"] == "tree"
    assert fc.metadata["chosen"]["2"] in ("persistence", "time_of_day")
    files = {p.name for p in (wh.path / "models" / fc.name).iterdir()}
    assert files == {"metadata.json", "model.json", "estimators.skops"}
    md = json.loads((tmp_path / "write-model" / "metadata.json").read_text())
    assert (md["format"], md["version"], md["kind"]) == ("iosight-model", 1, "write model")


def test_an_xgboost_model_is_saved_in_its_own_format(forecaster, tmp_path):
    fc, timeline = forecaster
    x = fc.features(timeline)
    y = (timeline["write_bytes"].to_numpy() > 1e11).astype(int)
    xgb = fit_model("xgboost", x[:-300], y[1:-299], seed=0)
    wh = Warehouse(tmp_path / "wh", create=True)
    path = Forecaster(fc.settings, {"name": "with-xgboost"}, {1: xgb}).save(wh)
    assert {p.name for p in path.iterdir()} >= {"xgboost-0.ubj", "estimators.skops"}
    back = Forecaster.load(wh, "with-xgboost").binary[1]
    for want, got in zip(xgb.predict(x[-300:]), back.predict(x[-300:]), strict=True):
        assert np.array_equal(want, got)
    assert 0 < back.predict(x)[0].sum() < len(x)  # it does predict bursts, and not everywhere


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"mode": "hourly"}, "'mode' parameter must be 'lead' or 'interval'"),
        ({"model": "svm"}, "unknown model 'svm'"),
        ({"train_fraction": 1.5}, "'train_fraction' parameter must be a fraction in"),
        ({"name": "../x"}, "invalid model name"),
    ],
)
def test_settings_are_checked_when_made(settings, match):
    with pytest.raises(IosightError, match=match):
        ForecasterSettings(**settings)


def test_write_settings_are_checked_when_made():
    with pytest.raises(IosightError, match="'family' parameter must be one of lasso, linear"):
        WriteModelSettings(family="median", families=("lasso", "linear"))


def _plant_old_forecaster(wh: Warehouse, name: str, marker) -> None:
    """What iosight before the model format left (metadata + model.joblib), a pickle
    that would create ``marker`` when loaded."""
    folder = wh.path / "models" / name
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps({"format": 2, "name": name}))
    (folder / "model.joblib").write_bytes(planted_pickle(marker))


def test_a_pickle_planted_in_a_warehouse_is_refused_not_run(forecaster, tmp_path):
    fc, _ = forecaster
    wh = Warehouse(tmp_path / "wh", create=True)
    marker = tmp_path / "ran"
    _plant_old_forecaster(wh, "old", marker)
    with pytest.raises(IosightError, match="model.joblib is a pickle file .* make a new model "
                       "with 'iosight bursts train'"):  # fmt: skip
        load_forecaster(wh, "old")
    # a pickle in the place of a saved forecaster's estimators
    path = fc.save(wh)
    (path / "estimators.skops").write_bytes(planted_pickle(marker))
    with pytest.raises(IosightError, match="estimators.skops is a pickle file"):
        Forecaster.load(wh, fc.name)
    assert not marker.exists()
    shutil.rmtree(path)
    assert fc.save(wh) == path and Forecaster.load(wh, fc.name).settings == fc.settings


def test_the_commands_refuse_a_planted_pickle_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from iosight.cli import app

    marker = tmp_path / "ran"
    wh = Warehouse(tmp_path / "wh", create=True)
    _plant_old_forecaster(wh, "old", marker)
    old_write_model = tmp_path / "write-model"  # what 'perfmodel fit --out' wrote before
    old_write_model.mkdir()
    (old_write_model / "metadata.json").write_text("{}")
    (old_write_model / "model.pkl").write_bytes(planted_pickle(marker))
    runs = [
        ["bursts", "predict", "--warehouse", str(wh.path), "--model", "old"],
        ["perfmodel", "predict", "--model", str(old_write_model), "--nodes", "4", "--cores",
         "8", "--size", "1GiB"],
    ]  # fmt: skip
    for args, retrain in zip(runs, ("bursts train", "perfmodel fit"), strict=True):
        res = CliRunner().invoke(app, args)
        assert res.exit_code != 0 and "Traceback" not in res.output
        (line,) = res.output.strip().splitlines()
        assert "is a pickle file" in line and f"'iosight {retrain}'" in line
    assert not marker.exists()
