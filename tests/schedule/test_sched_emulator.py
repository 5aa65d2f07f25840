"""The burst emulator (Fig. 9) - RUNS REAL I/O for about 3 s on this machine.

Bins are scaled to 0.2 s and the job to about 1.5 bins, so this only checks that the
emulator runs, measures, compares and cleans up; the accuracy study is
``iosight schedule emulate`` (docs/schedule.md).
"""

from __future__ import annotations

import pytest

from iosight._errors import IosightError
from iosight.schedule import EmulatorConfig, emulate


@pytest.mark.slow
def test_emulator_measures_and_cleans_up(tmp_path):
    cfg = EmulatorConfig(bin_s=0.2, job_bins=1.5, repeats=1, directory=tmp_path)
    result = emulate(["0110000000"], cfg, policies=["MDT", "MRT"])
    assert list(tmp_path.iterdir()) == []  # the temporary directory is gone
    assert 0 < result.min_time <= result.max_time
    assert result.bin_s == pytest.approx(result.min_time / 1.5)
    runs = result.runs
    assert (runs["measured_s"] > 0).all()
    if len(runs) == 2:  # MRT waits for the bursts to pass
        assert runs["policies"].tolist() == ["MDT", "MRT"]
        assert runs["est_bins_s"].iloc[1] <= runs["est_bins_s"].iloc[0]
    else:
        assert runs["policies"].tolist() == ["MDT,MRT"]
    err = (runs["est_bins_s"] - runs["measured_s"]) / runs["measured_s"]
    assert err.tolist() == pytest.approx(runs["err_bins"].tolist())
    within = result.within()
    assert within["estimator"].tolist() == ["bins", "fractional"]
    assert within[["within_10pct", "within_20pct"]].stack().between(0, 1).all()
    assert (within["within_10pct"] <= within["within_20pct"]).all()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"writers": 4, "writer_file_mb": 64},  # 32 + 256 MiB > 256 MiB
        {"bin_s": 0.0},
        {"job_bins": 50},
        {"directory": "/nonexistent/iosight"},
    ],
)
def test_emulator_refuses_unsafe_settings(kwargs):
    with pytest.raises(IosightError):
        emulate(["01"], EmulatorConfig(**kwargs))
