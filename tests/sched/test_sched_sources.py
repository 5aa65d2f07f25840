"""Burst series from the warehouse timeline or a file, and the simulation on them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from iosight._errors import IosightError
from iosight.sched.burst_aware import (
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
    assert len(series.bin_start) == 500 and not series.synthetic
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

        t = T0 if at is None else at
        return pd.DataFrame(
            {
                "lead": np.arange(24, 0, -1),  # unsorted on purpose
                "bin_start": t + 300.0 * np.arange(24, 0, -1),
                "burst": np.arange(24, 0, -1) <= 3,
                "probability": np.zeros(24),
                "severity": np.zeros(24, dtype=int),
            }
        )


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
