"""``jobs.known_at``: when each job became known (a decision at T may use only what was
known by T). A batch ingest knows a job at its end, unless its job-total table says
when; a warehouse written before the column existed reads as if it said the end time."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from iosight.data import example_logs
from iosight.warehouse import KNOWN_AT, Warehouse, ingest


def _known(wh: Warehouse) -> list[tuple]:
    rows = wh.sql(f"select jobid, end_time, known_at, {KNOWN_AT} k from jobs order by jobid")
    return list(rows.itertuples(index=False, name=None))


def test_a_batch_ingest_knows_each_log_at_its_jobs_end(warehouse):
    logs = example_logs()[:3]
    assert ingest(logs, warehouse, workers=1).ok
    rows = _known(warehouse)
    assert len(rows) == 3
    for _, end, known_at, k in rows:
        assert known_at == end == k


def test_a_job_total_table_says_when_its_jobs_became_known(warehouse, tmp_path):
    """A ``known_at`` column (epoch seconds or dates, like the other times) is kept; a
    row that leaves it empty, and a table without one, are known at the job's end."""
    said = tmp_path / "said.csv"
    said.write_text(
        "jobid,start_time,end_time,known_at,total_POSIX_BYTES_WRITTEN\n"
        "1,1600000000,1600000100,1600000160,10\n"
        "2,1600000000,1600000200,2020-09-13T13:00:00Z,20\n"
        "3,1600000000,1600000300,,30\n"
    )
    silent = tmp_path / "silent.csv"
    silent.write_text(
        "jobid,start_time,end_time,total_POSIX_BYTES_WRITTEN\n4,1600000000,1600000400,40\n"
    )
    assert ingest([said, silent], warehouse, workers=1).ok
    assert [(j, k) for j, _, _, k in _known(warehouse)] == [
        (1, 1600000160.0),
        (2, 1600002000.0),  # 2020-09-13 13:00 UTC
        (3, 1600000300.0),
        (4, 1600000400.0),
    ]


def test_a_warehouse_written_before_known_at_reads_it_as_the_end_time(tmp_path):
    """Old part files lack the column; mixed with new ones, or alone, KNOWN_AT is the
    end time for their jobs and the column itself reads as null."""
    wh = Warehouse(tmp_path / "wh", create=True)
    assert ingest(example_logs()[:2], wh, workers=1).ok
    for part in wh.table_files("jobs"):  # what an ingest before the column wrote
        pq.write_table(pq.read_table(part).drop_columns(["known_at"]), part)
    old = Warehouse(wh.path)
    assert "known_at" in old.column_names("jobs")
    assert [(e, k) for _, e, _, k in _known(old)] == [(e, e) for _, e, _, _ in _known(old)]
    assert all(known_at != known_at for _, _, known_at, _ in _known(old))  # null (NaN)
    assert ingest(example_logs()[2:3], old, workers=1).ok  # a new part beside the old
    mixed = _known(old)
    assert len(mixed) == 3 and all(k == e for _, e, _, k in mixed)
    assert sum(known_at == known_at for _, _, known_at, _ in mixed) == 1


def test_readers_leave_known_at_to_ingest():
    """A reader reports what the source says: nothing, for a Darshan log."""
    from iosight.darshan import read_source

    _, tables = read_source(example_logs()[0])
    assert tables["jobs"]["known_at"].to_pylist() == [None]
    assert tables["jobs"].schema.field("known_at").type == pa.float64()
