import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.metrics import f1_score

from iosight._errors import IosightError
from iosight.bursts import (
    BASELINES,
    CHOICE_MARGIN,
    Candidate,
    choose,
    evaluate_forecasts,
    load_forecaster,
    make_dataset,
    no_new_bursts_f1,
    running_jobs_share,
    train_forecaster,
)
from tests_support import daily_spikes as _daily_spikes


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
    # no burst is on a bin before it: knowing how long current bursts last gains nothing
    assert (r["f1_no_new_bursts"] == 0).all()
    assert set(r.index.get_level_values("model")) == {
        "persistence",
        "time_of_day",
        "tree",
        "naive_bayes",
        "chosen",
    }
    assert r[["f1", "precision", "recall"]].stack().between(0, 1).all()
    # skill beside every F1: gain and skill score over persistence (F1 0 here: skill = F1)
    assert np.allclose(r["f1_gain"], r["f1"] - 0) and np.allclose(r["skill"], r["f1"])
    # the candidate chosen on validation is never worse there than the best baseline:
    # here the time-of-day slot, which no model on bytes alone beats, scored like it
    for mode in ("interval", "lead"):
        name = r.loc[(mode, "chosen"), "chosen"]
        assert name == "time_of_day"
        assert r.loc[(mode, "chosen"), "f1"] == r.loc[(mode, name), "f1"] == 1
        best_val = r.loc[mode].drop(index=["chosen"])["val_f1"].max()
        assert r.loc[(mode, name), "val_f1"] == best_val == 1
    # the paper's framing (support-weighted over both classes) sits beside the burst F1
    assert (r["f1_weighted"] > 0.9).all()


def test_chosen_falls_back_to_persistence_when_models_are_worse():
    """Bursts are 50-bin plateaus: persistence misses one bin per plateau end; a model on
    bytes alone can at best tie it, and ties keep persistence."""
    rng = np.random.default_rng(2)
    df = _daily_spikes(days=12)
    x = rng.lognormal(20, 0.3, len(df))
    on = (np.arange(len(df)) // 50) % 7 == 3  # 50-bin plateaus
    df["write_bytes"] = np.where(on, 1e12, x)
    r = evaluate_forecasts(df, directions="write", models="naive_bayes", feature_sets=1,
                           modes="lead", horizons=[5], k={"write": 1.0}, workers=1)  # fmt: skip
    r = r.set_index("model")
    assert r.loc["persistence", "f1"] > 0.9
    assert r.loc["naive_bayes", "val_f1"] <= r.loc["persistence", "val_f1"]
    assert r.loc["chosen", "chosen"] == "persistence"
    assert r.loc["chosen", "f1"] == r.loc["persistence", "f1"]
    # plateau ends are all persistence misses: the ceiling without new bursts is above it
    assert r["f1_no_new_bursts"].nunique() == 1
    assert r["f1_no_new_bursts"].iloc[0] > r.loc["persistence", "f1"]


def test_no_new_bursts_ceiling_by_hand():
    now, later = np.array([1, 1, 0, 0, 2, 0]), np.array([1, 0, 1, 0, 1, 1])
    # 2 bursts kept (bins 0, 4), 2 new (bins 2, 5): F1 = 2*2 / (2*2 + 2)
    assert no_new_bursts_f1(now, later) == pytest.approx(4 / 6)
    # persistence on the same bins: 2 hits, 1 false alarm, 2 misses
    assert f1_score(later > 0, now > 0) == pytest.approx(4 / 7)
    assert no_new_bursts_f1(now, np.zeros(6)) == 0.0


def test_running_jobs_share_by_hand():
    known = np.array([5.0, 1.0, 0.0, 9.0, 3.0])  # bytes the jobs running at t bring
    later = np.array([1, 1, 1, 0, 2])  # the target bins' classes: bursts at 0, 1, 2, 4
    # threshold 2: of the four bursts, the running jobs make 0 and 4 on their own
    assert running_jobs_share(known, 2.0, later) == 0.5
    assert running_jobs_share(known, 10.0, later) == 0.0
    assert np.isnan(running_jobs_share(known, 2.0, np.zeros(5)))


def test_choice_needs_a_margin_and_no_losing_window():
    """A model is chosen over persistence only when it wins on the compare half by the
    margin and loses on none of its windows (the Summit test losses came from models
    that won the half on one stretch of bursts)."""
    y = np.zeros(300, bool)
    y[[10, 11, 12, 110, 111, 112, 210, 211, 212]] = True  # three bursts, one per window
    persistence = y.copy()
    persistence[[11, 12, 111, 112, 211, 212]] = False  # sees each burst's first bin only
    one_window = y.copy()
    one_window[[110, 111, 112]] = False  # perfect twice, silent in the middle window
    everywhere = y.copy()
    everywhere[[12]] = False  # misses one burst end only
    cands = {n: Candidate.scored(None, y, p) for n, p in
             [("persistence", persistence), ("one_window", one_window),
              ("everywhere", everywhere)]}  # fmt: skip
    assert cands["one_window"].val_f1 > cands["persistence"].val_f1 + CHOICE_MARGIN
    assert cands["one_window"].window_f1[1] < cands["persistence"].window_f1[1]
    assert choose({n: cands[n] for n in ("persistence", "one_window")}) == "persistence"
    assert choose(cands) == "everywhere"
    gain = cands["everywhere"].val_f1 - cands["persistence"].val_f1
    assert choose(cands, margin=gain + 0.01) == "persistence"


def test_choice_is_never_worse_on_validation_than_the_best_baseline():
    """Per regime the baselines are persistence, time of day and (logs) the nowcast: the
    choice scores at least the best of them on the compare half, a baseline where no
    model beats that one robustly (SYNTHETIC forecasts of random skill)."""
    rng = np.random.default_rng(3)
    y = rng.random(300) < 0.1
    names = ["persistence", "time_of_day", "nowcast", "tree", "forest"]
    picked = set()
    for trial in range(200):
        present = names if trial % 2 else [n for n in names if n != "nowcast"]
        cands = {}
        for n in present:
            skill = rng.uniform(0.3, 1.0) if trial % 4 < 2 else rng.uniform(0.6, 0.65)
            p = np.where(rng.random(300) < skill, y, rng.random(300) < 0.1)
            cands[n] = Candidate.scored(None, y, p)
        name = choose(cands)
        picked.add(name)
        base = max((b for b in BASELINES if b in cands), key=lambda b: cands[b].val_f1)
        assert cands[name].val_f1 >= cands[base].val_f1
        if name in BASELINES:
            assert name == base
        else:
            assert cands[name].val_f1 >= cands[base].val_f1 + CHOICE_MARGIN
            assert all(
                w >= b for w, b in zip(cands[name].window_f1, cands[base].window_f1, strict=True)
            )
    assert {"persistence", "time_of_day", "nowcast"} <= picked and picked & {"tree", "forest"}
    # time of day ahead of persistence by less than the margin: time of day
    y = rng.random(1000) < 0.1
    misses_one = y.copy()
    misses_one[np.flatnonzero(y)[0]] = False
    close = {"persistence": Candidate.scored(None, y, misses_one),
             "time_of_day": Candidate.scored(None, y, y)}  # fmt: skip
    assert 0 < close["time_of_day"].val_f1 - close["persistence"].val_f1 < CHOICE_MARGIN
    assert choose(close) == "time_of_day"


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
    df = _daily_spikes(days=14)  # a burst in each half of the validation slice
    fc = train_forecaster(df, direction="write", model="tree", max_lead=4, k=3.0, workers=2)
    warehouse.write_table("timeline", pa.Table.from_pandas(df))
    fc.save(warehouse)
    loaded = load_forecaster(warehouse, "bursts-write")
    md = loaded.metadata
    assert md["bin_width"] == 300 and md["feature_set"] == 3 and md["leads"] == [1, 2, 3, 4]
    assert {"scikit-learn", "xgboost"} <= set(md["versions"])
    # per lead the candidate with the best validation F1, both baselines included
    assert set(md["chosen"]) == {"1", "2", "3", "4"}
    for lead, name in md["chosen"].items():
        vals = md["val_f1"][lead]
        assert name in ("tree", "persistence", "time_of_day") and vals[name] == max(vals.values())
    # the daily slot foresees the burst as well as the precursor only the model sees: a tie
    # keeps the baseline
    assert md["chosen"]["1"] == "time_of_day" and md["val_f1"]["1"]["time_of_day"] == 1
    # at 08:15 of the last day the precursor is seen: the next bin (08:20) is a burst
    at = df["bin_start"].iloc[-1] - df["bin_start"].iloc[-1] % 86400 + 8 * 3600 + 900 + 7
    p = loaded.predict_next(warehouse, at=at).table
    assert p["lead"].tolist() == [1, 2, 3, 4]
    assert p["bin_start"].tolist() == [at - 7 + 300 * i for i in range(1, 5)]
    assert p["burst"].iloc[0] and p["probability"].iloc[0] == p["probability"].max()
    assert (p["severity"] > 0).tolist() == p["burst"].tolist()
    last = loaded.predict_next(warehouse).table
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


@pytest.mark.parametrize("name", ["m" * 5000, "../models", ".hidden", "a/b", "", "a b"])
def test_a_bad_model_name_is_one_error_line(warehouse, name):
    """A name too long for the file system was an OSError (#26 item 13)."""
    with pytest.raises(IosightError, match="invalid model name"):
        load_forecaster(warehouse, name)


def test_same_seed_same_scores_on_one_or_two_workers():
    """Seeded searches and fits: the scores do not depend on how many data sets are fitted
    at once (each model fits on one thread)."""
    df = _daily_spikes(days=6)
    kw = dict(directions="write", models="forest,xgboost", horizons=[5, 15], k={"write": 3.0},
              search_iter=2, seed=4)  # fmt: skip
    a, b = evaluate_forecasts(df, workers=1, **kw), evaluate_forecasts(df, workers=2, **kw)
    pd.testing.assert_frame_equal(a, b)


def test_parallel_map_keeps_order_and_reports_each_item():
    from iosight.bursts._task import parallel_map

    class Count:
        def __init__(self):
            self.seen = []

        def advance(self, n=1, **fields):
            self.seen.append((n, fields))

    for workers in (1, 2, 0):
        prog = Count()
        items = [{"lead": i} for i in range(7)]
        out = parallel_map(lambda it: it["lead"] ** 2, items, prog, workers=workers)
        assert out == [i**2 for i in range(7)]
        assert sorted(f["lead"] for _, f in prog.seen) == list(range(7))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"seed": -1}, "seed"),
        ({"horizons": "abc"}, "'horizons' parameter must be a non-empty .* numbers. Got 'abc'"),
        ({"horizons": ""}, "'horizons' parameter must be a non-empty"),
        ({"feature_sets": "x"}, "'feature_sets' parameter must be .* integers. Got 'x'"),
        ({"feature_sets": ","}, "'feature_sets' parameter must be a non-empty"),
        ({"modes": ","}, "'modes' parameter must be a non-empty"),
        ({"targets": ","}, "'targets' parameter must be a non-empty"),
        ({"directions": ","}, "'directions' parameter must be a non-empty"),
        ({"search_iter": 2, "cv_splits": 1}, "'cv_splits' parameter must be at least 2"),
        ({"search_iter": 2, "cv_splits": 0}, "'cv_splits' parameter must be at least 2"),
        ({"search_iter": -1}, "'search_iter' parameter"),
    ],
)
def test_bad_arguments_are_refused(kw, match):
    df = _daily_spikes(days=3)
    with pytest.raises(IosightError, match=match):
        evaluate_forecasts(df, **{"directions": "write", "models": "tree", "horizons": [5], **kw})
    if {"seed", "cv_splits"} & set(kw):
        with pytest.raises(IosightError, match=match):
            train_forecaster(df, direction="write", model="tree", max_lead=2, **kw)


def test_predict_refuses_a_timeline_with_nan_as_analysis_does():
    from iosight.bursts import label_bursts

    df = _daily_spikes(days=6)
    fc = train_forecaster(df, direction="write", model="tree", max_lead=1, k=3.0, workers=1)
    assert len(fc.predict(df).table) == 1
    holed = df.copy()
    holed.loc[len(df) - 3, "read_ops"] = np.nan
    with pytest.raises(IosightError, match="the timeline has NaN or infinite values"):
        fc.predict(holed)
    holed.loc[len(df) - 3, "write_bytes"] = np.inf
    with pytest.raises(IosightError, match="NaN or infinite values"):
        label_bursts(holed["write_bytes"].to_numpy())
