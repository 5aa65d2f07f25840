"""DXT segments and HEATMAP bins as PyDarshan reads them."""

from __future__ import annotations

import os

import numpy as np
import pytest

from iosight.trace import ProcessInfo, darshan_hash, trace
from iosight.trace._extra import Heatmap, spread

darshan = pytest.importorskip("darshan")


def test_dxt_and_heatmap_records(tmp_path):
    data = tmp_path / "d.bin"
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 21), dxt=True) as t:
        fd = os.open(data, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
        for _ in range(5):
            os.write(fd, b"y" * 1000)
        os.pread(fd, 300, 100)
        os.close(fd)
    res = t.finish()
    with darshan.DarshanReport(str(res.log), read_all=True) as r:
        (dxt,) = r.records["DXT_POSIX"].to_df()
        assert dxt["id"] == darshan_hash(str(data)) and dxt["rank"] == 0
        assert (dxt["write_count"], dxt["read_count"]) == (5, 1)
        w, rd = dxt["write_segments"], dxt["read_segments"]
        assert w["offset"].tolist() == [0, 1000, 2000, 3000, 4000]
        assert set(w["length"]) == {1000}
        assert rd[["offset", "length"]].values.tolist() == [[100, 300]]
        assert (w["start_time"] <= w["end_time"]).all()
        assert w["start_time"].is_monotonic_increasing
        hm = r.heatmaps["POSIX"].to_df(ops=["read", "write"])
        assert hm.to_numpy().sum() == 5300  # every byte lands in some bin


def test_spread_hand_worked():
    # 100 bytes over [0.05, 0.25] with 0.1 s bins: 25, 50, 25
    np.testing.assert_allclose(spread([0.05], [0.25], [100], 0.1, 4), [25, 50, 25, 0])
    # a zero-length operation falls in its start bin
    np.testing.assert_allclose(spread([0.31], [0.31], [7], 0.1, 4), [0, 0, 0, 7])


def test_heatmap_bins_double_when_the_run_is_long():
    h = Heatmap()
    h.add(np.array([0.0]), np.array([0.05]), np.array([10.0]), np.array([False]))
    h.add(np.array([29.9]), np.array([29.9]), np.array([4.0]), np.array([True]))
    assert h.width == pytest.approx(0.2)  # 29.9 s needs 300 bins of 0.1 s > 200
    _, name, data = h.record_bytes("POSIX", 0, 29.9)  # 29.9 / 0.2 = 149.5: 150 bins
    assert name == "heatmap:POSIX" and len(data) == 48 + 2 * 8 * 150
    assert h.read.sum() == 10 and h.write.sum() == 4


def test_heatmap_batch_equals_spreading_each_operation():
    """A batch mixing operations inside one bin and across bin boundaries, both directions,
    bins as :func:`spread` gives them one operation at a time."""
    rng = np.random.default_rng(7)
    t1 = np.sort(rng.uniform(0, 1.0, 300))
    t2 = t1 + np.where(rng.random(300) < 0.1, rng.uniform(0, 0.3, 300), 1e-6)
    nbytes = rng.integers(0, 5000, 300)
    is_write = rng.random(300) < 0.5
    h = Heatmap()
    h.add(t1, t2, nbytes, is_write)
    n = len(h.read)
    for sel, got in ((~is_write, h.read), (is_write, h.write)):
        ops = zip(t1[sel], t2[sel], nbytes[sel], strict=True)
        want = sum(spread([a], [b], [k], 0.1, n) for a, b, k in ops)
        np.testing.assert_allclose(got, want, rtol=1e-12)
