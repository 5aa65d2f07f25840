"""Compaction's merge of files already sorted by job key (iosight.warehouse._merge)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iosight.data import example_logs
from iosight.warehouse import Warehouse, _merge, ingest
from iosight.warehouse._compact import Merger, merge_files


def _file(path: Path, keys: list[str], starts: list[float]) -> Path:
    """A per-job table's file: ``keys`` and ``starts`` per row, and a payload column."""
    table = pa.table(
        {"job_key": keys, "start": starts, "seq": list(range(len(keys)))},
    )
    pq.write_table(table, path, row_group_size=3)  # several row groups per file
    return path


def _rows(path: Path) -> list[tuple]:
    return duckdb.sql(f"select job_key, start, seq from '{path}'").fetchall()


def _runs(files: list[Path], order: list[str]) -> _merge.Runs | None:
    """The group's runs, every slab's in one, or ``None`` where the merge would not take
    the files (:func:`~iosight.warehouse._merge.sorted_group` or the slabs refuse)."""
    group = _merge.sorted_group(files, order)
    if group is None:
        return None
    try:
        slabs = list(group.slabs())
    except _merge.Unmergeable:
        return None
    keys = pa.concat_arrays([s.keys for s in slabs]) if slabs else pa.array([], pa.string())
    arrays = (np.concatenate([getattr(s, a) for s in slabs] or [np.zeros(0, np.int64)])
              for a in ("file", "first", "stop"))  # fmt: skip
    return _merge.Runs(keys, *arrays)


def _group(files: list[Path], order: list[str]) -> _merge.SortedGroup:
    group = _merge.sorted_group(files, order)
    assert group is not None
    return group


@pytest.fixture
def sorted_files(tmp_path) -> list[Path]:
    """Three files, each sorted by job key, their keys interleaved across files."""
    return [
        _file(tmp_path / "a.parquet", ["a", "a", "d", "d", "d", "g"], [1, 2, 0, 5, 9, 1]),
        _file(tmp_path / "b.parquet", ["b", "e", "e", "h"], [3, 1, 2, 0]),
        _file(tmp_path / "c.parquet", ["c", "c", "f"], [7, 8, 1]),
    ]


def test_sorted_files_are_merged_job_by_job_without_a_sort(tmp_path, sorted_files):
    """The output holds every row once, in job key order, each job's rows in their
    order in its file (what a stable sort by job key gives)."""
    assert _runs(sorted_files, ["job_key", "start"]) is not None
    merger = Merger(tmp_path / "spill")
    (out,) = merge_files(merger, sorted_files, tmp_path / "out.parquet")
    assert not merger.opened  # no DuckDB for sorted runs
    rows = [r for f in sorted_files for r in _rows(f)]
    assert _rows(out) == sorted(rows, key=lambda r: r[0])
    assert pq.read_metadata(out).num_rows == 13


def _triples(ranges) -> list[tuple[int, int, int]]:
    """(file, first row, row after the last) arrays as a list of triples."""
    return list(zip(*(r.tolist() for r in ranges), strict=True))


def test_adjacent_runs_of_a_file_are_taken_as_one_range(tmp_path, sorted_files):
    """Runs that follow each other in one file and in the merge are one row range (one
    slice of the file's batch), so a file of many one-row jobs is not taken job by job."""
    contiguous = [
        _file(tmp_path / "x.parquet", ["a", "b", "b", "c"], [0, 0, 1, 0]),
        _file(tmp_path / "y.parquet", ["d", "e"], [0, 0]),
    ]
    runs = _runs(contiguous, ["job_key"])
    assert len(runs) == 5 and runs.keys.to_pylist() == ["a", "b", "c", "d", "e"]
    assert _triples(_merge.file_ranges(runs)) == [(0, 0, 4), (1, 0, 2)]
    interleaved = _runs(sorted_files, ["job_key"])
    ranges = _triples(_merge.file_ranges(interleaved))
    assert len(ranges) == len(interleaved) == 8  # a b c d e f g h: no two adjacent
    assert _triples((interleaved.file, interleaved.first, interleaved.stop)) == ranges
    assert interleaved.keys.to_pylist() == list("abcdefgh")


def test_a_job_in_several_files_keeps_its_rows_in_file_order(tmp_path):
    """With the job key the only sort column, a job's runs in several files follow each
    other in file order (a stable merge)."""
    files = [
        _file(tmp_path / "p.parquet", ["a", "b", "b"], [0, 0, 1]),
        _file(tmp_path / "q.parquet", ["b", "c"], [0, 0]),
        _file(tmp_path / "r.parquet", ["a", "b"], [0, 0]),
    ]
    runs = _runs(files, ["job_key"])
    assert runs.keys.to_pylist() == ["a", "a", "b", "b", "b", "c"]
    assert _triples((runs.file, runs.first, runs.stop)) == [
        (0, 0, 1),
        (2, 0, 1),
        (0, 1, 3),
        (1, 0, 1),
        (2, 1, 2),
        (1, 1, 2),
    ]


def test_windows_cut_the_ranges_at_fixed_rows_of_the_output():
    """Each window holds ``size`` rows of the output (the last fewer), the ranges that
    straddle its edges clipped."""
    ranges = (np.array([0, 1, 0]), np.array([0, 0, 4]), np.array([4, 2, 6]))
    got = [_triples(w) for w in _merge.windows(ranges, 3)]
    assert got == [[(0, 0, 3)], [(0, 3, 4), (1, 0, 2)], [(0, 4, 6)]]
    assert [_triples(w) for w in _merge.windows(ranges, 8)] == [_triples(ranges)]
    empty = (np.zeros(0, np.int64),) * 3
    assert list(_merge.windows(empty, 3)) == []


@pytest.mark.parametrize("window", [1, 2, 5, 64])
def test_the_output_is_the_same_whatever_the_window(tmp_path, sorted_files, monkeypatch, window):
    """Windows of any size (one row each, straddling jobs and files;
    holding the whole output) give the rows in merged order, in row groups of
    the size asked for."""
    monkeypatch.setattr(_merge, "_WINDOW_ROWS", window)
    out = tmp_path / "out.parquet"
    _merge.merge_runs(_group(sorted_files, ["job_key", "start"]), out, 4)
    rows = [r for f in sorted_files for r in _rows(f)]
    assert _rows(out) == sorted(rows, key=lambda r: r[0])
    meta = pq.read_metadata(out)
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4, 4, 4, 1]
    # each row group's dictionary holds its own keys, in order, and no other file's
    reader = pq.ParquetFile(out, read_dictionary=["job_key"])
    for i in range(meta.num_row_groups):
        keys = reader.read_row_group(i, columns=["job_key"])["job_key"].chunk(0)
        assert keys.dictionary.to_pylist() == sorted(set(keys.cast(pa.string()).to_pylist()))


def test_files_the_merge_cannot_take_are_sorted_by_duckdb(tmp_path, sorted_files, monkeypatch):
    """A file out of key order, a job in two files when further columns sort it, and
    files whose readers would hold too much: no runs, and merge_files still sorts."""
    unsorted = _file(tmp_path / "u.parquet", ["z", "a"], [0, 0])
    assert _runs([*sorted_files, unsorted], ["job_key"]) is None
    out_of_order = _file(tmp_path / "o.parquet", ["k", "k"], [5, 1])
    assert _runs([out_of_order], ["job_key", "start"]) is None
    assert _runs([out_of_order], ["job_key"]) is not None
    again = _file(tmp_path / "again.parquet", ["a"], [3])
    assert _runs([*sorted_files, again], ["job_key", "start"]) is None
    assert _runs([*sorted_files, again], ["job_key"]) is not None
    monkeypatch.setattr(_merge, "READER_BUDGET", 16)
    assert _runs(sorted_files, ["job_key"]) is None
    merger = Merger(tmp_path / "spill")
    (out,) = merge_files(merger, [*sorted_files, unsorted], tmp_path / "out.parquet")
    assert merger.opened
    merger.close()
    keys = [r[0] for r in _rows(out)]
    assert keys == sorted(keys) and len(keys) == 15


def test_ingest_stages_each_table_in_job_key_order(tmp_path):
    """A batch of many example logs: every per-job table's file is sorted by job key,
    so its compaction merges without sorting."""
    wh = Warehouse(tmp_path / "wh", create=True)
    assert ingest([str(p) for p in example_logs()], wh, workers=1, compact=False).ok
    checked = 0
    for name in ("posix", "dxt_posix", "names", "job_totals", "lustre"):
        files = wh.table_files(name)
        assert files and all(pq.read_metadata(f).num_rows > 1 for f in files)
        assert _runs(files, ["job_key"]) is not None, name
        checked += 1
    assert checked == 5
    # the sequence tables' numbers are staged delta- and byte-split-encoded, the others as
    # dictionaries
    dxt, posix = _encodings(wh.table_files("dxt_posix")[0]), _encodings(wh.table_files("posix")[0])
    assert "DELTA_BINARY_PACKED" in dxt["offset"] and "BYTE_STREAM_SPLIT" in dxt["start"]
    assert "DELTA_BINARY_PACKED" not in posix["rank"]
    assert "RLE_DICTIONARY" in posix["POSIX_READS"] and "RLE_DICTIONARY" not in dxt["offset"]


def _arrow_order(table: pa.Table, keys: pa.DictionaryArray) -> pa.Table:
    """The reference: Arrow's stable sort by (job key, start), nulls last."""
    import pyarrow.compute as pc

    word = pc.rank(keys.dictionary, tiebreaker="dense")
    by = pa.table({"key": word.take(keys.indices), "by": table["start"]})
    order = pc.sort_indices(by, sort_keys=[("key", "ascending"), ("by", "ascending")])
    return table.take(order).add_column(0, "job_key", keys.take(order).cast(pa.string()))


@pytest.mark.parametrize(
    ("words", "index", "starts"),
    [
        # pieces of jobs in key order (one dictionary word per piece), runs out of order,
        # ties: sorted job by job
        (["a", "a", "b"], [0, 0, 0, 1, 1, 2, 2, 2], [3, 1, 1, 0, 2, 5, 5, 4]),
        # in order already: no copy
        (["a", "b"], [0, 0, 1, 1], [1, 2, 0, 0]),
        # keys out of order, NaN and null starts: the general sort
        (["b", "a"], [0, 0, 1, 1, 1, 0], [None, float("nan"), 2, None, 1, -1]),
        # in key order, but a null start
        (["a"], [0, 0, 0], [2, None, 1]),
    ],
)
def test_staged_dxt_rows_sorted_as_arrow_sorts_them(words, index, starts):
    """Ingest's job-by-job NumPy sort of a staged DXT table (``_sorted_by_key``) gives
    the rows in the order of Arrow's stable sort by (job key, start), NaN and nulls too."""
    from iosight.warehouse._ingest import _sorted_by_key

    keys = pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()), pa.array(words))
    table = pa.table({"start": pa.array(starts, pa.float64()), "seq": range(len(index))})
    got, got_keys = _sorted_by_key(table, keys, "start")
    want = _arrow_order(table, keys)
    assert got_keys.cast(pa.string()).to_pylist() == want["job_key"].to_pylist()
    assert got["seq"].to_pylist() == want["seq"].to_pylist()  # (rows are told by seq)
    if words == ["a", "b"]:
        assert got["seq"].to_pylist() == [0, 1, 2, 3]


def _encodings(path: Path) -> dict[str, set[str]]:
    """Each column's Parquet encodings, over the file's row groups."""
    meta = pq.read_metadata(path)
    out: dict[str, set[str]] = {}
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            out.setdefault(col.path_in_schema, set()).update(col.encodings)
    return out


def test_sequence_tables_keep_their_encodings_through_the_merge(tmp_path):
    """A sequence table's merge output stores integers as deltas and floats byte-split
    (as ingest stages them), ``job_key`` dictionary-encoded, and reads back as the same
    rows and types (DuckDB); a table that is no sequence stores its numbers as
    dictionaries (a reader of a column of zeros then holds a few bits a row)."""
    files = [
        _file(tmp_path / "a.parquet", ["a", "a", "c", "d"], [0.5, 2.25, 0.0, 1e9]),
        _file(tmp_path / "b.parquet", ["b", "c2", "e"], [3.0, 1.5, -0.0]),
    ]
    for sequence in (True, False):
        out = tmp_path / f"out-{sequence}.parquet"
        _merge.merge_runs(_group(files, ["job_key", "start"]), out, 4, sequence=sequence)
        enc = _encodings(out)
        assert ("DELTA_BINARY_PACKED" in enc["seq"]) is sequence
        assert ("BYTE_STREAM_SPLIT" in enc["start"]) is sequence
        assert ("RLE_DICTIONARY" in enc["seq"]) is not sequence
        assert "RLE_DICTIONARY" in enc["job_key"]
        rows = [r for f in files for r in _rows(f)]
        assert _rows(out) == sorted(rows, key=lambda r: r[0])
        types = duckdb.sql(f"describe select * from '{out}'").fetchall()
        assert [t[1] for t in types] == ["VARCHAR", "DOUBLE", "BIGINT"]


def test_files_of_the_same_columns_in_another_order_are_merged(tmp_path, sorted_files):
    """A file whose columns come in another order (a batch's ``job_totals`` columns follow
    its logs' modules) is merged without DuckDB, its columns in the first file's order;
    a column of another type sends the group to DuckDB."""
    turned = tmp_path / "t.parquet"
    pq.write_table(pa.table({"seq": [0, 1], "start": [4, 0], "job_key": ["bb", "i"]}), turned)
    files = [*sorted_files, turned]
    runs = _runs(files, ["job_key"])
    assert runs is not None
    merger = Merger(tmp_path / "spill")
    (out,) = merge_files(merger, files, tmp_path / "out.parquet", ("job_key",))
    assert not merger.opened
    assert pq.read_schema(out).names == ["job_key", "start", "seq"]
    rows = [r for f in files for r in _rows(f)]
    assert _rows(out) == sorted(rows, key=lambda r: r[0])
    retyped = tmp_path / "r.parquet"
    pq.write_table(pa.table({"job_key": ["j"], "start": [1.5], "seq": [0]}), retyped)
    assert _runs([*sorted_files, retyped], ["job_key"]) is None


def test_files_whose_job_key_is_not_null_are_merged(tmp_path):
    """Files whose columns are all declared not null (as some compaction outputs are) are
    merged as the others: the key read dictionary-encoded keeps its nullability, so the
    files' batches match the merge's schema (the automatic compaction failed on these
    after every ingest once a warehouse of the nodxt corpus passed 170,000 logs)."""
    schema = pa.schema(
        [pa.field("job_key", pa.string(), False), pa.field("seq", pa.int64(), False)]
    )
    files = []
    for name, keys in (("a", ["a", "c", "e"]), ("b", ["b", "d", "f"])):
        table = pa.table({"job_key": keys, "seq": range(len(keys))}, schema=schema)
        pq.write_table(table, tmp_path / f"{name}.parquet", row_group_size=2)
        files.append(tmp_path / f"{name}.parquet")
    assert _runs(files, ["job_key"]) is not None
    merger = Merger(tmp_path / "spill")
    (out,) = merge_files(merger, files, tmp_path / "out.parquet", ("job_key",))
    assert not merger.opened
    out = pq.read_table(out)
    assert out.column("job_key").to_pylist() == list("abcdef")
    assert out.schema.field("job_key").nullable is False


def test_strings_of_few_values_are_read_as_dictionaries_and_written_as_strings(tmp_path):
    """A string column of few values (a module name) is read dictionary-encoded, one of
    many (a path) as strings; the output holds the rows as written, nulls included, and
    its columns are plain strings again."""
    files = []
    for name, parity in (("a", 0), ("b", 1)):
        keys = [f"k{j:03d}" for j in range(parity, 200, 2) for _ in range(5)]  # 5 rows a job
        table = pa.table(
            {
                "job_key": keys,
                "module": [("POSIX", None, "STDIO")[i % 3] for i in range(len(keys))],
                "name": [f"/scratch/{name}/{i}/{'x' * 40}" for i in range(len(keys))],
            }
        )
        pq.write_table(table, tmp_path / f"{name}.parquet", row_group_size=128)
        files.append(tmp_path / f"{name}.parquet")
    meta = pq.read_metadata(files[0])
    coded = _merge._dictionary_encoded(pq.read_schema(files[0]), meta)
    assert [f.name for f in coded if pa.types.is_dictionary(f.type)] == ["job_key", "module"]
    _merge.merge_runs(_group(files, ["job_key"]), tmp_path / "out.parquet", 64)
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.schema.field("module").type == pa.string()
    every = pa.concat_tables(pq.read_table(f) for f in files)
    expected = every.sort_by("job_key")  # stable: each job's rows in file order
    assert out.to_pylist() == expected.to_pylist()


def test_an_error_writing_a_row_group_is_raised_by_the_merge(tmp_path, sorted_files, monkeypatch):
    """Row groups are written on a second thread: its error reaches the caller (and the
    merge stops) rather than leaving a short output behind as if complete."""
    written = []

    def failing(rows):
        written.append(rows.num_rows)
        if len(written) == 2:
            raise OSError("disk full")
        return rows

    monkeypatch.setattr(_merge, "_own_keys", failing)
    monkeypatch.setattr(_merge, "_WINDOW_ROWS", 2)
    group = _group(sorted_files, ["job_key", "start"])
    with pytest.raises(OSError, match="disk full"):
        _merge.merge_runs(group, tmp_path / "out.parquet", 2)
    assert len(written) == 2


def test_windows_and_batches_are_bounded_by_decoded_bytes(tmp_path, monkeypatch):
    """Wide rows of zeros are a few bits a row in Parquet and 8 bytes a column in Arrow:
    the merge sizes its windows and batches by the decoded bytes, the four window copies
    alive at once (read, in flight, each put in order) within the budget and a batch of
    every file within it too (sized by Parquet's count, a window here was every row).
    Files of a job a row (their keys read as strings) merge as a stable sort does."""
    wide = {f"c{i}": np.zeros(4000, np.int64) for i in range(40)}
    files = []
    for n in range(3):
        keys = [f"job{i:05d}-{n}" for i in range(4000)]
        table = pa.table({"job_key": keys, **wide, "seq": np.arange(4000) + 4000 * n})
        pq.write_table(table, tmp_path / f"{n}.parquet")
        files.append(tmp_path / f"{n}.parquet")
    decoded = pq.read_table(files[0]).nbytes / 4000  # Arrow's bytes a row (plain keys)
    monkeypatch.setattr(_merge, "_HELD_BYTES", 1 << 20)
    seen = []
    pieces = _merge._window_pieces

    def spy(cursors, *window):
        out = pieces(cursors, *window)
        batches = sum(c.batch.num_rows for c in cursors if c.batch is not None)
        seen.append((sum(p.num_rows for p in out[0]), batches))
        return out

    monkeypatch.setattr(_merge, "_window_pieces", spy)
    out = tmp_path / "out.parquet"
    _merge.merge_runs(_group(files, ["job_key"]), out, 65_536)
    assert 4 * max(w for w, _ in seen) * decoded <= 1.1 * (1 << 20), (seen, decoded)
    assert max(b for _, b in seen) * decoded <= 1.1 * (1 << 20), (seen, decoded)
    expect = duckdb.sql(
        f"select job_key, seq from read_parquet({[str(f) for f in files]}) order by job_key, seq"
    ).fetchall()
    assert duckdb.sql(f"select job_key, seq from '{out}'").fetchall() == expect


def test_an_output_cut_into_files_ends_each_where_a_job_does(tmp_path):
    """Files of at least ``part_rows`` rows (the last shorter), each cut at the start of
    the first job past the mark: a job's rows (``a``'s from two files, ``c``'s three)
    are never split, and row groups start again with each file."""
    files = [
        _file(tmp_path / "x.parquet", ["a", "a", "b", "c", "c", "c"], [0, 1, 0, 0, 1, 2]),
        _file(tmp_path / "y.parquet", ["a", "d"], [5, 0]),
    ]
    runs = _runs(files, ["job_key"])
    assert _merge.part_cuts(runs, 2).tolist() == [3, 7]
    assert _merge.part_cuts(runs, 100).tolist() == []
    outs = _merge.merge_runs(_group(files, ["job_key"]), tmp_path / "out.parquet", 2,
                             part_rows=2)  # fmt: skip
    assert [f.name for f in outs] == ["out-0.parquet", "out-1.parquet", "out-2.parquet"]
    keys = [[r[0] for r in _rows(f)] for f in outs]
    assert keys == [["a", "a", "a"], ["b", "c", "c", "c"], ["d"]]
    groups = [pq.read_metadata(f) for f in outs]
    assert [[m.row_group(i).num_rows for i in range(m.num_row_groups)] for m in groups] == [
        [2, 1],
        [2, 2],
        [1],
    ]
    assert [r for f in outs for r in _rows(f)] == sorted(
        (r for f in files for r in _rows(f)), key=lambda r: r[0]
    )


def test_the_files_of_a_run_are_read_one_after_another(tmp_path, monkeypatch):
    """Two runs of three files each (disjoint key ranges within a run, as a merge's
    output is cut): at most one file of each run is open at once, each reader goes once
    its file's last rows are taken, and the group fits a reader budget that its six
    files' readers together would pass."""
    keys = {"1-a-0": ["a", "b", "c", "d", "e", "f"], "2-b-0": ["a1", "b1", "c1", "d1", "e1", "f1"]}
    files = [
        _file(tmp_path / f"compact-{run}-{j}.parquet", ks[2 * j : 2 * j + 2], [0.0, 1.0])
        for run, ks in keys.items()
        for j in range(3)
    ]
    opened: list[_merge._Cursor] = []
    most = [0]

    class Counted(_merge._Cursor):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            opened.append(self)

        def rows(self, first: int, stop: int):
            for piece in super().rows(first, stop):
                most[0] = max(most[0], sum(c.batches is not None for c in opened))
                yield piece

    monkeypatch.setattr(_merge, "_Cursor", Counted)
    monkeypatch.setattr(_merge, "_WINDOW_ROWS", 1)  # a window a row: files open as late as can be
    each = [_merge._largest_row_group(pq.read_metadata(f)) for f in files]
    monkeypatch.setattr(_merge, "READER_BUDGET", 2 * max(each))
    assert sum(each) > _merge.READER_BUDGET
    group = _merge.sorted_group(files, ["job_key"])
    assert group is not None  # a run holds its largest file's reader, not its files'
    out = tmp_path / "out.parquet"
    _merge.merge_runs(group, out, 4)
    assert most[0] == 2 and all(c.batches is None for c in opened)
    rows = [r for f in files for r in _rows(f)]
    assert _rows(out) == sorted(rows, key=lambda r: r[0])


def test_a_row_group_of_files_with_dictionaries_in_other_orders_stays_dictionary_encoded(
    tmp_path, monkeypatch
):
    """Pieces of files whose few-valued strings have their values in another order (a
    batch's ``module`` names in the order its logs list them) share one row group: it
    is written dictionary-encoded, not as plain strings (Parquet's writer writes the rest
    of a column chunk plain once its dictionary changes)."""
    names = ["HEATMAP:POSIX-module", "HEATMAP:STDIO-module"]
    files = []
    for i, order in enumerate([names, names[::-1]]):
        keys = [f"{k}{i}" for k in "abcdefgh" for _ in range(64)]  # 8 jobs of 64 rows
        path = tmp_path / f"{i}.parquet"
        pq.write_table(
            pa.table({"job_key": keys, "module": [order[j % 2] for j in range(512)]}), path
        )
        files.append(path)
    monkeypatch.setattr(_merge, "_WINDOW_ROWS", 64)  # a window a job: of one file each
    out = tmp_path / "out.parquet"
    _merge.merge_runs(_group(files, ["job_key"]), out, 1024)
    meta = pq.read_metadata(out)
    assert meta.num_row_groups == 1
    assert meta.row_group(0).column(1).total_uncompressed_size < 1024  # plain: 24 bytes a row
    merged = pq.read_table(out).to_pylist()
    expected = [r for f in files for r in pq.read_table(f).to_pylist()]
    assert merged == sorted(expected, key=lambda r: r["job_key"])


@pytest.mark.parametrize("most", [1 << 18, 5, 1])
def test_keys_are_ordered_a_slab_at_a_time(tmp_path, monkeypatch, most):
    """Two runs of three files each, their keys interleaved: the merge orders the keys
    a slab at a time, each slab within a file's keys of each run and ``_SLAB_RUNS``
    (what it holds of keys, not every key of the group), the slabs together in the
    order of one sort, and the merge's output in that order."""
    monkeypatch.setattr(_merge, "_SLAB_RUNS", most)
    names = [f"k{i:02d}" for i in range(36)]
    runs = {"1-a-0": names[0::2], "2-b-0": names[1::2]}  # 18 one-row jobs a run
    files = [
        _file(tmp_path / f"compact-{run}-{j}.parquet", keys[6 * j : 6 * j + 6], [0.0] * 6)
        for run, keys in runs.items()
        for j in range(3)
    ]
    slabs = list(_group(files, ["job_key"]).slabs())
    assert len(slabs) > 1
    assert max(len(s) for s in slabs) <= min(2 * 6, max(most, 2))  # a file's of each run
    assert [k for s in slabs for k in s.keys.to_pylist()] == names
    ordered = _runs(files, ["job_key"])
    assert [files[i].name[8:13] for i in ordered.file[:4]] == ["1-a-0", "2-b-0"] * 2
    out = _merge.merge_runs(_group(files, ["job_key"]), tmp_path / "m.parquet", 4,
                            part_rows=7)  # fmt: skip
    assert [r[0] for f in out for r in _rows(f)] == names
    assert [pq.read_metadata(f).num_rows for f in out] == [7] * 5 + [1]


def test_rows_found_out_of_order_while_merging_go_to_duckdb(tmp_path):
    """Files of a run whose keys overlap (found once the merge reads the second): the
    merge stops, removes what it wrote, and the group is sorted by DuckDB, every row
    once."""
    files = [
        _file(tmp_path / "compact-1-a-0-0.parquet", ["a", "c"], [0, 0]),
        _file(tmp_path / "compact-1-a-0-1.parquet", ["b", "e"], [0, 0]),  # b before c
        _file(tmp_path / "compact-2-b-0-0.parquet", ["a1", "z"], [0, 0]),
    ]
    out = tmp_path / "out" / "m.parquet"
    out.parent.mkdir()
    with pytest.raises(_merge.Unmergeable, match="overlap"):
        _merge.merge_runs(_group(files, ["job_key"]), out, 1, part_rows=1)
    assert list(out.parent.iterdir()) == []  # the parts written before are gone
    merger = Merger(tmp_path / "spill")
    (merged,) = merge_files(merger, files, out, ("job_key",))
    assert merger.opened
    merger.close()
    assert [r[0] for r in _rows(merged)] == ["a", "a1", "b", "c", "e", "z"]


def test_a_run_of_more_than_ten_files_listed_by_name_is_read_in_key_order(tmp_path):
    """The warehouse lists a run's files by name, so ``-10`` and ``-11`` come before
    ``-2``: the merge reads a run's files in their order within the run, not the list's,
    and takes the group without DuckDB."""
    keys = [f"k{i:02d}" for i in range(24)]
    files = sorted(
        _file(tmp_path / f"compact-1-a-0-{j}.parquet", keys[2 * j : 2 * j + 2], [0.0, 1.0])
        for j in range(12)
    )
    files.append(_file(tmp_path / "part-b.parquet", ["k05x", "k20x"], [0.0, 0.0]))
    assert [f.name for f in files[:4]] == [f"compact-1-a-0-{j}.parquet" for j in (0, 1, 10, 11)]
    merger = Merger(tmp_path / "spill")
    (out,) = merge_files(merger, files, tmp_path / "out.parquet", ("job_key",))
    assert not merger.opened
    assert [r[0] for r in _rows(out)] == sorted([*keys, "k05x", "k20x"])
