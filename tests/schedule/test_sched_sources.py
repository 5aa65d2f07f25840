"""Burst series from the warehouse timeline or a file, and the simulation on them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from iosight._errors import IosightError
from iosight.schedule import (
    burst_series,
    read_burst_series,
    recommend_start,
    simulate_source,
)

T0 = 1_704_067_200.0  # 2024-01-01 UTC


def write_timeline(warehouse, n_bins: int, width: float, spikes, seed: int = 0) -> np.ndarray:
    """A timeline table with lognormal write bytes and 100x spikes at ``spikes``."""
    rng = np.random.default_rng(seed)
    write = rng.lognormal(20, 0.3, n_bins)
    write[spikes] *= 100
    zeros = np.zeros(n_bins)
    table = pa.table(
        {
            "bin_start": T0 + width * np.arange(n_bins),
            "bin_width": np.full(n_bins, width),
            "read_bytes": rng.lognormal(20, 0.3, n_bins),
            "write_bytes": write,
            "read_ops": zeros,
            "write_ops": zeros,
            "read_time": zeros,
            "write_time": zeros,
            "active_jobs": np.ones(n_bins, dtype=np.int64),
        }
    )
    warehouse.write_table("timeline", table)
    return write


def test_burst_series_labels_the_timeline(warehouse):
    spikes = [10, 11, 300, 301, 302, 450]
    write_timeline(warehouse, 500, 300.0, spikes)
    series = burst_series(warehouse, k=3.0)
    assert np.flatnonzero(series.is_burst).tolist() == spikes
    assert series.bin_s == 300.0 and series.source == "timeline:write"
    assert len(series.bin_start) == 500 and series.data == "unknown (no jobs)"
    sim = simulate_source(series)
    # windows with a burst: starts 0..11, 277..302 and 427..450 (all within 0..476)
    assert sim.n_windows == 12 + 26 + 24
    assert sim.settings["burst_bins"] == len(spikes)


def test_burst_series_coarsens_fine_bins(warehouse):
    write_timeline(warehouse, 1000, 60.0, [503, 504])  # 60-s bins -> 200 bins of 300 s
    series = burst_series(warehouse, k=3.0)
    assert len(series.is_burst) == 200
    assert np.flatnonzero(series.is_burst).tolist() == [100]
    with pytest.raises(IosightError):
        burst_series(warehouse, bin_s=30.0)
    with pytest.raises(IosightError):
        burst_series(warehouse, direction="sideways")


def test_missing_timeline_or_model_is_an_iosight_error(warehouse):
    with pytest.raises(IosightError, match="timeline"):
        burst_series(warehouse)
    write_timeline(warehouse, 100, 300.0, [5])
    with pytest.raises(IosightError):
        recommend_start(warehouse, "no-such-model", 850, 4250, policy="MRT")


def test_read_burst_series_from_files(tmp_path):
    import pandas as pd

    (tmp_path / "s.txt").write_text("0001\n1000\n")
    assert read_burst_series(tmp_path / "s.txt").is_burst.tolist() == [0, 0, 0, 1, 1, 0, 0, 0]
    pd.DataFrame({"x": [1, 2], "is_burst": [0, 1]}).to_csv(tmp_path / "s.csv", index=False)
    assert read_burst_series(tmp_path / "s.csv").is_burst.tolist() == [False, True]
    pd.DataFrame({"b": [True, False]}).to_parquet(tmp_path / "s.parquet")
    assert read_burst_series(tmp_path / "s.parquet").is_burst.tolist() == [True, False]
    pd.DataFrame({"x": [1], "y": [0]}).to_csv(tmp_path / "bad.csv", index=False)
    for bad in ("bad.csv", "missing.txt"):
        with pytest.raises(IosightError):
            read_burst_series(tmp_path / bad)


class _FakeForecaster:
    """Stands in for a trained lead-mode model: bursts in the first three bins."""

    def predict_next(self, warehouse, at=None):
        import pandas as pd

        from iosight.bursts import BurstPrediction

        t = T0 if at is None else at
        table = pd.DataFrame(
            {
                "lead": np.arange(24, 0, -1),  # unsorted on purpose
                "bin_start": t + 300.0 * np.arange(24, 0, -1),
                "burst": np.arange(24, 0, -1) <= 3,
                "probability": np.zeros(24),
                "severity": np.zeros(24, dtype=int),
            }
        )
        return BurstPrediction("fake", table)


def test_recommend_start_runs_algorithm_1_on_the_forecast(warehouse, monkeypatch):
    import iosight.bursts

    monkeypatch.setattr(
        iosight.bursts, "load_forecaster", lambda wh, name: _FakeForecaster(), raising=False
    )
    rec = recommend_start(warehouse, "bursts-write", 850, 4250, policy="MRT", at=T0)
    assert rec.forecast["lead"].tolist() == list(range(1, 25))
    assert rec.choice.bin_s == 300.0
    assert (rec.choice.delay, rec.choice.run_time) == (900.0, 900.0)
    assert rec.decided_at == T0 + 300.0 and rec.start_at == T0 + 1200.0


class _AlwaysEarlyBursts:
    """A stand-in classifier pipeline: predicts a burst for every row."""

    def predict_proba(self, X):
        return np.tile([0.0, 1.0], (len(X), 1))


class _NeverBursts:
    def predict_proba(self, X):
        return np.tile([1.0, 0.0], (len(X), 1))


def test_forecast_study_chooses_on_forecasts_and_charges_actual(warehouse, monkeypatch):
    import iosight.bursts
    from iosight.bursts import FittedModel, Forecaster, ForecasterSettings
    from iosight.schedule import forecast_study

    write = write_timeline(warehouse, 400, 300.0, [100, 101, 250])
    mean, std = float(write.mean()), float(write.std())
    md = {
        "name": "fake", "mode": "lead", "direction": "write", "feature_set": 1,
        "bin_width": 300.0, "training_window": [T0, T0 + 300.0 * 199],
        "thresholds": {"mean": mean, "std": std, "k": 3.0},
    }  # fmt: skip
    settings = ForecasterSettings(model="tree", feature_set=1, name="fake")
    classes = np.array([0, 1])
    binary = {
        lead: FittedModel(_AlwaysEarlyBursts() if lead <= 3 else _NeverBursts(), classes, {})
        for lead in range(1, 25)
    }
    fake = Forecaster(settings, md, binary)
    monkeypatch.setattr(iosight.bursts, "load_forecaster", lambda wh, n: fake)
    study = forecast_study(warehouse, "fake", policies=["MDT", "MRT"])
    fw, ow = study.forecast.windows, study.oracle.windows
    # decisions after the training window (bins 200..375), all predicted to burst at once
    assert study.forecast.n_windows == 176
    assert fw["decision_bin"].min() == 200 and fw["decision_bin"].max() == 375
    mrt = fw[(fw.app == "dlio") & (fw.policy == "MRT")]
    assert (mrt["delay"] == 900.0).all() and (mrt["est_run_time"] == 900.0).all()
    # decision at bin 240: actual burst at bin 250 = 10 bins ahead, start 3 -> bins 3..5 clean
    row = mrt[mrt.decision_bin == 240]
    assert row["run_time"].item() == 900.0
    # decision at bin 246: bin 250 is option 3, so MRT starts on the burst and pays for it
    assert mrt[mrt.decision_bin == 246]["run_time"].item() == 1200.0
    mdt_f = fw[(fw.app == "dlio") & (fw.policy == "MDT")]["run_time"].to_numpy()
    mdt_o = ow[(ow.app == "dlio") & (ow.policy == "MDT")]["run_time"].to_numpy()
    assert np.array_equal(mdt_f, mdt_o)  # starting now does not depend on the forecast
    summary = study.summary()
    assert {"oracle_run_time", "extra_total_time"} <= set(summary.columns)
    md["mode"] = "interval"
    with pytest.raises(IosightError, match="lead-mode"):
        forecast_study(warehouse, "fake")


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("nan.csv", "is_burst\n0\n\n1\n", r"0/1 or true/false; 1 value\(s\) do not, the first nan"),
        ("gap.csv", "x,is_burst\n1,0\n2,\n3,1\n", r"the first nan at data row 2"),
        ("frac.csv", "is_burst\n0\n0.6\n0\n", r"the first 0\.6 at data row 2"),
        ("word.csv", "burst\nyes\n", r"the first 'yes'"),
        ("empty.csv", "", r"cannot be read as a burst series"),
        ("header.csv", "is_burst\n", r"holds no rows"),
        ("junk.parquet", "not parquet", r"cannot be read as a burst series"),
        ("text.txt", "0001\n10x0\n", r"line 2 has 'x'"),
        ("blank.txt", "\n \n", r"holds no 0/1 values"),
    ],
)
def test_read_burst_series_refuses_what_is_not_a_flag(tmp_path, name, content, expected):
    """No flag is guessed: a gap or 0.6 is an error naming the file, not a clean bin."""
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(IosightError, match=expected) as err:
        read_burst_series(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


def test_read_burst_series_takes_booleans_and_integral_numbers(tmp_path):
    import pandas as pd

    (tmp_path / "b.csv").write_text("is_burst\ntrue\nFalse\nTRUE\n")
    assert read_burst_series(tmp_path / "b.csv").is_burst.tolist() == [True, False, True]
    (tmp_path / "f.csv").write_text("burst\n1.0\n0.0\n")
    assert read_burst_series(tmp_path / "f.csv").is_burst.tolist() == [True, False]
    pd.DataFrame({"is_burst": pd.array([True, False], dtype="boolean")}).to_parquet(
        tmp_path / "n.parquet"
    )
    assert read_burst_series(tmp_path / "n.parquet").is_burst.tolist() == [True, False]
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(IosightError, match="cannot be read"):
        read_burst_series(tmp_path / "b.bin")
