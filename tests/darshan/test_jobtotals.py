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
    wh = Warehouse(tmp_path / "wh")
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
