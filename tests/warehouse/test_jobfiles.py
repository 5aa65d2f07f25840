"""One job read from only the files that hold it (for_job, the key index)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from iosight.data import example_logs
from iosight.report.dxt import dxt_view
from iosight.warehouse import Warehouse, compact, ingest, job_summary
from iosight.warehouse._jobfiles import JobScope, for_job, for_jobs
from tests_support import child_env, jobs_in_small_groups, same_rows

_COMPACT = (
    "import sys; from iosight.warehouse import Warehouse, compact; compact(Warehouse(sys.argv[1]))"
)


@pytest.fixture(scope="module")
def layered(tmp_path_factory) -> Path:
    """The example logs: half ingested two per commit then compacted, the rest two per
    commit after it (compaction outputs beside batch files)."""
    logs = [str(p) for p in example_logs()]
    wh = Warehouse(tmp_path_factory.mktemp("layered") / "wh", create=True)
    half = len(logs) // 2
    assert ingest(logs[:half], wh, workers=1, batch_size=2, compact=False).ok
    compact(wh)
    assert ingest(logs[half:], wh, workers=1, batch_size=2, compact=False).ok
    return wh.path


def _keys(wh: Warehouse) -> list[str]:
    return list(wh.sql("select job_key from jobs order by job_key")["job_key"])


def _same_summary(plain: Warehouse, indexed: Warehouse, key: str) -> None:
    a, b = job_summary(plain, key), job_summary(indexed, key)
    pd.testing.assert_series_equal(a.job, b.job)
    for name in ("modules", "access_sizes", "files", "osts"):
        same_rows(getattr(a, name), getattr(b, name))
    assert a.notes == b.notes


def _indexed(path: Path) -> Warehouse:
    """A reader of ``path`` with the key index, every table's files read into it."""
    wh = Warehouse(path)
    wh.key_index = True
    scope = for_job(wh, "any")
    scope.connect(wh.tables())
    scope._index.wait()
    return wh


def test_a_job_summary_is_the_same_read_from_its_files_only(layered):
    plain, indexed = Warehouse(layered), _indexed(layered)
    assert for_job(plain, "x") is plain  # a one-shot reader keeps its whole views
    pruned = 0
    for key in _keys(plain):
        _same_summary(plain, indexed, key)
        scope = for_job(indexed, key)
        assert isinstance(scope, JobScope)
        scope.connect(["posix"])
        entries = indexed.table_entries("posix")
        files = scope._index.holding(entries, scope._key_hashes)
        pruned += len(files) < len(entries)
        want = plain.sql("select count(*) n from posix where job_key = ?", [key])["n"][0]
        assert want == 0 or files  # a job with POSIX records has its file
    assert pruned  # the index narrowed the files down for some job


def test_dxt_and_names_of_a_job_are_the_same_from_its_files_only(layered):
    plain, indexed = Warehouse(layered), _indexed(layered)
    seen = 0
    for key in _keys(plain):
        if plain.has_table("dxt_posix"):
            a, b = dxt_view(plain, key), dxt_view(for_job(indexed, key), key)
            assert (a.kind, a.total, a.rank_width, a.time_width) == (
                b.kind, b.total, b.rank_width, b.time_width,
            )  # fmt: skip
            same_rows(a.rows, b.rows)
            seen += a.total > 0
        query = "select * from names where job_key = ? order by all"
        pd.testing.assert_frame_equal(
            plain.sql(query, [key]), for_job(indexed, key).sql(query, [key])
        )
    assert seen or not plain.has_table("dxt_posix")


def test_several_jobs_read_from_their_files_only_are_the_same(layered):
    """for_jobs (a page of jobs' bytes): the files that hold any of the keys, no other."""
    plain, indexed = Warehouse(layered), _indexed(layered)
    keys = _keys(plain)
    query = "select * from job_totals where job_key in (select unnest(?)) order by job_key"
    for some in (keys[:1], keys[1::3], keys[-2:], keys):
        scope = for_jobs(indexed, some)
        pd.testing.assert_frame_equal(plain.sql(query, [some]), scope.sql(query, [some]))
        entries = indexed.table_entries("job_totals")
        held = plain.sql(
            "select distinct filename from read_parquet(?, filename = true) "
            "where job_key in (select unnest(?))",
            [[e.path for e in entries], some],
        )
        assert sorted(scope._index.holding(entries, scope._key_hashes)) == sorted(held["filename"])


def test_a_file_without_statistics_or_sorted_keys_is_still_read(tmp_path, layered):
    """The index reads each file's keys, not its statistics: a committed file written
    without statistics, its keys out of order, is read for the jobs it holds."""
    path = Path(shutil.copytree(layered, tmp_path / "wh"))
    plain = Warehouse(path)
    key = plain.sql("select job_key, count(*) n from posix group by 1 order by n desc")
    key = key["job_key"][0]
    rows = plain.arrow("select * from posix where job_key = ? order by rank desc", [key])
    other = plain.arrow("select * from posix where job_key <> ? limit 3", [key])
    import pyarrow as pa

    mixed = pa.concat_tables([other.slice(0, 1), rows, other.slice(1)])
    pq.write_table(mixed, path / "tables/posix/part-99999999999999999999-nostats.parquet",
                   write_statistics=False)  # fmt: skip
    plain, indexed = Warehouse(path), _indexed(path)  # views over the new file
    _same_summary(plain, indexed, key)
    n = for_job(indexed, key).sql("select count(*) n from posix where job_key = ?", [key])
    assert n["n"][0] == 2 * len(rows)


def test_a_scope_made_before_a_compaction_reads_to_the_end(tmp_path, layered):
    path = Path(shutil.copytree(layered, tmp_path / "wh"))
    indexed = _indexed(path)
    key = indexed.sql("select max(job_key) k from posix")["k"][0]
    query = "select * from posix where job_key = ? order by all"
    want = Warehouse(path).sql(query, [key])
    scope = for_job(indexed, key)
    pd.testing.assert_frame_equal(scope.sql(query, [key]), want)
    assert len(want)
    subprocess.run([sys.executable, "-c", _COMPACT, str(path)], env=child_env(), check=True)
    pd.testing.assert_frame_equal(scope.sql(query, [key]), want)  # the files it listed
    pd.testing.assert_frame_equal(for_job(indexed, key).sql(query, [key]), want)


def test_closing_a_scope_closes_its_cursor_not_the_warehouses_connection(layered):
    wh = _indexed(layered)
    keys = _keys(wh)[:2]
    query = "select count(*) from posix where job_key in (select unnest(?))"
    scope = for_jobs(wh, keys)
    want = scope.rows(query, [keys]).values
    con = wh.connect(())
    scope.close()
    assert con.execute("select 1").fetchall() == [(1,)] and wh.connect(()) is con
    assert scope.rows(query, [keys]).values == want  # its views made again


@pytest.fixture(scope="module")
def grouped(tmp_path_factory, layered) -> tuple[Path, int]:
    """The layered warehouse with ``jobs`` in one file of 2-row groups, no statistics,
    and the number of row groups."""
    path = Path(shutil.copytree(layered, tmp_path_factory.mktemp("grouped") / "wh"))
    return path, jobs_in_small_groups(path)


def _row_groups_scanned(con, query: str, params: list, out: Path) -> int:
    """The row groups DuckDB scanned for ``query`` on cursor ``con`` (its profile)."""
    import json

    con.execute("pragma enable_profiling = 'json'")
    con.execute(f"pragma profiling_output = '{out}'")
    con.execute(query, params).fetchall()
    con.execute("pragma disable_profiling")
    return json.loads(out.read_text())["query"]["total_row_groups_scanned"]


def test_a_key_is_looked_up_in_jobs_in_only_its_row_groups(grouped, tmp_path):
    """``jobs`` (sorted by start time) is read at the key's rows only: one row group of
    many, where the whole view scans them all; the answers are the same."""
    from iosight.warehouse import find_job

    path, groups = grouped
    plain, indexed = Warehouse(path), _indexed(path)
    query = "select * from jobs where job_key = ?"
    keys = _keys(plain)
    assert groups >= 4 and len(keys) > groups  # several jobs a row group, many groups
    for key in keys:
        scope = for_job(indexed, key)
        pd.testing.assert_frame_equal(plain.sql(query, [key]), scope.sql(query, [key]))
        assert find_job(indexed, key) == key == find_job(indexed, key[:10])
        _same_summary(plain, indexed, key)
        prof = tmp_path / "profile.json"
        assert _row_groups_scanned(scope.connect(["jobs"]), query, [key], prof) == 1
        assert _row_groups_scanned(plain.connect(["jobs"]), query, [key], prof) == groups
    rows = scope._index.holding(indexed.table_entries("jobs"), scope._key_hashes)
    want = plain.sql("select file_row_number r from read_parquet(?, file_row_number = true) "
                     "where job_key = ?", [list(rows), key])["r"].tolist()  # fmt: skip
    assert list(rows.values()) == [want]  # the key's row, no other


def test_the_index_reads_each_files_keys_from_its_dictionaries(tmp_path):
    """_hashes: every key of every row group once (plain and dictionary-encoded columns),
    nulls left out; a file without the column holds no key; one unreadable may hold any.
    The hash is 64-bit FNV-1a's upper half, as computed here byte by byte."""
    import pyarrow as pa

    from iosight.warehouse._jobfiles import _hashes

    def fnv(key: str) -> int:
        h = 0xCBF29CE484222325
        for b in key.encode():
            h = ((h ^ b) * 0x100000001B3) % 2**64
        return h >> 32

    keys = [f"{i:032x}" for i in range(0, 3000, 7)] + ["", "é-ok"]
    rows = pa.table({"job_key": [k for k in keys for _ in range(3)] + [None], "v": range(1294)})
    want = sorted({fnv(k) for k in keys})
    for dictionary in (True, False):
        path = tmp_path / f"d{dictionary}.parquet"
        pq.write_table(rows, path, row_group_size=100, use_dictionary=dictionary)
        assert _hashes(str(path))[0].tolist() == want
    pq.write_table(pa.table({"v": [1, 2]}), tmp_path / "none.parquet")
    assert len(_hashes(str(tmp_path / "none.parquet"))[0]) == 0
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not a parquet file PAR1")
    assert _hashes(str(tmp_path / "bad.parquet")) == (None, None)


def test_closing_the_index_stops_its_thread_and_pages_still_answer(layered):
    """At exit the index's thread is stopped and joined (a thread left inside DuckDB or
    Arrow while the interpreter tears down can abort the process); what it did not read
    is read whole, so a job's summary stays the same."""
    wh = Warehouse(layered)
    wh.key_index = True
    key = _keys(wh)[0]
    scope = for_job(wh, key)
    scope.connect(wh.tables())  # queues every table's files
    index = scope._index
    index.close()
    assert index._worker is None or not index._worker.is_alive()
    again = for_job(wh, key)
    again.connect(wh.tables())  # nothing new is read once closed
    assert index._worker is None
    _same_summary(Warehouse(layered), again, key)


@pytest.mark.parametrize("table", ["posix", "jobs"])
def test_the_index_looks_a_key_up_in_all_files_at_once_as_their_rows_say(tmp_path, table):
    """Once every file of a table is read, a lookup scans one array of them all
    (``_Packed``): the files that hold the keys, in their order; each key's row numbers
    where the table keeps them (``jobs``); and a file whose keys could not be read (it
    may hold any). The same before (file by file, files still queued) and after."""
    import os

    import numpy as np
    import pyarrow as pa

    from iosight.warehouse._jobfiles import KeyIndex
    from iosight.warehouse._keyfiles import hash_keys, string_array

    folder = tmp_path / table
    folder.mkdir()
    keys = [f"{i:016x}" for i in range(60)]
    for f in range(5):  # each key in one file or two; twice in a file but for jobs
        held = [k for i, k in enumerate(keys) if i % 5 == f or i % 7 == f]
        held = held if table == "jobs" else held * 2
        pq.write_table(pa.table({"job_key": held, "v": range(len(held))}),
                       folder / f"part-{f}.parquet", row_group_size=7)  # fmt: skip
    (folder / "part-9.parquet").write_bytes(b"PAR1 not a parquet file PAR1")
    entries = sorted(os.scandir(folder), key=lambda e: e.name)
    columns = {e.path: pq.read_table(e.path)["job_key"].to_pylist() for e in entries[:-1]}

    def want(some: list[str]) -> dict:
        found = {}
        for path, column in columns.items():
            rows = [i for i, k in enumerate(column) if k in some]
            if rows:
                found[path] = rows if table == "jobs" else None
        return {**found, entries[-1].path: None}

    def holding(index: KeyIndex, some: list[str]) -> dict:
        return index.holding(entries, np.unique(hash_keys(string_array(some))))

    index = KeyIndex()
    assert holding(index, keys[:1]) == {e.path: None for e in entries}  # none read yet
    index.wait()
    for some in [*([k] for k in keys), keys[::3], keys, ["absent"]]:
        got = holding(index, some)
        assert got == want(some) and list(got) == list(want(some))
    assert index._packed[str(folder)].entries is entries
    width = 8 if table == "jobs" else 4  # a hash, and a row number where kept
    assert index.held() == (6, width * sum(len(set(c)) if table != "jobs" else len(c)
                                           for c in columns.values()))  # fmt: skip


def test_a_jobs_rows_are_held_in_a_table_unless_there_are_too_many(layered, monkeypatch):
    """A scope of one job copies the job's rows of a table into a temporary table (its
    queries then bind a small table); past ``_HELD_ROWS`` rows it reads the job's files
    through a view instead. The summary is the same either way."""
    from iosight.warehouse import _jobfiles

    plain, indexed = Warehouse(layered), _indexed(layered)
    most = plain.sql("select job_key, count(*) n from posix group by 1 having n <= ? "
                     "order by n desc, 1", [_jobfiles._HELD_ROWS])  # fmt: skip
    key, rows = most["job_key"][0], int(most["n"][0])
    assert rows > 1

    def held(scope) -> set[str]:
        query = "select table_name from duckdb_tables() where temporary"
        return {t for (t,) in scope.connect(()).execute(query).fetchall()}

    scope = for_job(indexed, key)
    _same_summary(plain, scope, key)
    assert "posix" in held(scope) and "jobs" in held(scope)
    monkeypatch.setattr(_jobfiles, "_HELD_ROWS", rows - 1)
    scope = for_job(indexed, key)
    _same_summary(plain, scope, key)
    assert "posix" not in held(scope) and "jobs" in held(scope)  # a view of its files


def test_a_job_scope_knows_the_tables_that_hold_none_of_its_rows(layered):
    """``may_hold``: False only where no file of the table holds the job (a module it did
    not use), so a job page's query leaves that table out; the whole warehouse holds
    every table."""
    plain, indexed = Warehouse(layered), _indexed(layered)
    tables = [t for t in ("posix", "mpiio", "stdio", "h5d", "lustre", "heatmap")
              if plain.has_table(t)]  # fmt: skip
    left_out = 0
    for key in _keys(plain):
        scope = for_job(indexed, key)
        for table in tables:
            rows = plain.sql(f'select count(*) n from "{table}" where job_key = ?', [key])
            assert plain.may_hold(table)
            assert scope.may_hold(table) or rows["n"][0] == 0
            left_out += not scope.may_hold(table)
    assert left_out


def test_a_jobs_rows_beyond_duckdbs_memory_limit_are_read_through_a_view(layered):
    """Where DuckDB's memory limit leaves no room for the job's rows (a server's threads
    each hold one job's), the scope reads its files through a view: the same answer."""
    from iosight.warehouse import _jobfiles

    plain, indexed = Warehouse(layered), _indexed(layered)
    most = plain.sql("select job_key, count(*) n from posix group by 1 having n <= ? "
                     "order by n desc, 1", [_jobfiles._HELD_ROWS])  # fmt: skip
    key, rows = most["job_key"][0], int(most["n"][0])
    indexed.connect().execute("set memory_limit = '2MB'")  # the queries fit, the copy not
    scope = for_job(indexed, key)
    query = "select count(*) n, sum(POSIX_BYTES_READ) b from posix where job_key = ?"
    pd.testing.assert_frame_equal(scope.sql(query, [key]), plain.sql(query, [key]))
    assert scope.sql(query, [key])["n"][0] == rows
    temporary = "select table_name from duckdb_tables() where temporary"
    assert ("posix",) not in scope.connect(()).execute(temporary).fetchall()


def test_a_job_over_the_limit_is_not_copied_again_by_a_served_warehouse(layered):
    """A served warehouse remembers, for its set of files, the tables whose rows of a job
    were too many to hold: the next page of that job reads them through the view at
    once, not after copying them again."""
    from iosight.serve import ServedWarehouse
    from iosight.warehouse import _jobfiles

    served = ServedWarehouse(layered)
    most = served.sql("select job_key, count(*) n from posix group by 1 order by n desc, 1")
    key = most["job_key"][0]
    assert most["n"][0] > _jobfiles._HELD_ROWS  # the example logs' biggest job
    copied = []
    held = _jobfiles._held

    def counted(con, name, query, job):
        copied.append(name)
        return held(con, name, query, job)

    _jobfiles._held = counted
    try:
        for_job(served, key).connect(["posix", "jobs"])
        unheld = served.memo("rows not held", set)
        assert ("posix", key) in unheld and ("jobs", key) not in unheld
        assert sorted(copied) == ["jobs", "posix"]
        served.memo(f"job scope of thread {threading.get_ident()}", dict).clear()
        for_job(served, key).connect(["posix", "jobs"])  # a new scope of the same job
        assert sorted(copied) == ["jobs", "jobs", "posix"]  # posix read by its view at once
    finally:
        _jobfiles._held = held


def _damage(path: str, column: str | None = None) -> None:
    """Overwrite the data pages of ``column`` of the Parquet file ``path`` (every row
    group's), or its footer where None; the file keeps its size."""
    meta = pq.read_metadata(path)
    data = bytearray(Path(path).read_bytes())
    if column is None:
        spans = [(len(data) - 8 - meta.serialized_size + 4, len(data) - 8)]
    else:
        at = pq.read_schema(path).names.index(column)
        chunks = [meta.row_group(i).column(at) for i in range(meta.num_row_groups)]
        starts = [c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
                  for c in chunks]  # fmt: skip
        spans = [(a, a + c.total_compressed_size) for a, c in zip(starts, chunks, strict=True)]
    for a, b in spans:
        data[a:b] = b"\xff" * (b - a)
    Path(path).write_bytes(bytes(data))


def _files_holding(wh: Warehouse, table: str, key: str) -> list[str]:
    files = [str(p) for p in wh.table_files(table)]
    query = "select distinct filename f from read_parquet(?, filename = true) where job_key = ?"
    return list(wh.sql(query, [files, key])["f"])


def test_a_damaged_footer_of_a_jobs_file_is_one_clear_error(tmp_path, layered):
    """Scoping a job's table reads its files (their columns): a footer DuckDB cannot read
    fails the query with iosight's error, not DuckDB's."""
    from iosight._errors import IosightError

    path = Path(shutil.copytree(layered, tmp_path / "wh"))
    key = _keys(Warehouse(path))[0]
    for name in _files_holding(Warehouse(path), "jobs", key):
        _damage(name)
    indexed = Warehouse(path)
    indexed.key_index = True
    with pytest.raises(IosightError):
        for_job(indexed, key).sql("select * from jobs where job_key = ?", [key])


def test_a_job_whose_rows_cannot_be_copied_is_read_through_its_files(tmp_path, layered):
    """A column DuckDB cannot read fails the copy of the job's rows, not a query that
    does not read it: that query answers through the view of the job's files."""
    path = Path(shutil.copytree(layered, tmp_path / "wh"))
    plain = Warehouse(path)
    most = plain.sql("select job_key, count(*) n from posix group by 1 order by n, 1 desc")
    key, rows = most["job_key"][0], int(most["n"][0])
    for name in _files_holding(plain, "posix", key):
        _damage(name, "POSIX_OPENS")
    indexed = _indexed(path)
    query = "select count(*) n from posix where job_key = ?"
    assert for_job(indexed, key).sql(query, [key])["n"][0] == rows


def test_a_job_files_unreadable_rows_give_a_clear_error(tmp_path, layered):
    """A file whose data pages are damaged (its footer and sidecar intact) fails the
    job's query with iosight's error, read through the job's scope as through the whole
    table."""
    from iosight._errors import IosightError

    path = Path(shutil.copytree(layered, tmp_path / "wh"))
    plain = Warehouse(path)
    key = plain.sql("select job_key, count(*) n from posix group by 1 order by n desc")
    key = key["job_key"][0]
    held = plain.sql(
        "select distinct filename f from read_parquet(?, filename = true) where job_key = ?",
        [[str(p) for p in plain.table_files("posix")], key],
    )
    for name in held["f"]:
        data = bytearray(Path(name).read_bytes())
        data[4 : len(data) // 2] = b"\xff" * (len(data) // 2 - 4)  # pages, not the footer
        Path(name).write_bytes(bytes(data))
    indexed = _indexed(path)
    query = "select sum(POSIX_BYTES_READ) b from posix where job_key = ?"
    for reader in (Warehouse(path), for_job(indexed, key)):
        with pytest.raises(IosightError):
            reader.sql(query, [key])


def test_keys_of_files_forgotten_meanwhile_are_not_packed(tmp_path):
    """Two threads seeing two sets of a table's files: the one whose files the other's
    listing dropped does not pack them (it answers file by file, a dropped file as one
    that may hold any job)."""
    import os

    import numpy as np
    import pyarrow as pa

    from iosight.warehouse._jobfiles import KeyIndex, _stamp
    from iosight.warehouse._keyfiles import hash_keys, string_array

    folder = tmp_path / "posix"
    folder.mkdir()
    for f in range(3):
        pq.write_table(pa.table({"job_key": [f"k{f}"]}), folder / f"part-{f}.parquet")
    entries = sorted(os.scandir(folder), key=lambda e: e.name)
    old, new = entries[:2], entries[1:]
    index = KeyIndex()
    wanted = np.unique(hash_keys(string_array(["k0"])))
    index.holding(entries, wanted)
    index.wait()
    stamps = {e.path: _stamp(e) for e in old}
    assert not index._update(str(folder), stamps)  # thread one: all read
    index.holding(new, wanted)  # thread two forgets part-0
    assert index._pack(str(folder), old, stamps) is None
    assert index.holding(old, wanted) == {old[0].path: None}  # queued again: any job


def test_the_jobs_a_served_warehouse_remembers_not_to_hold_are_bounded(layered, monkeypatch):
    """Pages of ever more jobs too big to hold do not grow the served warehouse's memory:
    it remembers at most ``_UNHELD_MOST`` of them."""
    from iosight.serve import ServedWarehouse
    from iosight.warehouse import _jobfiles

    monkeypatch.setattr(_jobfiles, "_HELD_ROWS", 0)  # every job's rows too many
    monkeypatch.setattr(_jobfiles, "_UNHELD_MOST", 3)
    served = ServedWarehouse(layered)
    keys = list(served.sql("select distinct job_key from posix order by 1")["job_key"])
    assert len(keys) > 3
    for key in keys:
        for_job(served, key).connect(["posix"])
        assert 1 <= len(served.memo("rows not held", set)) <= 3
    assert ("posix", keys[-1]) in served.memo("rows not held", set)
