"""The key sidecars (iosight.warehouse._keyfiles): written with each file as it enters
its table, never disagreeing with it (kill -9, compaction, rewrites), and not needed (a
warehouse without them reads each file's keys as before)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iosight.data import example_logs
from iosight.warehouse import Warehouse, compact, ingest, job_summary
from iosight.warehouse._jobfiles import for_job
from iosight.warehouse._keyfiles import (
    BY_ROW,
    hash_keys,
    key_hashes,
    read_keys,
    sidecar,
    string_array,
    write_keys,
)
from tests_support import killed_ingest


def _logs() -> list[str]:
    return [str(p) for p in example_logs()]


def _check_sidecars(wh: Warehouse) -> int:
    """Assert that every live job-keyed file has a sidecar holding its keys (as read from
    its column) and every sidecar has its file; return how many sidecars there are."""
    seen = 0
    for name in wh.tables():
        folder = wh.path / "tables" / name
        files = {str(f) for f in folder.glob("*.parquet")}
        for side in folder.glob(".*.keys"):
            assert str(side.parent / side.name[1:].removesuffix(".keys")) in files, side
        for entry in wh.table_entries(name):
            if "job_key" not in pq.read_schema(entry.path).names:
                continue
            got = read_keys(entry.path, entry.stat().st_size)
            assert got is not None, entry.path
            want = key_hashes([(entry.path, name in BY_ROW)])[0]
            assert got[0].tolist() == want[0].tolist()
            assert (got[1] is None) == (want[1] is None)
            if got[1] is not None:
                assert got[1].tolist() == want[1].tolist()
            seen += 1
    return seen


@pytest.mark.parametrize("point", ["staged", "published"])
def test_a_killed_commit_leaves_no_sidecar_that_disagrees(tmp_path, point):
    """Killed with its batch staged (sidecars written, no record: rolled back) or
    published (rolled forward), the warehouse reopened has a matching sidecar for each
    file and none left over."""
    target = tmp_path / "killed"
    killed_ingest(target, f"{point}:2", workers=1, batch_size=2, compact=False)
    assert list((target / "_staging").rglob(".*.keys"))  # the killed batch's sidecars
    resumed = Warehouse(target)
    assert not any((target / "_staging").iterdir())
    assert _check_sidecars(resumed) > 0


def test_a_compaction_replaces_the_sidecars_of_the_files_it_replaces(tmp_path):
    """Compaction's outputs come with their sidecars; the purge of the files they
    replaced deletes those files' sidecars with them."""
    wh = Warehouse(tmp_path / "wh", create=True)
    assert ingest(_logs(), wh, workers=1, batch_size=2, compact=False).ok
    before = _check_sidecars(wh)
    compact(wh)
    assert _check_sidecars(wh) < before
    with wh.writer_lock():
        for name in wh.tables():
            wh.purge_superseded(name, grace=0)
    sidecars = list((wh.path / "tables").rglob(".*.keys"))
    assert len(sidecars) == _check_sidecars(wh)


def test_a_rewritten_or_cut_sidecar_is_not_used(tmp_path):
    """A sidecar matches its file by size and footer: a file rewritten with other rows,
    or a sidecar cut short, reads as none (the index then reads the column)."""
    path = str(tmp_path / "jobs.parquet")
    keys = [f"{i:032x}" for i in range(50)]
    pq.write_table(pa.table({"job_key": keys}), path)
    write_keys([("jobs", path)])
    got = read_keys(path, os.path.getsize(path))
    assert got is not None and sorted(got[1].tolist()) == list(range(50))
    data = Path(sidecar(path)).read_bytes()
    Path(sidecar(path)).write_bytes(data[:-4])
    assert read_keys(path, os.path.getsize(path)) is None
    Path(sidecar(path)).write_bytes(data)
    pq.write_table(pa.table({"job_key": keys[::-1]}), path)  # other rows, another footer
    assert read_keys(path, os.path.getsize(path)) is None


def test_a_warehouse_without_sidecars_reads_the_keys_from_the_files(tmp_path):
    """Sidecars deleted (a warehouse written before them), the index's thread reads each
    file's keys, and a job's summary is the one read from every file."""
    wh = Warehouse(tmp_path / "wh", create=True)
    assert ingest(_logs(), wh, workers=1, batch_size=4, compact=False).ok
    for side in (wh.path / "tables").rglob(".*.keys"):
        side.unlink()
    indexed = Warehouse(wh.path)
    indexed.key_index = True
    key = wh.sql("select job_key from jobs order by job_key limit 1")["job_key"][0]
    scope = for_job(indexed, key)
    scope.connect(indexed.tables())
    assert scope.partial  # files not read yet: the thread reads them
    scope._index.wait()
    again = for_job(indexed, key)
    again.connect(indexed.tables())
    assert not again.partial
    a, b = job_summary(Warehouse(wh.path), key), job_summary(indexed, key)
    assert a.job.equals(b.job) and a.notes == b.notes


def test_a_forced_reingest_rewrites_the_sidecars_of_the_files_it_rewrites(tmp_path):
    """``--force`` deletes the old rows of its jobs from the files holding them, in place:
    each rewritten file gets a sidecar of its new keys."""
    wh = Warehouse(tmp_path / "wh", create=True)
    assert ingest(_logs(), wh, workers=1, batch_size=4, compact=False).ok
    assert ingest(_logs()[:3], wh, workers=1, force=True, compact=False).ok
    assert _check_sidecars(wh) > 0


@pytest.mark.parametrize("keys", [[], ["a"], ["", "é1", "x" * 40, "0123456789abcdef" * 2]])
def test_keys_made_from_their_buffers_are_the_keys_and_hash_alike(keys):
    """``string_array`` (no pandas import) is ``pa.array`` of the keys, hashes and all."""
    made = string_array(keys)
    assert made.to_pylist() == keys
    assert hash_keys(made).tolist() == hash_keys(pa.array(keys, pa.large_string())).tolist()
