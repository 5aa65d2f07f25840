"""Job-total tables (CSV/Parquet): counters stay numbers, ids and counts stay right.

Every table here is SYNTHETIC: made-up jobs in the published job-total layout.
"""

from __future__ import annotations

import pyarrow as pa

from iosight.darshan import read_source
from iosight.warehouse import Warehouse, ingest

HEADER = "jobid,nprocs,start_time,end_time,total_POSIX_BYTES_READ,total_POSIX_OPENS\n"


def _read(path):
    name, tables = read_source(path)
    assert name == "job-totals"
    return tables


def test_a_cell_that_is_not_a_number_is_null_and_said(tmp_path):
    csv = tmp_path / "totals.csv"
    csv.write_text(HEADER + "1,4,1600000000,1600000100,100,3\n2,4,1600000000,1600000100,xyz,5\n")
    tables = _read(csv)
    read = tables["job_totals"].column("total_POSIX_BYTES_READ")
    assert pa.types.is_integer(read.type) or pa.types.is_floating(read.type)
    assert read.to_pylist() == [100, None]
    assert tables["job_totals"].column("total_POSIX_OPENS").to_pylist() == [3, 5]
    meta = tables["jobs"].column("metadata").to_pylist()
    assert meta[0] == ""
    assert meta[1] == (
        "iosight_warning=1 job-total cell(s) not a number, stored as null: total_POSIX_BYTES_READ"
    )


def test_one_bad_cell_does_not_break_sums_over_the_warehouse(tmp_path):
    """A text cell used to make the stored column text: every later sum failed in DuckDB."""
    good, bad = tmp_path / "a.csv", tmp_path / "b.csv"
    good.write_text(HEADER + "1,4,1600000000,1600000100,100,3\n")
    bad.write_text(HEADER + "2,4,1600000000,1600000100,xyz,5\n3,8,1600000000,1600000100,7,1\n")
    wh = Warehouse(tmp_path / "wh", create=True)
    report = ingest([good, bad], wh, workers=1)
    assert (report.ingested, report.failed, report.jobs) == (2, 0, 3)
    total = wh.sql("select sum(total_POSIX_BYTES_READ) s, count(*) n from job_totals").iloc[0]
    assert (total["s"], total["n"]) == (107, 3)
    warned = wh.sql("select jobid from jobs where metadata like 'iosight_warning=%'")
    assert warned["jobid"].tolist() == [2]
    from iosight.warehouse import job_summary

    assert job_summary(wh, "2").notes == [
        "1 job-total cell(s) not a number, stored as null: total_POSIX_BYTES_READ"
    ]


def test_a_missing_or_bad_count_is_minus_one_for_that_row_only(tmp_path):
    """An empty nprocs cell used to hash the whole column: the row that said 4 got a
    19-digit process count too."""
    csv = tmp_path / "totals.csv"
    csv.write_text(
        HEADER
        + "1,4,1600000000,1600000100,100,3\n"
        + "2,,1600000000,1600000100,200,3\n"
        + "3,abc,1600000000,1600000100,300,3\n"
        + "4,2.5,1600000000,1600000100,400,3\n"
    )
    jobs = _read(csv)["jobs"]
    assert jobs.column("nprocs").to_pylist() == [4, -1, -1, -1]
    assert jobs.column("jobid").to_pylist() == [1, 2, 3, 4]
    meta = jobs.column("metadata").to_pylist()
    assert meta[:2] == ["", ""]
    assert meta[2] == "iosight_warning=nprocs 'abc' is not a count, stored as -1"
    assert meta[3] == "iosight_warning=nprocs '2.5' is not a count, stored as -1"


def test_ids_are_hashed_one_by_one_only_when_not_integers(tmp_path):
    csv = tmp_path / "totals.csv"
    csv.write_text(
        "jobid,uid,nprocs,start_time,end_time,total_POSIX_OPENS\n"
        "9007199254740993,1000,4,1600000000,1600000100,1\n"
        "x17,682e0e79,4,1600000000,1600000100,1\n"
        ",,4,1600000000,1600000100,1\n"
        "x17,1000,4,1600000000,1600000100,1\n"
    )
    jobs = _read(csv)["jobs"]
    jobid, uid = jobs.column("jobid").to_pylist(), jobs.column("uid").to_pylist()
    assert jobid[0] == 9007199254740993 and jobid[2] == -1  # exact beyond 2**53
    assert jobid[1] == jobid[3] and jobid[1] not in (-1, 17)  # a stable hash of 'x17'
    assert uid[0] == uid[3] == 1000 and uid[2] == -1 and uid[1] not in (-1, 1000)
    assert jobs.column("metadata").to_pylist() == [""] * 4


def test_times_are_epoch_seconds_from_numbers_dates_or_timestamps(tmp_path):
    """Numbers are seconds since the epoch; ISO dates (UTC unless zoned) and Parquet
    timestamps are converted; an unreadable time is null with a warning, never NaN (a NaN
    start passes DuckDB's "is not null" and would be binned), and the table still loads."""
    csv = tmp_path / "totals.csv"
    csv.write_text(
        "jobid,nprocs,start_time,end_time,total_POSIX_OPENS\n"
        "1,4,1600000000,1600000100,1\n"
        "2,4,2020-09-13T12:26:40,2020-09-13 12:28:20+00:00,1\n"
        "3,4,yesterday,1600000100,1\n"
        "4,4,,1600000100,1\n"
    )
    jobs = _read(csv)["jobs"]
    assert jobs.column("start_time").to_pylist() == [1.6e9, 1.6e9, None, None]
    assert jobs.column("end_time").to_pylist() == [1600000100.0] * 4
    assert jobs.column("run_time").to_pylist() == [100.0, 100.0, None, None]
    meta = jobs.column("metadata").to_pylist()
    assert meta == [
        "",
        "",
        "iosight_warning=start_time 'yesterday' is not a time, stored as null",
        "",
    ]
    import pandas as pd

    pq = tmp_path / "totals.parquet"
    pd.DataFrame({
        "jobid": [7], "start_time": pd.to_datetime(["2020-09-13 12:26:40"]),
        "end_time": pd.to_datetime(["2020-09-13 12:28:20"]), "total_POSIX_OPENS": [2],
    }).to_parquet(pq)  # fmt: skip
    jobs = _read(pq)["jobs"]
    assert jobs.column("start_time").to_pylist() == [1.6e9]
    assert jobs.column("run_time").to_pylist() == [100.0]
