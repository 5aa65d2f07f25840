"""Ingest on a Dask cluster gives the same warehouse as local workers."""

import pytest

from iosight.data import example_logs
from iosight.warehouse import Warehouse, ingest


def test_dask_scheduler_ingest_equals_local(tmp_path):
    distributed = pytest.importorskip("distributed")
    logs = example_logs()
    local = Warehouse(tmp_path / "local", create=True)
    ingest(logs, local, workers=1)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        remote = Warehouse(tmp_path / "dask", create=True)
        report = ingest(logs, remote, scheduler=cluster.scheduler_address)
    assert report.ok
    q = "select job_key, nprocs, start_time from jobs order by job_key"
    assert remote.sql(q).equals(local.sql(q))
    assert remote.tables() == local.tables()


# Loaded by each Dask worker (also one its nanny restarts): logs named hang*.darshan hang.
_HANGING_READER = """
import time
import iosight.darshan as darshan

if not hasattr(darshan, "unpatched_read_source"):  # Dask may load a preload twice
    darshan.unpatched_read_source = darshan.read_source


def read_source(path, **kw):
    if "hang" in str(path).rsplit("/", 1)[-1]:
        time.sleep(600)
    return darshan.unpatched_read_source(path, **kw)


darshan.read_source = read_source
"""


@pytest.mark.slow
def test_dask_timeout_turns_a_hung_log_into_one_error_row(tmp_path):
    """A log that hangs its Dask worker fails after --timeout, once, like the local pool;
    the worker is restarted and the batch's other logs are committed."""
    distributed = pytest.importorskip("distributed")
    logs = example_logs()[:4]
    src = tmp_path / "logs"
    src.mkdir()
    for i, log in enumerate(logs):  # the hung log comes first in its batch
        name = "a_hang.darshan" if i == 0 else f"b{i}.darshan"
        (src / name).write_bytes(log.read_bytes())
    preload = tmp_path / "hanging_reader.py"
    preload.write_text(_HANGING_READER)
    wh = Warehouse(tmp_path / "wh", create=True)
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        preload=[str(preload)],
    ) as cluster:
        report = ingest([src], wh, scheduler=cluster.scheduler_address, timeout=3)
    assert (report.ingested, report.failed) == (3, 1)
    errors = wh.sql("select source_path, error from ingest_errors")
    assert errors.values.tolist() == [[str(src / "a_hang.darshan"), "timed out after 3 s"]]
    ref = Warehouse(tmp_path / "ref", create=True)
    ingest([src / f"b{i}.darshan" for i in range(1, 4)], ref, workers=1)
    q = "select job_key, nprocs, start_time from jobs order by job_key"
    assert wh.sql(q).equals(ref.sql(q))
