"""Compaction's runs of files of narrow key ranges, and the reader of one key range."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest

from iosight.data import example_logs
from iosight.warehouse import Warehouse, _compact, compact, for_key_range, ingest
from iosight.warehouse._keyrange import _footer_facts, _united_columns
from tests_support import assert_same_warehouse


@pytest.fixture(scope="module")
def one_per_commit(tmp_path_factory) -> Warehouse:
    """Every example log ingested one per commit, never compacted."""
    wh = Warehouse(tmp_path_factory.mktemp("logs") / "wh", create=True)
    assert ingest([str(p) for p in example_logs()], wh, workers=1, batch_size=1, compact=False).ok
    return wh


@pytest.fixture(scope="module")
def parted(one_per_commit, tmp_path_factory) -> Warehouse:
    """The same, compacted into runs of files of a few jobs each (row groups of 16 rows,
    files of 4 KiB, lowered from 65,536 rows and 8 MiB)."""
    path = tmp_path_factory.mktemp("parted") / "wh"
    shutil.copytree(one_per_commit.path, path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_compact, "ROW_GROUP_ROWS", 16)
        mp.setattr(_compact, "PART_BYTES", 4 << 10)
        compact(Warehouse(path))
    return Warehouse(path)


def _keys_of(path) -> list[str]:
    return pq.read_table(path, columns=["job_key"]).column("job_key").to_pylist()


def test_a_compaction_writes_runs_of_files_of_disjoint_key_ranges(one_per_commit, parted):
    """Each run's files hold disjoint, increasing key ranges, every job in one file, and
    the warehouse holds what it held before, row for row."""
    assert_same_warehouse(parted, one_per_commit)
    runs = _compact.table_runs(parted, "posix")
    assert len(runs) == 1 and len(runs[0]) >= 3, runs  # one group, cut into files
    ranges = [
        _footer_facts(str(f))[:2] for f in sorted(runs[0], key=lambda f: _footer_facts(str(f))[:2])
    ]
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False)), ranges
    for f in runs[0]:
        keys = _keys_of(f)
        assert keys == sorted(keys)
    held = [set(_keys_of(f)) for f in runs[0]]
    assert sum(len(k) for k in held) == len(set().union(*held))  # a job in one file


def test_a_run_is_tiered_and_merged_as_one(parted, monkeypatch):
    """The files of a run count as one run of their summed size: a run under half the
    target is small as a whole, one at or over it is left alone."""
    runs = _compact.table_runs(parted, "posix")
    size = _compact.run_bytes(runs[0])
    assert all(f.stat().st_size < size for f in runs[0])
    monkeypatch.setattr(_compact, "TARGET_BYTES", 2 * size + 2)
    assert _compact.small_runs(parted, "posix") == runs
    monkeypatch.setattr(_compact, "TARGET_BYTES", 2 * size)
    assert _compact.small_runs(parted, "posix") == []
    assert _compact.merge_groups(runs) == []  # a lone run is no group


def test_a_full_output_of_before_runs_is_cut_by_compact(one_per_commit, tmp_path, monkeypatch):
    """An output of a compaction before runs (one file of the whole key range, at least
    half the target) is cut into a run by ``iosight compact``; ``jobs``, sorted by start
    time, is left whole."""
    path = tmp_path / "wh"
    shutil.copytree(one_per_commit.path, path)
    compact(Warehouse(path))  # one file per table: the layout of before
    wh = Warehouse(path)
    folder = path / "tables" / "posix"
    (before,) = wh.table_files("posix")
    old = before.with_name(before.name.removesuffix("-0.parquet") + ".parquet")
    before.rename(old)  # the name a compaction gave its output before runs
    layout = (folder / "_compacted.json").read_text().replace(before.name, old.name)
    (folder / "_compacted.json").write_text(layout)
    wh = Warehouse(path)
    assert _compact.wide_files(wh, "posix") == []  # under half the target
    monkeypatch.setattr(_compact, "TARGET_BYTES", old.stat().st_size)
    monkeypatch.setattr(_compact, "ROW_GROUP_ROWS", 16)
    monkeypatch.setattr(_compact, "PART_BYTES", 4 << 10)
    assert _compact.wide_files(wh, "posix") == [[old]]
    jobs = wh.table_files("jobs")
    report = compact(wh)
    assert report.files_before["posix"] == 1 < report.files_after["posix"]
    assert Warehouse(path).table_files("jobs") == jobs
    assert_same_warehouse(Warehouse(path), one_per_commit)


def _cuts(wh: Warehouse) -> list[tuple[str | None, str | None]]:
    keys = sorted(wh.sql("select job_key from jobs")["job_key"])
    cut = [keys[len(keys) // 3], keys[2 * len(keys) // 3]]
    return [(None, cut[0]), (cut[0], cut[1]), (cut[1], None), (keys[1], keys[2])]


@pytest.mark.parametrize("table", ["posix", "dxt_posix", "jobs", "names"])
def test_a_key_range_reads_what_the_whole_table_holds_in_it(parted, table):
    """Every row of the range and no other, with the whole table's columns, listing only
    the files that overlap it (a narrow range: fewer than the table's)."""
    for lo, hi in _cuts(parted):
        scope = for_key_range(parted, lo, hi)
        try:
            cond = " and ".join(
                [f"job_key >= '{lo}'"] * (lo is not None) + [f"job_key < '{hi}'"] * (hi is not None)
            )
            q = f'select * from "{table}" where {cond} order by all'
            assert scope.column_names(table) == parted.column_names(table)
            assert scope.arrow(q).equals(parted.arrow(q)), (table, lo, hi)
        finally:
            scope.close()
    lo, hi = _cuts(parted)[-1]
    narrow = for_key_range(parted, lo, hi)
    if table in ("posix", "names"):
        assert len(narrow.table_files(table)) < len(parted.table_files(table))
    narrow.close()


@pytest.mark.parametrize(("table", "united"), [("job_totals", True), ("posix", False)])
def test_a_key_range_unites_its_files_by_name_only_where_their_schemas_differ(
    one_per_commit, table, united
):
    """The example logs' ``job_totals`` files hold different columns: the scope's view
    unites them by name; their ``posix`` files share one schema: read as they are
    (DuckDB's union holds every file's footer through a query). Either way a range
    answers as the whole table does."""
    assert len(one_per_commit.table_entries(table)) > 1
    for lo, hi in [*_cuts(one_per_commit), (None, None)]:
        scope = for_key_range(one_per_commit, lo, hi)
        try:
            view = (
                scope.connect([table])
                .execute("select sql from duckdb_views() where view_name = ?", [table])
                .fetchall()[0][0]
            )
            schemas = {_footer_facts(e.path)[2] for e in scope.table_entries(table)}
            assert ("union_by_name" in view.lower()) == (len(schemas) > 1), (lo, hi)
            if (lo, hi) == (None, None):
                assert (len(schemas) > 1) == united
            cond = " and ".join(
                ["true"] + [f"job_key >= '{lo}'"] * (lo is not None)
                + [f"job_key < '{hi}'"] * (hi is not None)
            )  # fmt: skip
            q = f'select * from "{table}" where {cond} order by all'
            assert scope.arrow(q).equals(one_per_commit.arrow(q)), (lo, hi)
        finally:
            scope.close()


def test_a_table_without_a_file_in_the_range_is_empty_with_its_columns(parted):
    scope = for_key_range(parted, "~", None)  # past every hex key
    try:
        assert scope.table_files("posix") == []
        got = scope.arrow("select * from posix")
        assert got.num_rows == 0 and got.column_names == parted.column_names("posix")
    finally:
        scope.close()


def test_closing_a_scope_closes_its_connection_not_the_warehouses(parted):
    con = parted.connect()
    scope = for_key_range(parted, None, "8")
    own = scope.connect(["posix"])
    assert own is not con
    scope.close()
    assert parted.sql("select count(*) n from posix")["n"][0] > 0
    with pytest.raises(Exception, match="closed"):
        own.execute("select 1")


def test_the_timeline_in_chunks_of_key_ranges_equals_one_chunk(parted):
    from iosight.timeline import build_timeline

    """Each chunk reads the files overlapping its keys on a connection of its own: the
    bins equal those of one chunk of every key, to the sums' rounding."""
    import numpy as np

    whole = build_timeline(parted, bin_width=600, chunk_jobs=10**6)
    chunked = build_timeline(parted, bin_width=600, chunk_jobs=2)
    assert chunked.column_names == whole.column_names and chunked.num_rows == whole.num_rows
    for name in whole.column_names:
        got, want = chunked.column(name).to_numpy(), whole.column(name).to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
    assert whole.column("write_bytes").to_numpy().sum() > 0


@pytest.mark.parametrize("table", ["job_totals", "posix", "jobs"])
def test_a_tables_columns_from_one_file_a_schema_equal_those_over_every_file(one_per_commit, table):
    """The example logs' modules differ, so their ``job_totals`` files do: a file of each
    distinct schema stands for its like, with the columns, order and types DuckDB gives
    the union of every file."""
    from iosight.warehouse import table_columns

    entries = one_per_commit.table_entries(table)
    every = _united_columns(table, [e.path for e in entries])
    schemas = {_footer_facts(e.path)[2] for e in entries}
    assert table_columns(one_per_commit, table) == every
    assert len(schemas) < len(entries)
    if table == "job_totals":
        assert len(schemas) > 1  # the case that needs the union


def test_the_footers_of_files_merged_away_are_not_kept(one_per_commit, tmp_path):
    """A long-lived warehouse object keeps what it read of each file's footer only while
    the file is in the table."""
    from iosight.warehouse import table_columns
    from iosight.warehouse._keyrange import _ranges_of

    wh = Warehouse(shutil.copytree(one_per_commit.path, tmp_path / "wh"))
    table_columns(wh, "posix")
    before = set(_ranges_of(wh)._files)
    compact(wh)
    table_columns(wh, "posix")
    live = {e.path for e in wh.table_entries("posix")}
    assert before - live  # compaction merged files away
    assert set(_ranges_of(wh)._files) == live


def test_runs_past_the_target_are_merged_in_tiers(one_per_commit, tmp_path, monkeypatch):
    """In a table sorted by job key, full runs (at or past the target, never merged
    again before) are tiered too: once a tier holds enough of them they merge into one
    run of narrow files, the warehouse holding what it held, row for row; ``jobs``,
    sorted by start time, keeps its full outputs as they are."""
    path = tmp_path / "wh"
    shutil.copytree(one_per_commit.path, path)
    wh = Warehouse(path)
    monkeypatch.setattr(_compact, "ROW_GROUP_ROWS", 16)
    monkeypatch.setattr(_compact, "PART_BYTES", 4 << 10)
    for table in ("posix", "jobs"):  # a run of each three commits
        files = wh.table_files(table)
        groups = [files[i : i + 3] for i in range(0, len(files) - len(files) % 3, 3)]
        _compact._compact_table(wh, table, groups)
    wh = Warehouse(path)
    runs = _compact.table_runs(wh, "posix")
    assert len(runs) >= 3 and any(len(r) > 1 for r in runs), runs
    smallest = min(_compact.run_bytes(r) for r in runs[:3])
    monkeypatch.setattr(_compact, "TARGET_BYTES", smallest)  # the first three are full
    monkeypatch.setattr(_compact, "AUTO_SMALL_FILES", 3)
    monkeypatch.setattr(_compact, "TIER_BYTES", 1 << 30)  # every run in tier 0
    full = [r for r in runs if _compact.run_bytes(r) >= smallest]
    assert _compact.due_groups(wh, "posix") == [[f for r in full for f in r]]
    assert all(_compact.run_bytes(r) >= smallest // 2 for r in full)  # not small
    jobs = wh.table_files("jobs")
    monkeypatch.setattr(_compact, "TARGET_BYTES", min(f.stat().st_size for f in jobs))
    assert _compact.due_groups(wh, "jobs") == []
    monkeypatch.setattr(_compact, "TARGET_BYTES", smallest)
    assert _compact.auto_compact(wh).files_before["posix"] == sum(len(r) for r in runs)
    after = _compact.table_runs(Warehouse(path), "posix")
    assert len(after) == len(runs) - len(full) + 1
    assert_same_warehouse(Warehouse(path), one_per_commit)
