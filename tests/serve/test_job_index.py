"""The served Job page reads a job from only its files: the same page either way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iosight.data import example_logs
from iosight.serve import _pages as pages
from iosight.serve._readonly import ServedWarehouse
from iosight.warehouse import Warehouse, compact, for_job, ingest, job_summary
from tests_support import jobs_in_small_groups, same_rows


@pytest.fixture(scope="module")
def layered(tmp_path_factory) -> Path:
    """The example logs in commits of three, the first half compacted."""
    logs = [str(p) for p in example_logs()]
    wh = Warehouse(tmp_path_factory.mktemp("served") / "wh", create=True)
    assert ingest(logs[: len(logs) // 2], wh, workers=1, batch_size=3, compact=False).ok
    compact(wh)
    assert ingest(logs[len(logs) // 2 :], wh, workers=1, batch_size=3, compact=False).ok
    return wh.path


def _page(wh: ServedWarehouse, key: str) -> tuple:
    """What the Job page shows of ``key``: its summary, time axis and insights."""
    s = job_summary(wh, key)
    kind, timeline = pages.job_timeline(wh, key)
    rows = timeline.rows if kind == "dxt" else timeline
    insights, why = pages.job_insights_table(wh, key)
    tables = [s.job.to_frame(), s.modules, s.access_sizes, s.files, s.osts, rows, insights]
    return kind, why, s.notes, tables


@pytest.fixture(scope="module", params=["as ingested", "jobs in small row groups"])
def served(request, layered, tmp_path_factory) -> Path:
    """The layered warehouse, and a copy whose ``jobs`` is one file of 2-row groups (read
    by the key's row numbers)."""
    if request.param == "as ingested":
        return layered
    path = Path(shutil.copytree(layered, tmp_path_factory.mktemp("grouped") / "wh"))
    jobs_in_small_groups(path)
    return path


def test_the_job_page_is_the_same_with_and_without_the_key_index(served):
    indexed, plain = ServedWarehouse(served), ServedWarehouse(served)
    plain.key_index = False
    assert indexed.key_index
    keys = list(plain.sql("select job_key from jobs order by 1")["job_key"])
    scope = for_job(indexed, keys[0])
    scope.connect(indexed.tables())
    scope._index.wait()  # every file's keys read: the pages below prune
    for key in keys:
        a, b = _page(plain, key), _page(indexed, key)
        assert a[:3] == b[:3]
        for x, y in zip(a[3], b[3], strict=True):
            if x is None or y is None:
                assert x is None and y is None
            else:
                same_rows(x, y)
    posix = indexed.table_entries("posix")
    assert len(for_job(indexed, keys[0])._index.holding(posix, scope._key_hashes)) < len(posix)


def test_a_thread_keeps_a_jobs_scope_while_its_files_stay(layered, tmp_path):
    """The Job page asks for its job's scope five times: a request thread gets the same
    one back (its views made once) once the index holds every file it reads, another
    thread its own, and a new set of files (a compaction) a new one."""
    import threading

    path = Path(shutil.copytree(layered, tmp_path / "wh"))
    wh = ServedWarehouse(path)
    key = wh.sql("select min(job_key) k from jobs")["k"][0]
    first = for_job(wh, key)
    first.connect(wh.tables())  # made before the index read the files: read whole
    assert first.partial and for_job(wh, key) is not first
    first._index.wait()
    scope = for_job(wh, key)
    scope.connect(wh.tables())
    assert not scope.partial and for_job(wh, key) is scope
    assert for_job(wh, key).sql("select job_key from jobs where job_key = ?", [key]).shape[0] == 1
    other: list = []
    worker = threading.Thread(target=lambda: other.append(for_job(wh, key)))
    worker.start()
    worker.join()
    assert other[0] is not scope
    compact(Warehouse(path))
    wh.refresh()
    assert for_job(wh, key) is not scope
