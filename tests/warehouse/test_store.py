import json
import os

import pyarrow as pa
import pytest

from iosight._errors import IosightError, MissingTableError
from iosight.warehouse import Warehouse
from tests_support import hold_warehouse_lock, read_only_lock


def _t(keys, vals):
    return pa.table({"job_key": keys, "v": vals})


def test_commit_and_query(warehouse):
    warehouse.commit({"jobs": [_t(["a", "b"], [1, 2])], "posix": [_t(["a"], [10])]})
    assert warehouse.tables() == ["jobs", "posix"]
    df = warehouse.sql("select job_key, v from jobs order by job_key")
    assert df["v"].tolist() == [1, 2]
    assert warehouse.table("posix").num_rows == 1


def test_delete_keys_replaces_rows(warehouse):
    warehouse.commit({"jobs": [_t(["a", "b"], [1, 2])]})
    warehouse.commit({"jobs": [_t(["a"], [5])]}, delete_keys={"jobs": ["a"]})
    df = warehouse.sql("select job_key, v from jobs order by job_key")
    assert df.values.tolist() == [["a", 5], ["b", 2]]


def test_delete_keys_matching_nothing_reads_only_the_key_column(warehouse):
    # SYNTHETIC: one file of 20,000 rows with 1 kB of text each (a compacted
    # insight_findings holds a year's messages), then a batch deleting keys it lacks, as
    # insights of new jobs do after every follow batch: Arrow's memory for that commit
    # stays far below the 20 MB that reading every column of the file takes
    n = 20_000
    keys = [f"job{i:05d}" for i in range(n)]
    warehouse.commit(
        {"insight_findings": [pa.table({"job_key": keys, "message": ["x" * 1000] * n})]}
    )
    # the system allocator's pool, which nothing else here uses: its peak is this commit's
    pool, saved = pa.system_memory_pool(), pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        new = pa.table({"job_key": ["new"], "message": ["y"]})
        warehouse.commit({"insight_findings": [new]}, delete_keys={"insight_findings": ["new"]})
    finally:
        pa.set_memory_pool(saved)
    assert pool.max_memory() < 4 * 2**20
    assert warehouse.sql("select count(*) n from insight_findings")["n"][0] == n + 1


def test_write_table_replace_and_append(warehouse):
    warehouse.write_table("timeline", _t(["x"], [1]))
    warehouse.write_table("timeline", _t(["y"], [2]))
    assert warehouse.sql("select count(*) n from timeline")["n"][0] == 1
    warehouse.write_table("timeline", _t(["z"], [3]), mode="append")
    assert warehouse.sql("select count(*) n from timeline")["n"][0] == 2


def test_a_query_makes_the_views_of_the_tables_it_reads_and_sees_later_commits(warehouse):
    warehouse.commit({"jobs": [_t(["a", "b"], [1, 2])], "posix": [_t(["a"], [10])]})
    warehouse.commit({"mpiio": [_t(["a"], [3])]})

    def views() -> set[str]:
        query = "select view_name from duckdb_views() where not internal"
        return {name for (name,) in warehouse.connect([]).execute(query).fetchall()}

    assert warehouse.rows("with x as (select * from JOBS) select count(*) from x").values == [(2,)]
    assert views() == {"jobs"}  # any case, as SQL reads it; a CTE is no table
    assert warehouse.rows("select sum(v) from posix").values == [(10,)]
    assert views() == {"jobs", "posix"}
    warehouse.commit({"jobs": [_t(["c"], [4])]}, delete_keys={"jobs": ["a"]})
    assert warehouse.rows("select sum(v) from jobs").values == [(6,)]  # the new files
    with pytest.raises(IosightError, match="nosuch"):
        warehouse.rows("select * from nosuch")
    warehouse.connect()  # every table's view, for callers that run their own SQL
    assert views() == {"jobs", "posix", "mpiio"}


@pytest.mark.parametrize(
    "query",
    [
        # DuckDB binds these to list their tables and fails without the views: the
        # grouped query of benchmarks/scale.py made the views of all 20 tables of a
        # 510,000-job warehouse, 1.6 s of its 2 s (see docs/warehouse.md)
        "select count(*), sum(posix.v) from jobs left join POSIX using (job_key)",
        "select count(*), sum(p) from jobs natural join (select job_key, v p from posix)",
        "select count(*), sum(posix.v) from posix join jobs on posix.job_key = jobs.job_key"
        " where jobs.job_key <> ? -- mpiio",
    ],
)
def test_a_join_makes_only_the_views_of_its_tables(warehouse, query):
    warehouse.commit({"jobs": [_t(["a", "b"], [1, 2])], "posix": [_t(["a"], [10])]})
    warehouse.commit({"mpiio": [_t(["a"], [3])], "names": [_t(["a"], [4])]})
    params = ["z"] if "?" in query else None
    assert warehouse.rows(query, params).values[0][1] == 10
    views = "select view_name from duckdb_views() where not internal"
    assert {n for (n,) in warehouse.connect([]).execute(views).fetchall()} == {"jobs", "posix"}


def test_settings_hold_for_the_block_and_spills_stay_out_of_the_working_folder(
    warehouse, tmp_path, monkeypatch
):
    """DuckDB's default spill folder for an in-memory database is ``.tmp`` in the working
    directory: a command under a memory limit left it in the user's folder."""
    import tempfile

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    warehouse.commit({"jobs": [_t(["a"], [1])]})
    con = warehouse.connect()
    con.execute("set memory_limit = '2GiB'")
    limit = "select current_setting('memory_limit')"
    groups = "select range % 1000003 as k, count(*) from range(8000000) group by k"
    spills = f"select count(*) from ({groups})"
    with warehouse.duckdb_settings(memory_limit="'32MB'"):
        assert con.execute(limit).fetchall()[0][0] == "30.5 MiB"
        assert warehouse.rows(spills).values == [(1000003,)]
    assert con.execute(limit).fetchall()[0][0] == "2.0 GiB"
    folder = con.execute("select current_setting('temp_directory')").fetchall()[0][0]
    assert folder.startswith(tempfile.gettempdir()) and "iosight-spill" in folder
    assert list(work.iterdir()) == []


def test_settings_of_a_block_hold_on_the_connection_a_close_in_it_opens(warehouse):
    """A block's settings hold on the connection opened after a close in it (a file
    replaced, as the stored timeline's, closes it: the block's end then failed on the
    closed connection), and go with the block: the connection it opened is closed, the
    next has none of them."""
    warehouse.commit({"jobs": [_t(["a"], [1])]})
    limit = "select current_setting('memory_limit')"
    default = warehouse.connect([]).execute(limit).fetchall()[0][0]
    with warehouse.duckdb_settings(memory_limit="'32MB'"):
        file = warehouse.table_files("jobs")[0].name
        warehouse.replace_file("jobs", file, _t(["a", "b"], [1, 2]))
        assert warehouse.rows("select count(*) from jobs").values == [(2,)]
        assert warehouse.connect([]).execute(limit).fetchall()[0][0] == "30.5 MiB"
        with warehouse.duckdb_settings(memory_limit="'64MB'"):
            assert warehouse.connect([]).execute(limit).fetchall()[0][0] == "61.0 MiB"
            warehouse.close()
        assert warehouse.connect([]).execute(limit).fetchall()[0][0] == "30.5 MiB"
        warehouse.close()
        assert warehouse.connect([]).execute(limit).fetchall()[0][0] == "30.5 MiB"
    assert warehouse.connect([]).execute(limit).fetchall()[0][0] == default
    warehouse.close()
    assert warehouse.connect([]).execute(limit).fetchall()[0][0] == default


def test_row_counts_are_those_of_the_tables(warehouse):
    warehouse.commit({"jobs": [_t(["a", "b"], [1, 2])], "posix": [_t(["a"], [10])]})
    warehouse.commit({"jobs": [_t(["c"], [4])]})
    assert warehouse.row_counts() == {"jobs": (3, 2), "posix": (1, 1)}


def test_roll_forward_of_killed_commit(tmp_path):
    wh = Warehouse(tmp_path / "wh", create=True)
    wh.commit({"jobs": [_t(["a"], [1])]})
    # simulate a writer killed after its commit record but before moving files
    staging = wh.path / "_staging" / "00000000000000000001-deadbeef"
    staging.mkdir()
    import pyarrow.parquet as pq

    pq.write_table(_t(["b"], [2]), staging / "jobs.0.parquet")
    (wh.path / "_commits" / "00000000000000000001-deadbeef.json").write_text(
        json.dumps(
            {
                "batch": "00000000000000000001-deadbeef",
                "tables": ["jobs"],
                "delete_keys": {},
                "replace_tables": [],
            }
        )
    )
    # and one killed before its commit record: must vanish
    orphan = wh.path / "_staging" / "00000000000000000002-cafebabe"
    orphan.mkdir()
    pq.write_table(_t(["c"], [3]), orphan / "jobs.0.parquet")
    again = Warehouse(tmp_path / "wh")
    assert sorted(again.sql("select job_key from jobs")["job_key"]) == ["a", "b"]
    assert not any((wh.path / "_staging").iterdir())


def test_a_commit_drops_the_files_it_names_and_no_others(tmp_path):
    """``drop_files``: a writer replaces some files of a table (the timeline's runs of
    bins) in one atomic commit; a commit record killed before it was applied drops them
    when the warehouse is next opened."""
    from iosight.warehouse import new_batch_id, stage_tables

    wh = Warehouse(tmp_path / "wh", create=True)
    wh.commit({"jobs": [_t(["a"], [1])]})
    wh.commit({"jobs": [_t(["b"], [2])]})
    first, second = (f.name for f in wh.table_files("jobs"))
    batch = new_batch_id()
    stage_tables(wh.staging_dir(batch), {"jobs": [_t(["c"], [3])]})
    record = {"batch": batch, "tables": ["jobs"], "delete_keys": {}, "replace_tables": [],
              "drop_files": {"jobs": [first]}}  # fmt: skip
    (wh.path / "_commits" / f"{batch}.json").write_text(json.dumps(record))  # then killed
    again = Warehouse(tmp_path / "wh")
    assert sorted(again.sql("select job_key from jobs")["job_key"]) == ["b", "c"]
    again.commit({"jobs": [_t(["d"], [4])]}, drop_files={"jobs": [second]})
    assert sorted(again.sql("select job_key from jobs")["job_key"]) == ["c", "d"]


def test_a_part_staged_a_slice_at_a_time_commits_as_one_file(warehouse):
    """``staged_writer``: a writer whose rows come a slice at a time (``insights``, a
    window of batches) stages one file, a row group a slice, beside ``stage_tables``'
    parts of the same batch, and one commit stores them all (the old rows replaced)."""
    import pyarrow.parquet as pq

    from iosight.warehouse import new_batch_id, stage_tables, staged_writer

    warehouse.commit({"jobs": [_t(["a", "b"], [1, 2])]})
    batch = new_batch_id()
    stage_tables(warehouse.staging_dir(batch), {"jobs": [_t(["c"], [3])]})
    with staged_writer(warehouse.staging_dir(batch), "jobs", _t(["d"], [4]).schema, part=1) as w:
        w.write_table(_t(["d"], [4]))
        w.write_table(_t(["e", "f"], [5, 6]))
    warehouse.commit_staged(batch, ["jobs"], delete_keys={"jobs": ["a"]})
    stored = warehouse.sql("select job_key, v from jobs order by 1")
    assert list(stored["job_key"]) == ["b", "c", "d", "e", "f"]
    assert list(stored["v"]) == [2, 3, 4, 5, 6]
    groups = sorted(pq.ParquetFile(f).num_row_groups for f in warehouse.table_files("jobs"))
    assert groups == [1, 1, 2]  # the first commit's file, then the batch's two parts


def test_missing_table_and_warehouse_errors(tmp_path, warehouse):
    with pytest.raises(MissingTableError, match="iosight ingest"):
        warehouse.table("jobs")
    with pytest.raises(IosightError, match="not an iosight warehouse"):
        Warehouse(tmp_path / "nope", create=False)
    assert not (tmp_path / "nope").exists()
    warehouse.commit({"jobs": [_t(["a"], [1])]})
    with pytest.raises(IosightError, match="Tables here"):
        warehouse.sql("select * from not_a_table")


def test_opening_a_path_that_holds_no_warehouse_creates_nothing(tmp_path):
    """``Warehouse(path)`` opens one to read: a mistyped path is the one-line error, not a
    new empty warehouse; only ``create=True`` (what brings data in) makes one."""
    import iosight

    for path in (tmp_path / "typo", tmp_path / "empty"):
        with pytest.raises(IosightError, match=f"not an iosight warehouse: {path} "):
            iosight.Warehouse(path)
        (tmp_path / "empty").mkdir(exist_ok=True)
    assert not (tmp_path / "typo").exists() and not any((tmp_path / "empty").iterdir())
    assert iosight.Warehouse(tmp_path / "typo", create=True).tables() == []


def test_a_warehouse_is_made_only_in_a_new_or_empty_folder(tmp_path):
    """A folder of other files (the logs to ingest) is refused before anything is made
    in it; a creation cut short (only the warehouse's own folders) goes on."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.darshan").write_bytes(b"x")
    with pytest.raises(IosightError, match=r"holds other files \(a.darshan\)"):
        Warehouse(logs, create=True)
    assert [p.name for p in logs.iterdir()] == ["a.darshan"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert Warehouse(empty, create=True).tables() == []
    cut = tmp_path / "cut"
    (cut / "tables").mkdir(parents=True)
    assert Warehouse(cut, create=True).tables() == [] and (cut / "_commits").is_dir()


def test_errors_raised_while_a_query_runs_are_one_line(warehouse):
    """Casts that fail and error() fail when rows are fetched, not when the query is
    planned: they used to escape as DuckDB tracebacks."""
    warehouse.commit({"jobs": [_t(["a"], [1])]})
    for run, expected in (
        (lambda: warehouse.sql("select 'a'::int"), "Conversion Error: Could not convert"),
        (lambda: warehouse.arrow("select error('boom')"), "Invalid Input Error: boom"),
        (lambda: warehouse.jobs(where="v > 'x'"), "Conversion Error: Could not convert"),
        (lambda: warehouse.sql("selec 1"), "Parser Error: syntax error"),
        (lambda: warehouse.sql(""), "the query holds no statement"),
        (lambda: warehouse.rows("-- a comment"), "the query holds no statement"),
        (lambda: warehouse.arrow(" "), "the query holds no statement"),
    ):
        with pytest.raises(IosightError, match=expected) as err:
            run()
        assert "\n" not in str(err.value)
    assert warehouse.sql("select v from jobs")["v"].tolist() == [1]


def test_a_writer_waits_for_the_lock_and_names_its_holder(tmp_path):
    import socket

    Warehouse(tmp_path / "wh", create=True)
    holder = hold_warehouse_lock(tmp_path / "wh")
    told = []

    def waiting(message):  # the second writer waits: now let the first one finish
        told.append(message)
        holder.stdin.write("done\n")
        holder.stdin.flush()

    wh = Warehouse(tmp_path / "wh", lock_timeout=60, on_lock_wait=waiting)
    wh.commit({"jobs": [_t(["a"], [1])]})
    holder.wait(10)
    assert told == [
        f"warehouse {wh.path} is being written by process {holder.pid} on "
        f"{socket.gethostname()}; waiting up to 60 s for it to finish"
    ]
    assert wh.sql("select job_key from jobs")["job_key"].tolist() == ["a"]


def test_a_brief_wait_for_another_writer_says_nothing(tmp_path):
    """Another writer's commit takes milliseconds: a wait under a second is not told
    (two overlapping ingests take turns batch by batch)."""
    import threading
    import time

    Warehouse(tmp_path / "wh", create=True)
    holder = hold_warehouse_lock(tmp_path / "wh")
    told: list[str] = []
    wh = Warehouse(tmp_path / "wh", lock_timeout=60, on_lock_wait=told.append)
    writer = threading.Thread(target=wh.commit, args=({"jobs": [_t(["a"], [1])]},))
    writer.start()
    time.sleep(0.3)
    holder.communicate("done\n", timeout=10)
    writer.join(10)
    assert told == [] and wh.sql("select job_key from jobs")["job_key"].tolist() == ["a"]


def test_the_lock_file_names_its_last_writer_over_a_longer_line(tmp_path):
    """The holder's line is written over the old one in place (no truncation a commit),
    and a longer line, another host's, is cut: the file names this process alone; a
    line that is already this process's is left unwritten."""
    import socket

    wh = Warehouse(tmp_path / "wh", create=True)
    (wh.path / "_lock").write_text("1 " + "h" * 300 + "\n")
    wh.commit({"jobs": [_t(["a"], [1])]})
    text = (wh.path / "_lock").read_text()
    assert text.split() == [str(os.getpid()), socket.gethostname()] and text.endswith("\n")
    assert wh._lock_holder() == f"process {os.getpid()} on {socket.gethostname()}"
    os.utime(wh.path / "_lock", ns=(0, 0))
    wh.commit({"jobs": [_t(["b"], [2])]})
    assert (wh.path / "_lock").read_text() == text
    assert (wh.path / "_lock").stat().st_mtime_ns == 0  # its own line already: not written
    (wh.path / "_lock").write_text("1 " + "h".ljust(125) + "\n")  # another's, the same size
    wh.commit({"jobs": [_t(["c"], [3])]})
    assert (wh.path / "_lock").read_text() == text  # rewritten in place, the same size


def test_a_writer_gives_up_after_its_lock_timeout(tmp_path):
    Warehouse(tmp_path / "wh", create=True)
    holder = hold_warehouse_lock(tmp_path / "wh")
    try:
        wh = Warehouse(tmp_path / "wh", lock_timeout=0.3)
        with pytest.raises(IosightError, match=f"process {holder.pid} .* after 0.3 s"):
            wh.commit({"jobs": [_t(["a"], [1])]})
        assert not wh.has_table("jobs")
    finally:
        holder.communicate("done\n", timeout=10)


def test_a_read_only_warehouse_is_read_and_refuses_writes_clearly(tmp_path, monkeypatch):
    wh = Warehouse(tmp_path / "wh", create=True)
    wh.commit({"jobs": [_t(["a", "b"], [1, 2])]})
    read_only_lock(monkeypatch, wh.path)
    reader = Warehouse(wh.path, create=False)
    assert reader.sql("select sum(v) s from jobs")["s"][0] == 3
    for write in (
        lambda: reader.commit({"jobs": [_t(["c"], [3])]}),
        lambda: Warehouse(wh.path, create=True),  # as a writer opens it
    ):
        with pytest.raises(IosightError, match="cannot write warehouse .*Read-only file system"):
            write()
    assert reader.sql("select count(*) n from jobs")["n"][0] == 2


def test_a_warehouse_without_write_permission_is_read(tmp_path):
    import os
    import stat

    wh = Warehouse(tmp_path / "wh", create=True)
    wh.commit({"jobs": [_t(["a"], [1])]})
    paths = [wh.path, *wh.path.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    try:
        for p in paths:
            p.chmod(modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        if os.access(wh.path / "_lock", os.W_OK):
            pytest.skip("chmod does not stop this user (root) from writing")
        assert Warehouse(wh.path, create=False).sql("select v from jobs")["v"].tolist() == [1]
    finally:
        for p in reversed(paths):
            p.chmod(modes[p])


def test_a_warehouse_that_cannot_be_made_is_one_clear_error(tmp_path):
    """A regular file on the way used to raise NotADirectoryError with a traceback."""
    (tmp_path / "file").write_text("")
    with pytest.raises(IosightError, match=r"cannot create warehouse .*file/wh: Not a directory"):
        Warehouse(tmp_path / "file" / "wh", create=True)
    assert (tmp_path / "file").read_text() == ""


def test_a_folder_without_write_permission_is_one_clear_error(tmp_path):
    """PermissionError used to be a traceback (creating) or come only at the commit."""
    import os
    import stat

    parent = tmp_path / "parent"
    parent.mkdir()
    wh = Warehouse(parent / "wh", create=True)
    folders = [parent, wh.path, *wh.path.iterdir()]
    try:
        for p in folders:
            p.chmod(stat.S_IRUSR | stat.S_IXUSR)
        if os.access(parent, os.W_OK):
            pytest.skip("chmod does not stop this user (root) from writing")
        with pytest.raises(IosightError, match="cannot create warehouse .*Permission denied"):
            Warehouse(parent / "new", create=True)
        with pytest.raises(IosightError, match="cannot write warehouse .*Permission denied"):
            Warehouse(wh.path, create=False).check_writable()
    finally:
        for p in folders:
            p.chmod(stat.S_IRWXU)


def test_check_writable_says_at_once_that_a_read_only_warehouse_cannot_be_written(
    tmp_path, monkeypatch
):
    wh = Warehouse(tmp_path / "wh", create=True)
    wh.check_writable()  # the warehouse this process just made
    read_only_lock(monkeypatch, wh.path)
    reader = Warehouse(wh.path, create=False)
    with pytest.raises(IosightError, match="cannot write warehouse .*Read-only file system"):
        reader.check_writable()
    assert wh.tables() == []  # nothing written on the way


def test_a_table_compacted_more_often_than_the_grace_frees_what_it_replaced(warehouse, monkeypatch):
    """Each replaced file's own hiding time counts: a busy archive compacts every table
    at every ingest, more often than the grace period, and must still free its disk."""
    from iosight.warehouse import _store, compact

    clock = [1_000_000.0]
    monkeypatch.setattr(_store.time, "time", lambda: clock[0])
    folder = warehouse.path / "tables" / "posix"
    hidden = []
    for i in range(3):  # two commits and a compaction every 400 s (grace: 600 s)
        for j in range(2):
            warehouse.commit({"posix": [_t([f"k{i}{j}"], [j])]})
        before = {f.name for f in warehouse.table_files("posix")}
        compact(warehouse, ["posix"])
        hidden.append(before)
        clock[0] += 400
    on_disk = {f.name for f in folder.glob("*.parquet")}
    assert not hidden[0] & on_disk  # hidden 1,200 s before the last compaction: deleted
    assert hidden[2] <= on_disk  # hidden just now: kept
    assert {f.name for f in warehouse.table_files("posix")} < on_disk
    assert warehouse.table("posix").num_rows == 6
