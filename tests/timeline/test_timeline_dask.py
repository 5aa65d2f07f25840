"""A timeline built from job partitions on a Dask cluster equals the local build."""

import numpy as np
import pyarrow as pa
import pytest

from iosight.timeline import build_timeline
from iosight.warehouse import Warehouse


def _random_warehouse(path, jobs=60, seed=0):
    """SYNTHETIC jobs with POSIX records and, for some jobs, only job totals."""
    rng = np.random.default_rng(seed)
    keys = [f"job{i}" for i in range(jobs)]
    start = 1.6e9 + rng.uniform(0, 86400, jobs)
    run = rng.uniform(60, 7200, jobs)
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
    }
    totals = {"job_key": keys[-10:], "total_POSIX_BYTES_READ": rng.lognormal(15, 2, 10)}
    wh = Warehouse(path, create=True)
    wh.commit(
        {
            "jobs": [pa.table({"job_key": keys, "start_time": start, "end_time": start + run})],
            "posix": [pa.table(posix)],
            "job_totals": [pa.table(totals)],
        }
    )
    return wh


def test_dask_partitions_equal_local_build(tmp_path):
    distributed = pytest.importorskip("distributed")
    wh = _random_warehouse(tmp_path / "wh")
    local = build_timeline(wh, bin_width=600).to_pandas()
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        dask = build_timeline(
            wh, bin_width=600, scheduler=cluster.scheduler_address, partitions=3
        ).to_pandas()
    assert dask["bin_start"].tolist() == local["bin_start"].tolist()
    for col in local.columns:  # partials sum in another order: rounding of the largest bin
        tol = 1e-12 * np.abs(local[col]).max()
        assert np.allclose(dask[col], local[col], rtol=1e-12, atol=tol), col
    assert dask["read_bytes"].sum() == pytest.approx(
        wh.sql("select sum(POSIX_BYTES_READ) + (select sum(total_POSIX_BYTES_READ) "
               "from job_totals) as s from posix")["s"].iloc[0], rel=1e-12
    )  # fmt: skip
    assert dask["active_jobs"].max() >= 1
