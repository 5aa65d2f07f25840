import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from iosight._errors import IosightError
from iosight.bursts import evaluate_forecasts, load_forecaster, make_dataset, train_forecaster


def _daily_spikes(days=20, width=300.0, seed=0):
    """Background noise plus a write burst at 08:20 UTC every day, announced by a storm of
    write operations in the bin before (so feature sets 2 and 3 can see it coming)."""
    rng = np.random.default_rng(seed)
    n = int(days * 86400 / width)
    t0 = pd.Timestamp("2021-06-01", tz="UTC").timestamp()
    start = t0 + width * np.arange(n)
    write = rng.lognormal(20, 0.5, n)
    burst = np.flatnonzero((start % 86400) == 8 * 3600 + 1200)
    write[burst] = 1e12
    ops = write / 1e6
    ops[burst - 1] = 1e9
    return pd.DataFrame(
        {
            "bin_start": start,
            "bin_width": width,
            "read_bytes": rng.lognormal(20, 1, n),
            "write_bytes": write,
            "read_ops": 1.0,
            "write_ops": ops,
            "read_time": 1.0,
            "write_time": write / 1e9,
            "active_jobs": 3,
        }
    )


def test_dataset_split_never_trains_on_test_targets():
    df = _daily_spikes(days=5)
    ds = make_dataset(df, direction="write", mode="lead", horizon_min=15, k=3.0)
    split = int(0.8 * len(df))
    assert ds.step == 3 and ds.n_train == split - 3
    assert ds.target_start[ds.n_train - 1] < df["bin_start"].iloc[split]
    assert ds.target_start[ds.n_train] == df["bin_start"].iloc[split]
    iv = make_dataset(df, direction="write", mode="interval", horizon_min=60, k=3.0)
    assert iv.bin_width == 3600 and len(iv.y) == len(df) // 12 - 1
    with pytest.raises(IosightError, match="whole number"):
        make_dataset(df, direction="write", horizon_min=7)


def test_baselines_and_models_on_a_daily_pattern():
    r = evaluate_forecasts(
        _daily_spikes(),
        directions="write",
        models="tree,naive_bayes",
        horizons=[5],
        modes="interval,lead",
        k={"write": 3.0},
        search_iter=2,
        seed=1,
    )
    r = r.set_index(["mode", "model"])
    # bursts stand alone, so persistence never hits; the time-of-day slot always does
    for mode in ("interval", "lead"):
        assert r.loc[(mode, "persistence"), "f1"] == 0
        assert r.loc[(mode, "time_of_day"), "f1"] == 1
        assert r.loc[(mode, "time_of_day"), "test_bursts"] == 4
    assert set(r.index.get_level_values("model")) == {
        "persistence",
        "time_of_day",
        "tree",
        "naive_bayes",
    }
    assert r[["f1", "precision", "recall"]].stack().between(0, 1).all()


def test_severity_target_reports_macro_and_weighted_f1():
    r = evaluate_forecasts(
        _daily_spikes(days=10),
        directions="write",
        models="xgboost",
        horizons=[5],
        targets="severity",
        k={"write": 1.0},
        search_iter=2,
    )
    assert r["f1_weighted"].notna().all() and r["f1_macro"].between(0, 1).all()


def test_forecaster_save_load_predict_and_refusals(warehouse):
    df = _daily_spikes(days=6)
    fc = train_forecaster(df, direction="write", model="tree", max_lead=4, k=3.0, search_iter=0)
    warehouse.write_table("timeline", pa.Table.from_pandas(df))
    fc.save(warehouse)
    loaded = load_forecaster(warehouse, "bursts-write")
    md = loaded.metadata
    assert md["bin_width"] == 300 and md["feature_set"] == 3 and md["leads"] == [1, 2, 3, 4]
    assert {"scikit-learn", "xgboost"} <= set(md["versions"])
    # at 08:15 of the last day the precursor is seen: the next bin (08:20) is a burst
    at = df["bin_start"].iloc[-1] - df["bin_start"].iloc[-1] % 86400 + 8 * 3600 + 900 + 7
    p = loaded.predict_next(warehouse, at=at)
    assert p["lead"].tolist() == [1, 2, 3, 4]
    assert p["bin_start"].tolist() == [at - 7 + 300 * i for i in range(1, 5)]
    assert p["burst"].iloc[0] and p["probability"].iloc[0] == p["probability"].max()
    assert (p["severity"] > 0).tolist() == p["burst"].tolist()
    last = loaded.predict_next(warehouse)
    assert last["bin_start"].iloc[0] == df["bin_start"].iloc[-1] + 300
    with pytest.raises(IosightError, match="feature set 3, not 1"):
        loaded.predict_next(warehouse, feature_set=1)
    with pytest.raises(IosightError, match="outside the timeline"):
        loaded.predict_next(warehouse, at=0.0)
    from iosight.timeline import rebin

    warehouse.write_table("timeline", pa.Table.from_pandas(rebin(df, 600)))
    with pytest.raises(IosightError, match="trained on 300 s bins"):
        loaded.predict_next(warehouse)
    with pytest.raises(IosightError, match="no model 'nope'.*bursts-write"):
        load_forecaster(warehouse, "nope")
