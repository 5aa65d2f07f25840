"""Summit 2021 job totals (real): ingested, then spread over each job's run time."""

import numpy as np
import pytest

from iosight.timeline import build_timeline


def test_summit_app_timeline(shared, tmp_path):
    import pandas as pd

    from iosight.warehouse import Warehouse, ingest

    src = shared("datasets", "summit_darshan_total_2021", "darshan_total", "App1.parquet")
    wh = Warehouse(tmp_path / "wh", create=True)
    ingest([src], wh, workers=1)
    t = build_timeline(wh).to_pandas()
    raw = pd.read_parquet(src)
    for d, c in (("read", "BYTES_READ"), ("write", "BYTES_WRITTEN")):
        want = np.nansum(raw[f"total_POSIX_{c}"].clip(lower=0)) + np.nansum(
            raw[f"total_STDIO_{c}"].clip(lower=0)
        )
        assert t[f"{d}_bytes"].sum() == pytest.approx(want, rel=1e-12)  # MPI-IO not added
    origin = np.floor(raw["start_time"].min() / 300) * 300
    span = raw["end_time"].max() - origin
    assert len(t) == int(span // 300) + 1
    assert (np.diff(t["bin_start"]) == 300).all()
    # a job is active in the bins from floor(start) to ceil(end) - 1 (at least its first)
    first = np.floor((raw["start_time"] - origin) / 300)
    last = np.maximum(np.ceil((raw["end_time"] - origin) / 300) - 1, first)
    assert t["active_jobs"].sum() == (last - first + 1).sum()
