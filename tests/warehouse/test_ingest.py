"""Ingest: bad inputs, idempotence, force, job-total tables (kill-and-resume: test_ingest_crash)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iosight.data import example_logs
from iosight.warehouse import Warehouse, ingest


def _counts(wh: Warehouse) -> dict[str, int]:
    return {t: int(wh.sql(f'select count(*) n from "{t}"')["n"][0]) for t in wh.tables()}


@pytest.fixture
def bad_inputs(tmp_path: Path) -> Path:
    d = tmp_path / "bad"
    d.mkdir()
    good = example_logs()[0].read_bytes()
    (d / "empty.darshan").write_bytes(b"")
    (d / "truncated.darshan").write_bytes(good[: len(good) // 2])
    (d / "random.darshan").write_bytes(np.random.default_rng(1).bytes(10_000))
    (d / "notes.darshan").write_text("this is not a log\n")
    (d / "hostile'; drop table jobs; --.darshan").write_bytes(good[:100])
    return d


def test_bad_inputs_are_recorded_and_good_logs_ingested(warehouse, bad_inputs):
    logs = example_logs()
    report = ingest([*logs, bad_inputs], warehouse, workers=2)
    unique = len({p.read_bytes() for p in logs})
    assert report.failed == 5 and not report.ok
    assert report.ingested == unique
    errors = warehouse.sql("select source_path, error from ingest_errors")
    assert len(errors) == 5
    by_name = {Path(p).name: e for p, e in errors.itertuples(index=False)}
    assert "empty file" in by_name["empty.darshan"]
    assert "truncated or corrupt" in by_name["truncated.darshan"]
    assert "not a Darshan log" in by_name["notes.darshan"]
    assert all("\n" not in e for e in by_name.values())
    assert _counts(warehouse)["jobs"] == unique


def test_second_run_adds_nothing_and_force_replaces(warehouse, bad_inputs):
    logs = example_logs()
    ingest([*logs, bad_inputs], warehouse, workers=2)
    before = _counts(warehouse)
    again = ingest([*logs, bad_inputs], warehouse, workers=2)
    assert again.ingested == 0 and again.failed == 0
    assert again.skipped == len(logs) + 5
    assert _counts(warehouse) == before
    forced = ingest(logs[:3], warehouse, workers=1, force=True)
    assert forced.ingested == len({p.read_bytes() for p in logs[:3]})
    after = _counts(warehouse)
    assert after == before


def test_summit_job_totals_ingest(shared, tmp_path):
    src = shared("datasets", "summit_darshan_total_2021", "darshan_total")
    wh = Warehouse(tmp_path / "summit", create=True)
    report = ingest([src], wh, workers=2)
    assert report.ok and report.jobs == 53546
    row = wh.sql(
        "select count(*) n, count(distinct job_key) k, min(end_time - start_time) d "
        "from jobs join job_totals using (job_key)"
    ).iloc[0]
    assert row["n"] == 53546 and row["k"] == 53546 and row["d"] >= 0


def test_non_regular_and_missing_paths(warehouse, tmp_path):
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match="no such file"):
        ingest([tmp_path / "missing"], warehouse)
    fifo = tmp_path / "pipe.darshan"
    os.mkfifo(fifo)
    report = ingest([fifo], warehouse)
    assert report.failed == 1 and "not a regular file" in report.errors[0][1]


def test_sources_that_cannot_be_read_get_one_error_row_each(warehouse, tmp_path):
    """README: FIFOs (and symlink loops, unreadable files) give one ingest_errors row;
    a re-run replaces it, and once the path holds a log the row goes."""
    src = tmp_path / "src"
    src.mkdir()
    fifo, loop = src / "pipe.darshan", src / "loop.darshan"
    os.mkfifo(fifo)
    loop.symlink_to(loop)
    for _ in range(2):
        report = ingest([src], warehouse, workers=1)
        assert (report.failed, report.ingested) == (2, 0)
        rows = warehouse.sql("select source_path, error from ingest_errors order by 1")
        assert rows.values.tolist() == [
            [str(loop), "cannot read (Too many levels of symbolic links)"],
            [str(fifo), "cannot read (not a regular file)"],
        ]
    fifo.unlink()
    fifo.write_bytes(example_logs()[0].read_bytes())
    report = ingest([src], warehouse, workers=1)
    assert (report.failed, report.ingested) == (1, 1)
    rows = warehouse.sql("select source_path from ingest_errors")
    assert rows["source_path"].tolist() == [str(loop)]
    assert len(warehouse.jobs()) == 1


def test_a_batch_whose_worker_died_keeps_its_other_sources(warehouse):
    from iosight._progress import NullProgress
    from iosight.parallel import TaskResult
    from iosight.warehouse._ingest import IngestReport, _Committer

    committer = _Committer(
        warehouse, force=False, known=set(), timed_out=set(), report=IngestReport()
    )
    batch = [("k0", "a.darshan"), ("k1", "b.darshan"), ("k2", "c.darshan")]
    died = TaskResult("b1", error="reader crashed the worker process (SIGSEGV)", failed_item=1)
    retries = committer.split_failed(died, batch, NullProgress())
    assert [items for _, items in retries] == [[batch[0], batch[2]]]
    errors = warehouse.sql("select source_key, error from ingest_errors")
    assert errors.values.tolist() == [["k1", "reader crashed the worker process (SIGSEGV)"]]
    raised = TaskResult("b2", error="OSError: disk full", failed_item=None)
    assert [items for _, items in committer.split_failed(raised, batch, NullProgress())] == [
        [b] for b in batch
    ]
    # 0 is the first item, not "unknown": it fails at once, the rest are read together
    first = TaskResult("b3", error="timed out after 300 s", failed_item=0)
    assert [items for _, items in committer.split_failed(first, batch, NullProgress())] == [
        batch[1:]
    ]
    assert warehouse.sql("select source_key from ingest_errors order by 1")[
        "source_key"
    ].tolist() == ["k0", "k1"]


def test_a_source_that_timed_out_is_read_again_next_time(warehouse, tmp_path):
    """A timeout is no verdict on the log: the next ingest reads it again and its rows
    replace the error row (a log that then fails for good keeps one error row)."""
    from iosight._progress import NullProgress
    from iosight.parallel import TaskResult
    from iosight.warehouse._ingest import IngestReport, _Committer, content_key

    good, bad = example_logs()[0], tmp_path / "bad.darshan"
    bad.write_bytes(b"\x00" * 100)
    # the first ingest's worker ran past --timeout on each (how the pool reports it)
    committer = _Committer(
        warehouse, force=False, known=set(), timed_out=set(), report=IngestReport()
    )
    for log in (good, bad):
        hung = TaskResult("b", error="timed out after 3 s", failed_item=0)
        committer.split_failed(hung, [(content_key(log), str(log))], NullProgress())
    again = ingest([good, bad], warehouse, workers=1)
    assert (again.ingested, again.failed, again.skipped, again.retried) == (1, 1, 0, 2)
    assert "2 retried (timed out before)" in again.summary()
    errors = warehouse.sql("select source_path, error from ingest_errors")
    assert errors["source_path"].tolist() == [str(bad)]
    assert not errors["error"].str.startswith("timed out").any()
    assert warehouse.sql("select source_path from sources")["source_path"].tolist() == [str(good)]
    third = ingest([good, bad], warehouse, workers=1)
    assert (third.ingested, third.failed, third.skipped, third.retried) == (0, 0, 2, 0)
    assert len(warehouse.jobs()) == 1
    assert warehouse.sql("select count(*) n from ingest_errors")["n"][0] == 1


def test_a_warehouse_inside_the_sources_is_not_read_back(tmp_path):
    """`iosight ingest .` with the default ./iosight-warehouse: its Parquet parts are no
    job-total tables, and a second run adds and fails nothing."""
    from iosight._errors import IosightError

    logs = example_logs()[:3]
    for log in logs:
        (tmp_path / log.name).write_bytes(log.read_bytes())
    (tmp_path / ".hidden.darshan").write_bytes(logs[0].read_bytes())
    wh = Warehouse(tmp_path / "iosight-warehouse", create=True)
    first = ingest([tmp_path], wh, workers=1)
    assert (first.ingested, first.failed) == (3, 0)
    again = ingest([tmp_path], wh, workers=1)
    assert (again.ingested, again.skipped, again.failed) == (0, 3, 0)
    assert len(wh.jobs()) == 3
    with pytest.raises(IosightError, match="is an iosight warehouse"):
        ingest([wh.path], wh, workers=1)


def test_a_log_with_no_records_gets_a_job_totals_row(warehouse, tmp_path):
    """README: every log gets a job_totals row; one that recorded no I/O gets one too,
    its counters null (nothing was recorded), not missing."""
    from iosight.darshan import read_source, write_parser_text

    log = example_logs()[0]
    _, tables = read_source(log)
    bare = tmp_path / "no-records.txt"
    write_parser_text({"jobs": tables["jobs"]}, bare)
    report = ingest([log, bare], warehouse, workers=1)
    assert (report.ingested, report.failed) == (2, 0)
    rows = warehouse.sql(
        "select s.source_path, t.total_POSIX_BYTES_WRITTEN w from sources s "
        "join job_totals t on t.job_key = s.source_key order by 1"
    )
    written = int(tables["job_totals"]["total_POSIX_BYTES_WRITTEN"][0].as_py())
    assert rows["source_path"].tolist() == sorted([str(log), str(bare)])
    by_path = dict(zip(rows["source_path"], rows["w"], strict=True))
    assert by_path[str(log)] == written and pd.isna(by_path[str(bare)])


def test_a_batch_is_one_file_per_table_with_a_plain_string_key(warehouse, tmp_path):
    """Workers build each table once per batch (under the memory bound) and the
    dictionary-encoded ``job_key`` reads back as a string, by DuckDB and pyarrow alike,
    also when a batch mixes logs with a multi-job table (synthetic rows below)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from iosight.darshan import read_source

    logs = example_logs()
    table = tmp_path / "totals.csv"  # synthetic: two made-up jobs
    table.write_text(
        "jobid,start_time,end_time,total_POSIX_BYTES_WRITTEN\n1,1600000000,1600000100,5\n"
        "2,1600000000,1600000200,7\n"
    )
    report = ingest([*logs, table], warehouse, workers=1, batch_size=1000)
    assert report.failed == 0
    for name in warehouse.tables():
        files = warehouse.table_files(name)
        assert len(files) == 1, name
        schema = pq.read_schema(files[0])
        if "job_key" in schema.names:
            assert schema.field("job_key").type == pa.string(), name
    keys = warehouse.sql("select job_key from jobs order by job_key")["job_key"].tolist()
    assert len(keys) == len(set(keys)) == report.jobs
    assert sum(k.endswith(("-00000000", "-00000001")) for k in keys) == 2
    unique = {p.read_bytes(): p for p in logs}.values()
    rows = sum(read_source(p)[1].get("posix", pa.table({})).num_rows for p in unique)
    assert warehouse.sql("select count(*) n from posix")["n"][0] == rows


def test_staged_files_record_statistics_of_the_pruning_columns(warehouse):
    """An ingested file records the min/max a query prunes row groups by: ``job_key``
    everywhere, every column of ``jobs`` and of a DXT table (a zoom prunes by a
    segment's start and end); not those of the counters (their statistics cost a fifth
    of writing a wide table, and compaction's outputs record them)."""
    import pyarrow.parquet as pq

    ingest(example_logs(), warehouse, workers=1, compact=False)
    tables = ("jobs", True), ("dxt_posix", True), ("posix", False), ("job_totals", False)
    for name, everything in tables:
        meta = pq.ParquetFile(warehouse.table_files(name)[0]).metadata
        group = meta.row_group(0)
        stats = {group.column(i).path_in_schema: group.column(i).is_stats_set
                 for i in range(group.num_columns)}  # fmt: skip
        assert stats["job_key"], name
        assert all(stats.values()) == everything and len(stats) > 5, name


def test_native_and_libdarshan_ingests_give_the_same_warehouse(tmp_path, example_warehouse):
    """The native reader's batch-built tables (job totals come as rows, one table per
    batch) equal libdarshan-util's per-log tables in the warehouse, every table value
    for value (PyDarshan's example logs: POSIX, MPI-IO, STDIO, H5, DXT, HEATMAP, ...)."""
    pytest.importorskip("darshan")
    from test_ingest_crash import assert_same_warehouse

    native, oracle = example_warehouse, Warehouse(tmp_path / "libdarshan", create=True)
    assert ingest(example_logs(), oracle, workers=1, reader="libdarshan").ok
    assert native.table("job_totals").num_rows == len(native.jobs())
    assert_same_warehouse(native, oracle)


def test_native_and_libdarshan_agree_on_a_batch_of_shared_logs(tmp_path, shared):
    """The same on a batch of five 3.x logs of ../shared/darshan-logs (every 16th by name:
    formats 3.10-3.41, POSIX, MPI-IO, STDIO, LUSTRE, HEATMAP and DXT), whose job totals
    have 121 or 192 columns: built from rows in one table, they equal libdarshan-util's
    tables. Big-endian (ppc64) logs are left out: there the native reader returns
    fcounters that libdarshan-util leaves byte-swapped."""
    pytest.importorskip("darshan")
    from tests_support import assert_same_warehouse

    logs = sorted(
        p
        for p in shared("darshan-logs").glob("*.darshan")
        if "example_logs" not in p.name and "ppc64" not in p.name
    )[::16]
    native, oracle = (Warehouse(tmp_path / n, create=True) for n in ("native", "libdarshan"))
    assert ingest(logs, native, workers=1).ok
    assert ingest(logs, oracle, workers=1, reader="libdarshan").ok
    assert len(native.jobs()) == len(logs) == 5
    assert_same_warehouse(native, oracle)


def test_local_batches_keep_every_worker_busy_and_shrink_at_the_end():
    from iosight.warehouse._ingest import _shrinking_batches

    items = list(range(5000))
    sizes = [len(b) for b in _shrinking_batches(items, 256, 2)]
    assert [x for b in _shrinking_batches(items, 256, 2) for x in b] == items  # in order
    assert max(sizes) == 256 and sizes[-5:] == [196, 98, 49, 32, 17]  # a worker's share, >= 32
    assert [len(b) for b in _shrinking_batches(items[:200], 256, 2)] == [100, 50, 32, 18]
    assert [len(b) for b in _shrinking_batches(items[:3], 1, 2)] == [1, 1, 1]
    assert [len(b) for b in _shrinking_batches(items[:13], 1000, 1)] == [13]
    # fewer items than the floor: still one batch a worker
    assert [len(b) for b in _shrinking_batches(items[:10], 256, 2)] == [5, 5]
    assert [len(b) for b in _shrinking_batches(items[:100], 256, 16)] == [7] * 14 + [2]


def test_a_directory_without_sources_ingests_nothing(warehouse, tmp_path):
    (tmp_path / "none").mkdir()
    report = ingest([tmp_path / "none"], warehouse, workers=2)
    assert (report.sources, report.ingested, report.failed) == (0, 0, 0)
    assert ingest([], warehouse).sources == 0


@pytest.mark.parametrize("workers", [1, 2])
def test_a_log_without_records_alone_in_its_batch_gets_its_row(warehouse, shared, workers):
    """A valid log with no counters (its job_totals row is all null) ingests when no log
    of its batch has totals, as when it is ingested alone."""
    log = shared("darshan-logs", "darshan-logs__darshan_logs__empty_log__empty_log.darshan")
    report = ingest([log], warehouse, workers=workers)
    assert (report.ingested, report.failed, report.jobs) == (1, 0, 1)
    keys = warehouse.sql("select job_key from jobs")["job_key"].tolist()
    assert warehouse.sql("select job_key from job_totals")["job_key"].tolist() == keys


@pytest.mark.parametrize(
    ("option", "value"),
    [("batch_size", -4), ("batch_size", 0), ("workers", -1), ("timeout", -1), ("timeout", 0)],
)
def test_out_of_range_counts_and_timeouts_are_refused(warehouse, option, value):
    """Checked before anything is read: a negative batch size used to loop for ever,
    a negative worker count to wait for ever, a negative timeout to fail every log."""
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match=f"the '{option}' parameter must be"):
        ingest(example_logs()[:1], warehouse, **{option: value})
    assert warehouse.tables() == []


def test_file_names_that_are_not_utf8_are_ingested_and_stored_escaped(tmp_path):
    """A file name's bytes need not be UTF-8 (Python holds them as lone surrogates,
    which Arrow cannot store): the log is ingested, a broken one is an error row, and
    both are stored with the bytes written as \\xNN (it was a traceback)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    good = logs / os.fsdecode(b"caf\xe9.darshan")
    good.write_bytes(example_logs()[0].read_bytes())
    (logs / os.fsdecode(b"bad\xff.darshan")).write_bytes(b"not a darshan log")
    wh = Warehouse(tmp_path / "wh", create=True)
    report = ingest([logs], wh, workers=1)
    assert (report.ingested, report.failed) == (1, 1)
    stored = wh.sql("select source_path from sources")["source_path"].tolist()
    assert stored == [str(logs) + "/caf\\xe9.darshan"]
    assert wh.sql("select source_path from jobs")["source_path"].tolist() == stored
    errors = wh.sql("select source_path from ingest_errors")["source_path"].tolist()
    assert errors == [str(logs) + "/bad\\xff.darshan"]
    again = ingest([logs], wh, workers=1)  # nothing stored twice
    assert again.ingested == 0 and wh.sql("select count(*) n from jobs")["n"][0] == 1
