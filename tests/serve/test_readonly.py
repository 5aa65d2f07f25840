"""The served warehouse reads only, and user SQL stays a read-only condition."""

from __future__ import annotations

import pytest

from iosight._errors import IosightError
from iosight.serve import JobFilter, ServedWarehouse, check_where, deadline, jobs_page


@pytest.mark.parametrize("clause", [
    "nprocs >= 4", "exe like '%a%' and run_time > 1",
    "start_time between 0 and 2e9 or jobid in (1, 2)",
    "lower(exe) ~ '^synth' and to_timestamp(start_time) >= timestamp '2000-01-01'",
    "coalesce(nprocs, 0) % 2 = 0 and cast(uid as varchar) not in ('0') and exe is not null",
    "case when nprocs > 4 then run_time else 0 end >= 0 and not exe similar to 'x.*'",
])  # fmt: skip
def test_conditions_pass_parenthesised(clause):
    assert check_where(clause) == f"({clause})"


def test_an_allowed_condition_selects_what_pandas_does(served_path):
    wh = ServedWarehouse(served_path)
    jobs = wh.jobs()
    clause = ("lower(exe) ~ '^synthetic-' and to_timestamp(start_time) < timestamp '2100-01-01' "
              "and coalesce(nprocs, 0) % 2 = 0")  # fmt: skip
    want = jobs["exe"].str.lower().str.match("synthetic-") & (jobs["nprocs"] % 2 == 0)
    assert jobs_page(wh, JobFilter(where=clause)).total == want.sum() > 0


@pytest.mark.parametrize(
    ("clause", "named"),
    [
        ("length(repeat('x', 10000000)) > 0", "repeat()"),  # gigabytes of strings (#26)
        ("lpad(exe, 100000000, 'x') <> ''", "lpad()"),
        ("exe || exe <> ''", "the || operator"),
        ("jobid in (select jobid from jobs)", "a subquery"),
        ("exists (select 1)", "a subquery"),
        ("cast(exe as varchar[]) is null", "a cast to list"),
        ("[1, 2][1] = 1", "array extract"),
        ("regexp_matches(exe, upper(exe))", "a pattern that is not a constant"),  # per row
        ("nprocs > 0 and " * 200 + "true", "characters"),
        ("length(strftime(to_timestamp(start_time), '" + "%c" * 40 + "')) = 0", "strftime()"),
        ("strftime(to_timestamp(start_time), exe) = ''", "strftime()"),  # a format per row
    ],
)
def test_conditions_that_could_build_or_read_anything_are_refused(clause, named):
    with pytest.raises(IosightError, match="cannot use|at most") as err:
        check_where(clause)
    assert named in str(err.value)


@pytest.mark.parametrize("clause", ["not " * 300 + "true", "nprocs" + " + 1" * 450 + " > 0"])
def test_conditions_nested_too_deeply_are_refused_in_one_line(clause):
    assert len(clause) <= 2000  # short enough for the length check: the depth refuses it
    with pytest.raises(IosightError, match="nested too deeply"):
        check_where(clause)


@pytest.mark.parametrize(
    "clause",
    [
        "1=1) union all (select * from jobs",  # a second query smuggled past the parentheses
        "1=1); copy jobs to '/tmp/x.csv'; select (1",  # more statements
        "1=1) order by (jobid",
        "1=1 --",  # comments out the closing parenthesis
        "",
        "nprocs >",  # not SQL
    ],
)
def test_anything_but_one_condition_is_refused(clause):
    with pytest.raises(IosightError):
        check_where(clause)


def test_conditions_cannot_read_or_write_files(served_path, tmp_path):
    wh = ServedWarehouse(served_path)
    target = tmp_path / "out.csv"
    reads = (
        "select count(*) from read_csv('/etc/passwd')",
        "select count(*) from read_text('/etc/hostname')",
        f"select count(*) from read_parquet('{served_path}/../*.parquet')",
    )
    for query in reads:
        with pytest.raises(IosightError, match="a subquery"):  # refused in a condition
            jobs_page(wh, JobFilter(where=f"({query}) >= 0"))
        with pytest.raises(IosightError, match="(?i)permission|disabled|cannot access"):
            wh.sql(query)  # and by the database, even as raw SQL
    with pytest.raises(Exception, match="(?i)permission|disabled"):
        wh.sql(f"copy jobs to '{target}'")
    with pytest.raises(Exception, match="(?i)configuration"):
        wh.sql("set enable_external_access = true")
    assert not target.exists()
    with pytest.raises(IosightError, match="condition on jobs"):  # parsed on the served cursor
        check_where("1=1) union all (select * from jobs", con=wh.connect())
    # the warehouse's own tables are still read
    nprocs = wh.table("jobs", ["nprocs"])["nprocs"].to_numpy()
    assert jobs_page(wh, JobFilter(where="nprocs >= 1")).total == (nprocs >= 1).sum() > 0


def test_nothing_but_the_tables_is_readable_not_even_duckdbs_temp_folder(
    served_path, tmp_path, monkeypatch
):
    """DuckDB adds its temporary folder (``.tmp`` under the working directory) to the
    readable ones (#26 item 10): the served database keeps no temporary folder."""
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "s.txt").write_text("secret")
    monkeypatch.chdir(tmp_path)
    wh = ServedWarehouse(served_path)
    with pytest.raises(IosightError, match="(?i)permission|disabled") as err:
        wh.sql("select content from read_text('.tmp/s.txt')")
    assert "secret" not in str(err.value)
    allowed = wh.sql("select current_setting('allowed_directories') d")["d"].iloc[0]
    assert list(allowed) == [str((served_path / "tables").resolve()) + "/"]


def test_the_memory_limit_holds_without_spilling(served_path):
    wh = ServedWarehouse(served_path, memory_limit="64MB")
    got = wh.sql("select current_setting('memory_limit') m, current_setting('temp_directory') t")
    assert got["m"].iloc[0] == "61.0 MiB" and got["t"].iloc[0] == ""
    with pytest.raises(IosightError, match="(?i)out of memory"):  # no temporary files
        wh.sql("select count(distinct a::varchar) from range(20000000) t(a)")
    with pytest.raises(IosightError, match="memory limit 'lots'"):
        ServedWarehouse(served_path, memory_limit="lots").connect()


def test_every_threads_cursor_caches_parquet_footers(served_path):
    """The requests' cursors (one per thread) keep the footers they read: a setting made
    for the server's connection alone left every cursor reading them again (a job's page
    took 35-50% more CPU on a 10,000-job warehouse)."""
    import threading

    wh = ServedWarehouse(served_path)
    query = "select current_setting('parquet_metadata_cache') c"
    got = []
    thread = threading.Thread(target=lambda: got.append(wh.connect().execute(query).fetchall()))
    thread.start()
    thread.join()
    assert got == [[(True,)]] and wh.connect().execute(query).fetchall() == [(True,)]


def test_served_warehouse_refuses_writes(served_path):
    import pyarrow as pa

    wh = ServedWarehouse(served_path)
    with pytest.raises(IosightError, match="read-only"):
        wh.write_table("extra", pa.table({"a": [1]}))
    assert "extra" not in wh.tables()


def test_deadline_stops_a_runaway_query(served_path):
    wh = ServedWarehouse(served_path)
    cur = wh.connect()
    with pytest.raises(IosightError, match="longer than"), deadline(cur, 0.3):
        cur.execute("select count(*) from range(1000000000000) a").fetchall()
    assert cur.execute("select 1").fetchall() == [(1,)]  # the cursor is usable afterwards


def test_deadline_stops_a_statement_that_starts_after_the_time_is_up(served_path):
    """DuckDB drops an interrupt that arrives between two statements (#26 item 11)."""
    import time

    wh = ServedWarehouse(served_path)
    cur = wh.connect()
    t = time.monotonic()
    with pytest.raises(IosightError, match="longer than"), deadline(cur, 0.2):
        time.sleep(0.4)  # the time is up while no statement runs
        cur.execute("select sum(a) from range(20000000000) t(a)").fetchall()
    assert time.monotonic() - t < 0.4 + 1.5
    assert cur.execute("select 1").fetchall() == [(1,)]


def test_each_thread_gets_its_own_cursor(served_path):
    import threading

    wh = ServedWarehouse(served_path)
    seen = []
    t = threading.Thread(target=lambda: seen.append(wh.connect()))
    t.start()
    t.join()
    assert seen[0] is not wh.connect()
    assert wh.connect() is wh.connect()


def test_a_refresh_shows_new_files_and_compacted_ones(served_path, tmp_path):
    """The views name their files: after an ingest or a compaction by another process,
    the next request's refresh reads the new files, with the same rows a new reader has."""
    import shutil

    from iosight.data import example_logs
    from iosight.warehouse import Warehouse, compact, ingest

    path = shutil.copytree(served_path, tmp_path / "wh")
    served = ServedWarehouse(path)
    jobs = served.sql("select count(*) n from jobs")["n"][0]
    writer = Warehouse(path)
    new_log = next(p for p in example_logs() if p.name == "sample-goodost.darshan")
    assert ingest([new_log], writer, workers=1, compact=False).ingested == 1
    served.refresh()
    assert served.sql("select count(*) n from jobs")["n"][0] == jobs + 1
    compact(writer)
    served.refresh()
    fresh = Warehouse(path)
    assert {t: served.table_files(t) for t in served.tables()} == {
        t: fresh.table_files(t) for t in fresh.tables()
    }
    assert served.sql("select count(*) n from jobs")["n"][0] == jobs + 1


def test_a_table_first_committed_after_the_views_waits_for_the_refresh(served_path, tmp_path):
    """A scrape at the instant of a table's first commit: the folder holds it, the views
    do not yet. has_table answers for the views, so /metrics' lags never query a view
    that is missing (a DuckDB CatalogException, a 500, before); the refresh shows it."""
    import shutil

    import pyarrow as pa

    from iosight.serve._metrics import _lags
    from iosight.warehouse import Warehouse

    path = shutil.copytree(served_path, tmp_path / "wh")
    served = ServedWarehouse(path)
    assert not served.has_table("live_io") and "live_io" not in served.tables()
    Warehouse(path).commit({"live_io": [pa.table({"job_key": ["j"], "known_at": [100.0]})]})
    assert Warehouse(path).has_table("live_io")  # on disk
    assert not served.has_table("live_io")  # not in the views yet
    lags = {s.labels["table"]: s.value for s in _lags(served, 1000.0).samples}
    assert "live_io" not in lags and "jobs" in lags
    assert "live_io" not in served.tables()  # listed with the views, once per refresh
    served.refresh()
    assert served.has_table("live_io") and "live_io" in served.tables()
    lags = {s.labels["table"]: s.value for s in _lags(served, 1000.0).samples}
    assert lags["live_io"] == 900.0
