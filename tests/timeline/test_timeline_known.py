"""The timeline's sums per (bin, known-at bin), computed on demand (``known_sums``)."""

import numpy as np
import pandas as pd
import pyarrow as pa

from iosight.timeline import VALUE_COLUMNS, build_timeline, known_sums
from iosight.warehouse import Warehouse

W = 600.0
T0 = 1.6e9
WINDOWS = 3  # jobs start in 3 windows of 8 hours; the jobs of a window land together
SUMS = [*VALUE_COLUMNS, "active_jobs"]


def _warehouse(path, jobs=60, seed=0) -> tuple[Warehouse, np.ndarray]:
    """SYNTHETIC jobs with POSIX records (DXT segments for some), and job totals only for
    the last 10; each window's jobs are known at one time, 2 h after the window, so its
    jobs' contributions are one known-at bin's. Returns the warehouse and the windows'
    known-at times."""
    rng = np.random.default_rng(seed)
    keys = [f"job{i:02d}" for i in range(jobs)]
    window = np.arange(jobs) % WINDOWS
    start = T0 + window * 8 * 3600 + rng.uniform(0, 8 * 3600 - 7200, jobs)
    run = rng.uniform(60, 7200, jobs)
    landed = T0 + (window + 1) * 8 * 3600 + 7200 + 123.0
    job = rng.integers(0, jobs - 10, 400)  # the last 10 jobs have no records
    t0 = rng.uniform(0, 1, 400) * run[job]
    posix = {
        "job_key": [keys[j] for j in job],
        "rank": np.full(400, -1),
        "record_id": pa.array(np.arange(400), pa.uint64()),
        "POSIX_BYTES_READ": rng.lognormal(15, 2, 400),
        "POSIX_READS": rng.poisson(20, 400),
        "POSIX_F_READ_TIME": rng.exponential(2, 400),
        "POSIX_F_READ_START_TIMESTAMP": t0,
        "POSIX_F_READ_END_TIMESTAMP": t0 + rng.uniform(0, 1, 400) * (run[job] - t0),
        "POSIX_BYTES_WRITTEN": rng.lognormal(14, 2, 400),
        "POSIX_WRITES": rng.poisson(5, 400),
    }
    seg = np.arange(0, 400, 7)  # DXT segments of every 7th record place its reads
    dxt = {
        "job_key": [keys[j] for j in job[seg]],
        "rank": np.zeros(seg.size, np.int64),
        "record_id": pa.array(seg, pa.uint64()),
        "seq": np.zeros(seg.size, np.int64),
        "op": ["read"] * seg.size,
        "offset": np.zeros(seg.size, np.int64),
        "length": np.full(seg.size, 100),
        "start": t0[seg],
        "end": t0[seg] + 1000.0,
    }
    totals = {"job_key": keys[-10:], "total_POSIX_BYTES_READ": rng.lognormal(15, 2, 10),
              "total_STDIO_BYTES_WRITTEN": rng.lognormal(15, 2, 10)}  # fmt: skip
    wh = Warehouse(path, create=True)
    known = {"known_at": landed[window]}
    wh.commit({
        "jobs": [pa.table({"job_key": keys, "start_time": start, "end_time": start + run,
                           **known})],
        "posix": [pa.table(posix)], "dxt_posix": [pa.table(dxt)],
        "job_totals": [pa.table(totals)],
    })  # fmt: skip
    return wh, np.unique(landed)


def _by_bin(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.groupby("bin_start")[SUMS].sum()


def test_each_known_bin_holds_the_timeline_of_the_jobs_known_in_it(tmp_path):
    """Independent computation: the timeline of each window's jobs alone (build_timeline
    over its start times) is the known-at rows of its landing bin, bin for bin."""
    wh, landed = _warehouse(tmp_path / "wh")
    whole = build_timeline(wh, bin_width=W, span="all").to_pandas()
    got = known_sums(wh)
    assert list(got.columns) == ["bin_start", "bin_width", "known_start", *SUMS]
    assert np.array_equal(np.unique(got["known_start"]), np.floor(landed / W) * W)
    assert (got["bin_width"] == W).all()
    # summed over the known-at bins: the timeline, every bin and column
    total = _by_bin(got).reindex(whole["bin_start"], fill_value=0)
    for c in SUMS:
        assert np.allclose(total[c], whole[c], rtol=1e-12, atol=1e-6), c
    for i, k in enumerate(np.floor(landed / W) * W):
        lo = T0 + i * 8 * 3600
        part = build_timeline(wh, bin_width=W, since=lo, until=lo + 8 * 3600, span="all")
        want = part.to_pandas().set_index("bin_start")
        have = _by_bin(got[got["known_start"] == k]).reindex(want.index, fill_value=0)
        assert want["active_jobs"].sum() > 0 and want["read_bytes"].sum() > 0
        for c in SUMS:
            assert np.allclose(have[c], want[c], rtol=1e-12, atol=1e-6), (k, c)


def test_known_sums_follow_the_stored_builds_options(tmp_path):
    """The sums cover the stored timeline's jobs: a build over one window, hourly."""
    wh, landed = _warehouse(tmp_path / "wh")
    build_timeline(wh, bin_width=3600.0, since=T0, until=T0 + 8 * 3600, span="all")
    got = known_sums(wh)
    assert (got["bin_width"] == 3600.0).all()
    assert got["known_start"].unique().tolist() == [np.floor(landed[0] / 3600) * 3600]
