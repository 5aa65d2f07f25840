"""Compaction: automatic after an ingest, killed at any step it resumes to the same
warehouse, readers never see both the old files and the new or neither, and its
memory does not grow with the number of files."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iosight.data import example_logs
from iosight.warehouse import Warehouse, _compact, compact, ingest
from tests_support import assert_same_warehouse, child_env, hold_warehouse_lock

# what ingest runs after its commits, the threshold lowered to 4 small files so that
# a dozen example logs reach it
_AUTO = (
    "import sys; from iosight.warehouse import Warehouse, _compact\n"
    "_compact.AUTO_SMALL_FILES = 4\n"
    "_compact.auto_compact(Warehouse(sys.argv[1]))\n"
)


def _logs() -> list[str]:
    return [str(p) for p in example_logs()]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Warehouse:
    """Every example log ingested one per commit, never compacted."""
    wh = Warehouse(tmp_path_factory.mktemp("ref") / "wh", create=True)
    assert ingest(_logs(), wh, workers=1, batch_size=1, compact=False).ok
    return wh


def _last() -> str:
    """The example log whose content no other one has (the one the ingest adds)."""
    logs = _logs()
    contents = [Path(p).read_bytes() for p in logs]
    return next(p for p, c in zip(logs, contents, strict=True) if contents.count(c) == 1)


@pytest.fixture(scope="module")
def all_but_one(tmp_path_factory) -> Path:
    """The example logs but :func:`_last`, ingested one per commit, never compacted."""
    path = tmp_path_factory.mktemp("most") / "wh"
    wh = Warehouse(path, create=True)
    most = [p for p in _logs() if p != _last()]
    assert ingest(most, wh, workers=1, batch_size=1, compact=False).ok
    return path


def _copy(src: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(src, dest)
    return dest


def _file_counts(wh: Warehouse) -> dict[str, int]:
    return {t: len(wh.table_files(t)) for t in wh.tables()}


@pytest.mark.parametrize(
    ("point", "nth"),
    [
        ("staged", 2),  # 2nd table's outputs written, no commit record: rolled back
        ("published", 2),  # its commit record written, outputs not moved: rolled forward
        ("compaction-moved", 2),  # its outputs in the table's folder, still hidden
        ("applied", 1),  # the 1st table's compaction done, the next not begun
    ],
)
def test_automatic_compaction_killed_at_each_step_equals_no_compaction(
    tmp_path, reference, point, nth
):
    """The automatic compaction is killed at a step of its 2nd table's commit; the
    reopened warehouse, and the same after compacting again, equal the uncompacted one."""
    target = _copy(reference.path, tmp_path / "wh")
    run = subprocess.run(
        [sys.executable, "-c", _AUTO, str(target)],
        env=child_env(IOSIGHT_TEST_CRASH_AT=f"{point}:{nth}"),
        timeout=300,
    )
    assert run.returncode == -signal.SIGKILL
    if point == "compaction-moved":
        # a reader while the compaction still held the lock: the outputs lie beside
        # the files they replace, and it sees the old files only
        holder = hold_warehouse_lock(target)
        try:
            assert_same_warehouse(Warehouse(target), reference)
        finally:
            holder.communicate("\n")
    resumed = Warehouse(target)  # opening it finishes or discards the killed commit
    assert not any((target / "_staging").iterdir()) and not any((target / "_commits").iterdir())
    assert_same_warehouse(resumed, reference)
    compact(resumed)
    assert set(_file_counts(resumed).values()) == {1}
    assert_same_warehouse(resumed, reference)


def test_ingest_compacts_by_itself_and_not_when_told_not_to(
    tmp_path, monkeypatch, reference, all_but_one
):
    """The tables with at least 4 small files (the threshold lowered from 16) after
    the last log's commit are merged into one file each; the others are left alone."""
    monkeypatch.setattr(_compact, "AUTO_SMALL_FILES", 4)
    many = {t: n for t, n in _file_counts(reference).items() if n >= 4}
    assert 0 < len(many) < len(reference.tables())
    for on in (True, False):
        wh = Warehouse(_copy(all_but_one, tmp_path / str(on)))
        report = ingest([_last()], wh, workers=1, compact=on)
        assert_same_warehouse(wh, reference)
        counts = _file_counts(wh)
        assert counts == _file_counts(reference) | (dict.fromkeys(many, 1) if on else {})
        assert (report.compaction.files_before if on else report.compaction) == (
            many if on else None
        )


_COMPACT = (
    "import sys; from iosight.warehouse import Warehouse, compact; compact(Warehouse(sys.argv[1]))"
)


def test_readers_that_began_before_a_compaction_read_to_the_end(tmp_path, reference):
    """A streaming scan (as the timeline's chunked scans) and a connection opened
    before a compaction (as a server's) still answer after it, from the files it
    replaced (kept for the grace period); a new reader reads the merged file; all
    three equal the uncompacted warehouse."""
    wh = Warehouse(_copy(reference.path, tmp_path / "wh"))
    query = 'select job_key, rank, record_id, "POSIX_BYTES_READ" from posix'
    want = reference.arrow(f"{query} order by all")
    batches = wh.connect().sql(query).to_arrow_reader(1)
    first = batches.read_next_batch()
    subprocess.run([sys.executable, "-c", _COMPACT, str(wh.path)], env=child_env(), check=True)
    streamed = pa.Table.from_batches([first, *batches])
    assert streamed.sort_by([(c, "ascending") for c in streamed.column_names]).equals(want)
    assert wh.arrow(f"{query} order by all").equals(want)  # its views name the old files
    fresh = Warehouse(wh.path)
    assert len(fresh.table_files("posix")) == 1
    assert fresh.arrow(f"{query} order by all").equals(want)


def test_replaced_files_are_deleted_after_the_grace_period(tmp_path, reference):
    wh = Warehouse(_copy(reference.path, tmp_path / "wh"))
    before = len(list((wh.path / "tables" / "posix").glob("*.parquet")))
    compact(wh)
    assert len(list((wh.path / "tables" / "posix").glob("*.parquet"))) == before + 1
    assert wh.purge_superseded("posix") == 0  # within the grace period: kept
    assert wh.purge_superseded("posix", grace=0) == before
    assert [f.name for f in (wh.path / "tables" / "posix").glob("*.parquet")] == [
        f.name for f in wh.table_files("posix")
    ]
    assert_same_warehouse(wh, reference)


_MEMORY = """
import resource, sys
from iosight.warehouse import Warehouse, _compact
_compact.GROUP_FILES = 10
report = _compact.compact(Warehouse(sys.argv[1]))
assert report.files_before["rows"] == int(sys.argv[2]), report
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _synthetic_warehouse(path: Path, files: int, rows: int = 8_000) -> Path:
    """A warehouse of one table, ``files`` files of ``rows`` synthetic rows each,
    written straight into the table's folder as commits leave them."""
    import numpy as np

    Warehouse(path, create=True)
    folder = path / "tables" / "rows"
    folder.mkdir()
    rng = np.random.default_rng(files)
    for i in range(files):
        table = pa.table(
            {c: rng.integers(0, 2**40, rows) for c in ("read", "written", "opens", "seeks")}
        )
        pq.write_table(table, folder / f"part-{i:020d}-synthetic-0.parquet")
    return path


def _compaction_peak_kib(path: Path, files: int) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY, str(path), str(files)],
        env=child_env(),
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.split()[-1])


def test_compaction_memory_does_not_grow_with_the_number_of_files(tmp_path):
    """Merged in groups (10 files here, 256 by default), 50 and 200 small files of
    synthetic rows peak alike (measured: 182 and 183 MB; merging the whole table at
    once, as compaction did before, 190 and 233 MB)."""
    small = _compaction_peak_kib(_synthetic_warehouse(tmp_path / "small", 50), 50)
    large = _compaction_peak_kib(_synthetic_warehouse(tmp_path / "large", 200), 200)
    assert large / small < 1.1, (small, large)


def test_a_full_output_is_not_merged_again(tmp_path, monkeypatch):
    """Groups aim at the target size and only files under half of it are small, so the
    next compaction merges the new files and leaves the full outputs as they are (a
    target of 64 KiB here, 64 MiB by default)."""
    monkeypatch.setattr(_compact, "TARGET_BYTES", 64 << 10)
    wh = Warehouse(_synthetic_warehouse(tmp_path / "wh", 40, rows=500))
    assert all(f.stat().st_size < 32 << 10 for f in wh.table_files("rows"))
    compact(wh)
    outputs = wh.table_files("rows")
    full = [f.name for f in outputs if f.stat().st_size >= 32 << 10]
    assert len(full) >= 4
    folder = wh.path / "tables" / "rows"
    for f in sorted(folder.glob("part-*.parquet"))[:3]:  # three more batches come in
        (folder / f.name.replace("part-", "part-9")).write_bytes(f.read_bytes())
    report = compact(Warehouse(wh.path))
    assert report.files_before == {"rows": len(outputs) + 3}
    assert report.files_after == {"rows": len(full) + 1}  # the new files in one
    assert list(report.peak_mb) == ["rows"] and report.peak_mb["rows"] > 10  # MB: Python alone
    assert report.line().endswith(f"peak {report.peak_mb['rows']:,.0f} MB (rows)")
    assert set(full) <= {f.name for f in wh.table_files("rows")}
    assert Warehouse(wh.path).sql("select count(*) n from rows")["n"][0] == 43 * 500


def test_groups_hold_readers_within_the_merges_budget(tmp_path, monkeypatch):
    """A group stops where its files' readers would pass the merge's budget (each file's
    largest row group), so sorted files are merged, not sent to DuckDB's sort; a file
    over the budget alone is no group."""
    from iosight.warehouse import _merge

    wh = Warehouse(_synthetic_warehouse(tmp_path / "wh", 12, rows=2_000))
    files = wh.table_files("rows")
    each = _merge.reader_bytes(files[0])
    assert all(_merge.reader_bytes(f) == each for f in files)
    monkeypatch.setattr(_merge, "READER_BUDGET", 5 * each)
    groups = _compact.merge_groups([[f] for f in files])
    assert [len(g) for g in groups] == [5, 5, 2]
    assert [f for g in groups for f in g] == files
    monkeypatch.setattr(_merge, "READER_BUDGET", each - 1)
    assert _compact.merge_groups([[f] for f in files]) == []


def _in_order(wh: Warehouse, table: str, columns: str) -> list[bool]:
    """Whether each of ``table``'s files holds its rows ordered by ``columns``."""
    return [
        wh.sql(
            f"select bool_and(ok) ok from (select ({columns}) >= lag(({columns})) over "
            f"(order by file_row_number) or lag(1) over (order by file_row_number) is null ok "
            f"from read_parquet('{f}', file_row_number = true))"
        )["ok"][0]
        for f in wh.table_files(table)
    ]


def test_dxt_segments_are_sorted_by_job_then_start_time(tmp_path, reference):
    """Ingest stages each job's DXT segments in start order, and compaction keeps them
    so (:data:`_compact.TABLE_SORT_COLUMNS`): a time window of a job then reads only
    the row groups it overlaps. The other tables keep the general order."""
    wh = Warehouse(_copy(reference.path, tmp_path / "wh"))
    staged = _in_order(wh, "dxt_posix", "job_key, start")
    assert len(staged) > 1 and all(staged)
    compact(wh)
    compacted = _in_order(wh, "dxt_posix", "job_key, start")
    assert len(compacted) < len(staged) and all(compacted)
    assert all(_in_order(wh, "jobs", "start_time, job_key"))


def test_a_long_lived_warehouse_object_reads_what_others_committed(tmp_path, all_but_one):
    """A notebook's warehouse object, opened before another writer ingested, compacted
    and deleted the replaced files, answers from the files the tables hold now (its views
    name their files, so they are made again)."""
    wh = Warehouse(_copy(all_but_one, tmp_path / "wh"))
    query = "select count(*) as n from posix"
    before = wh.arrow(query)["n"][0].as_py()
    other = Warehouse(wh.path)
    assert ingest([_last()], other, workers=1, compact=False).ok
    compact(other)
    for table in other.tables():
        other.purge_superseded(table, grace=0)
    after = Warehouse(wh.path).arrow(query)["n"][0].as_py()
    assert after > before
    assert wh.arrow(query)["n"][0].as_py() == after


def _append_and_compact(wh: Warehouse, appends: int, rows: int) -> tuple[list[int], int]:
    """``appends`` commits of ``rows`` SYNTHETIC rows to table ``rows``, the automatic
    compaction after each; the on-disk bytes each compaction read (the files it
    replaced) and the most files the table held after any of them."""
    import numpy as np

    rng = np.random.default_rng(7)
    read, most = [], 0
    for i in range(appends):
        ids = np.arange(i * rows, (i + 1) * rows)
        table = pa.table({"job_key": ids.astype(str), "bytes": rng.integers(0, 2**40, rows)})
        wh.write_table("rows", table, mode="append")
        before = {f.name: f.stat().st_size for f in wh.table_files("rows")}
        if _compact.auto_compact(wh) is not None:
            after = {f.name for f in wh.table_files("rows")}
            read.append(sum(size for name, size in before.items() if name not in after))
        most = max(most, len(wh.table_files("rows")))
    return read, most


def test_automatic_compaction_of_a_table_below_the_target_reads_the_new_files(
    tmp_path, monkeypatch
):
    """A table far below the 64 MB target, appended to 48 times with the automatic
    compaction after each (4 files a tier, tiers of 8 KiB x 4^k, lowered from 16 and
    256 KiB x 16^k): most compactions of the second half read the new files alone (4
    of 4 KiB), not the table so far, as the old compaction did (it merged the whole
    table each time); the table keeps fewer than 4 small files per tier, nothing lost
    or duplicated."""
    monkeypatch.setattr(_compact, "AUTO_SMALL_FILES", 4)
    monkeypatch.setattr(_compact, "TIER_BYTES", 8 << 10)
    monkeypatch.setattr(_compact, "TIER_FACTOR", 4)
    wh = Warehouse(tmp_path / "wh", create=True)
    read, most = _append_and_compact(wh, appends=48, rows=400)
    table = sum(f.stat().st_size for f in wh.table_files("rows"))
    late = sorted(read[len(read) // 2 :])
    assert late[len(late) // 2] <= 4 * (8 << 10) < table / 3, (late, table)
    assert most <= 4 * (_compact.size_tier(table) + 1), most
    counts = wh.sql("select count(*) n, count(distinct job_key) k from rows")
    assert counts["n"][0] == counts["k"][0] == 48 * 400
