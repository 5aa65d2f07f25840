"""``io_totals``: ingest writes, beside each ``job_totals`` file and under its name, the
same rows' key and POSIX/STDIO totals, every job-total column a timeline reads. Data:
Summit's App1 job totals and PyDarshan's example logs (real)."""

from __future__ import annotations

import pandas as pd

from iosight.timeline._build import TOTAL_COLUMNS
from iosight.warehouse import IO_TOTAL_COLUMNS, Warehouse, ingest
from tests_support import shared_path


def test_every_total_a_timeline_reads_is_kept():
    assert set(TOTAL_COLUMNS) <= set(IO_TOTAL_COLUMNS)


def _same_rows(wh: Warehouse) -> None:
    """``io_totals`` holds ``job_totals``' rows and kept columns, file for file."""
    files = [f.name for f in wh.table_files("job_totals")]
    assert [f.name for f in wh.table_files("io_totals")] == files
    totals = wh.sql("select * from job_totals order by job_key")
    narrow = wh.sql("select * from io_totals order by job_key")
    kept = ["job_key", *[c for c in IO_TOTAL_COLUMNS if c in totals.columns]]
    assert sorted(narrow.columns) == sorted(kept)
    pd.testing.assert_frame_equal(narrow[kept], totals[kept])


def test_ingest_writes_the_io_totals_of_job_totals_and_of_logs(tmp_path):
    """App1's first 300 jobs (a slice: the test stays cheap) and four example logs, in
    one ingest."""
    from iosight.data import example_logs

    app1 = shared_path("datasets", "summit_darshan_total_2021", "darshan_total", "App1.parquet")
    pd.read_parquet(app1).head(300).to_parquet(tmp_path / "app1.parquet")
    wh = Warehouse(tmp_path / "wh", create=True)
    assert ingest([tmp_path / "app1.parquet", *example_logs()[:4]], wh, workers=1).ok
    assert len(wh.sql("select * from io_totals")) == 304
    _same_rows(wh)
    # uncompressed (read once, by a timeline update), where job_totals is not
    codecs = {name: _codecs(wh, name) for name in ("io_totals", "job_totals")}
    assert codecs == {"io_totals": {"UNCOMPRESSED"}, "job_totals": {"ZSTD"}}


def _codecs(wh: Warehouse, name: str) -> set[str]:
    """The compression codecs of table ``name``'s column chunks."""
    import pyarrow.parquet as pq

    codecs = set()
    for path in wh.table_files(name):
        meta = pq.ParquetFile(path).metadata
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            codecs |= {group.column(c).compression for c in range(group.num_columns)}
    return codecs
