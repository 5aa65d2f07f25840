"""Ingest on a Dask cluster gives the same warehouse as local workers."""

import pytest

from iosight.demo.step_10_characterization import example_logs
from iosight.warehouse import Warehouse, ingest


def test_dask_scheduler_ingest_equals_local(tmp_path):
    distributed = pytest.importorskip("distributed")
    logs = example_logs()
    local = Warehouse(tmp_path / "local")
    ingest(logs, local, workers=1)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        remote = Warehouse(tmp_path / "dask")
        report = ingest(logs, remote, scheduler=cluster.scheduler_address)
    assert report.ok
    q = "select job_key, nprocs, start_time from jobs order by job_key"
    assert remote.sql(q).equals(local.sql(q))
    assert remote.tables() == local.tables()
