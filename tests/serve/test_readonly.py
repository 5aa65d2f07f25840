"""The served warehouse reads only, and user SQL stays a read-only condition."""

from __future__ import annotations

import pytest

from iosight._errors import IosightError
from iosight.serve import JobFilter, ServedWarehouse, check_where, deadline, jobs_page


@pytest.mark.parametrize("clause", ["nprocs >= 4", "exe like '%a%' and run_time > 1",
                                    "start_time between 0 and 2e9 or jobid in (1, 2)"])  # fmt: skip
def test_conditions_pass_parenthesised(clause):
    assert check_where(clause) == f"({clause})"


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
    for clause in (
        "(select count(*) from read_csv('/etc/passwd')) > 0",
        "(select count(*) from read_text('/etc/hostname')) > 0",
        f"(select count(*) from read_parquet('{served_path}/../*.parquet')) >= 0",
    ):
        with pytest.raises(IosightError, match="(?i)permission|disabled|cannot access"):
            jobs_page(wh, JobFilter(where=clause))
    with pytest.raises(Exception, match="(?i)permission|disabled"):  # even as raw SQL
        wh.sql(f"copy jobs to '{target}'")
    with pytest.raises(Exception, match="(?i)configuration"):
        wh.sql("set enable_external_access = true")
    assert not target.exists()
    with pytest.raises(IosightError, match="condition on jobs"):  # parsed on the served cursor
        check_where("1=1) union all (select * from jobs", con=wh.connect())
    # the warehouse's own tables are still read
    nprocs = wh.table("jobs", ["nprocs"])["nprocs"].to_numpy()
    assert jobs_page(wh, JobFilter(where="nprocs >= 1")).total == (nprocs >= 1).sum() > 0


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


def test_each_thread_gets_its_own_cursor(served_path):
    import threading

    wh = ServedWarehouse(served_path)
    seen = []
    t = threading.Thread(target=lambda: seen.append(wh.connect()))
    t.start()
    t.join()
    assert seen[0] is not wh.connect()
    assert wh.connect() is wh.connect()
