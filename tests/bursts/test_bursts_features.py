import numpy as np
import pandas as pd
import pytest

from iosight._errors import IosightError
from iosight.bursts import feature_names
from iosight.bursts._features import ema, ema_span_bins, make_features


def _timeline(n=3000, seed=0, width=300.0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    write = rng.lognormal(18, 1, n) + 5e9 * ((t % 37) == 0)  # periodic checkpoint spikes
    return pd.DataFrame(
        {
            "bin_start": 1.6e9 + width * t,
            "bin_width": width,
            "read_bytes": rng.lognormal(19, 1.5, n),
            "write_bytes": write,
            "read_ops": rng.poisson(50, n) * 1.0,
            "write_ops": write / 1e6,
            "read_time": rng.random(n),
            "write_time": write / 1e9,
            "active_jobs": rng.poisson(20, n),
        }
    )


def test_ema_hand_worked():
    # a = 2/(3+1) = 0.5: E = 0, 0.5*4 + 0.5*0 = 2, 0.5*8 + 0.5*2 = 5
    assert ema(np.array([0.0, 4.0, 8.0]), 3).tolist() == [0.0, 2.0, 5.0]
    assert [ema_span_bins(m, 300) for m in (60, 130, 500, 1000)] == [12, 26, 100, 200]
    assert ema_span_bins(60, 7200) == 1


def test_feature_sets():
    df = _timeline(50)
    assert list(make_features(df, "write", 1).columns) == ["write_bytes"]
    assert feature_names("read", 2) == ["read_bytes", "read_ops", "read_time"]
    f3 = make_features(df, "write", 3)
    assert f3.shape == (50, 9)
    assert np.allclose(f3["macd_short"], f3["ema60"] - f3["ema130"])
    assert np.allclose(f3["ema60"], ema(df["write_bytes"].to_numpy(), 12))
    with pytest.raises(IosightError, match="feature_set"):
        make_features(df, "write", 5)
    with pytest.raises(IosightError, match="direction"):
        make_features(df, "both", 1)


def test_no_feature_looks_ahead():
    df = _timeline(400)
    before = make_features(df, "write", 3)
    future = df.copy()
    rng = np.random.default_rng(9)
    for col in ("write_bytes", "write_ops", "write_time"):
        future.loc[200:, col] = rng.lognormal(25, 3, 200)
    after = make_features(future, "write", 3)
    pd.testing.assert_frame_equal(before.iloc[:200], after.iloc[:200])
    assert not np.allclose(before.iloc[200:], after.iloc[200:])
