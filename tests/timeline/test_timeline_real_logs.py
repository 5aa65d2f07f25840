"""The timeline of real Darshan logs holds exactly their POSIX + STDIO bytes."""

import pytest

from iosight.timeline import build_timeline

# logs with DXT segments and HEATMAP bins, so every placement path runs on real data
PATTERNS = ("*heatmap*", "*_dxt*", "*dxt-*", "*dlio_logs*2110482*")


def test_real_logs_conserve_bytes(shared, tmp_path):
    from iosight.warehouse import Warehouse, ingest

    root = shared("darshan-logs")
    paths = sorted({p for pat in PATTERNS for p in root.glob(pat)})
    assert len(paths) >= 8
    wh = Warehouse(tmp_path / "wh", create=True)
    ingest(paths, wh, workers=2)
    assert wh.has_table("dxt_posix") and wh.has_table("heatmap")
    t = build_timeline(wh, bin_width=3600.0).to_pandas()
    for d, col in (("read", "BYTES_READ"), ("write", "BYTES_WRITTEN")):
        want = sum(
            wh.sql(f'select sum(greatest(coalesce("{m.upper()}_{col}", 0), 0)) s from {m}')["s"]
            .fillna(0)
            .item()
            for m in ("posix", "stdio")
            if wh.has_table(m)
        )
        assert want > 0
        assert t[f"{d}_bytes"].sum() == pytest.approx(want, rel=1e-12)
