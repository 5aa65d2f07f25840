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
    # every job: the 2024 dlio log is more than 3 interquartile ranges past these 2020-2022
    # logs, so the dense span would leave it out
    t = build_timeline(wh, bin_width=3600.0, span="all").to_pandas()
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


def test_jobs_are_active_wherever_their_io_lands(shared, tmp_path):
    """Darshan stores a job's end in whole seconds and HEATMAP bins end on their own edges,
    so I/O lands up to seconds past ``end_time`` (6.4 s for a worker of this workflow): in
    1-second bins every bin with I/O counts the job, and every other bin is exactly 0."""
    from iosight.timeline import VALUE_COLUMNS
    from iosight.warehouse import Warehouse, ingest

    paths = sorted(shared("darshan-logs").glob("*nonmpi_workflow*"))
    assert len(paths) == 7
    wh = Warehouse(tmp_path / "wh", create=True)
    ingest(paths, wh, workers=2)
    t = build_timeline(wh, bin_width=1.0).to_pandas()
    io = (t[list(VALUE_COLUMNS)] != 0).any(axis=1)
    assert io.sum() > 1000
    assert (t.loc[io, "active_jobs"] > 0).all()
