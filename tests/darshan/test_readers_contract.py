"""The reader contract, checked on every :data:`~iosight.darshan.READERS` entry (as
scikit-learn's ``test_common.py`` checks every estimator): a registered reader reads a
real source of its format into a :class:`~iosight.darshan.LogTables` of warehouse
tables, is the one picked for that source, refuses an empty, truncated or corrupt
file with a :class:`CorruptLogError` naming the file, and reads in a way that
``ingest --reader`` accepts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from iosight._errors import CorruptLogError
from iosight.darshan import (
    MODULE_TABLES,
    READERS,
    LogTables,
    jobs_schema,
    read_source,
    reader_ways,
)
from iosight.darshan._sources import sniff
from tests_support import shared_path, summit_totals

WAREHOUSE_TABLES = set(MODULE_TABLES.values()) | {"jobs", "names", "mounts", "job_totals"}
PARSER_DUMP = Path(__file__).parent / "data" / "parser_all_small.txt"


def _darshan3_log(tmp: Path) -> Path:
    from darshan.log_utils import get_log_path

    return Path(get_log_path("ior_hdf5_example.darshan"))


def _darshan2_log(tmp: Path) -> Path:
    return sorted(shared_path("darshan-logs").glob("*2.x*.darshan.gz"))[0]


# a real source of each format
SAMPLES = {
    "darshan3": _darshan3_log,
    "darshan2": _darshan2_log,
    "parser-text": lambda tmp: PARSER_DUMP,
    "job-totals": summit_totals,
}


@pytest.fixture(params=READERS.names())
def reader_and_sample(request, tmp_path):
    reader = READERS.get(request.param)
    return reader, SAMPLES[reader.format](tmp_path)


def test_every_format_has_a_sample_and_a_native_reader():
    formats = {r.format for _, r in READERS.items()}
    assert formats == set(SAMPLES)
    assert {r.format for _, r in READERS.items() if r.way == "native"} == formats


def test_reads_a_real_source_into_warehouse_tables(reader_and_sample):
    reader, sample = reader_and_sample
    log = reader.read(sample, False)
    assert isinstance(log, LogTables)
    assert set(log) <= WAREHOUSE_TABLES and {"jobs", "job_totals"} <= set(log)
    for name in log:
        assert isinstance(log[name], pa.Table), name
        assert "job_key" not in log[name].column_names, name  # ingest adds it
    jobs = log["jobs"]
    assert jobs.num_rows >= 1
    assert jobs.select(jobs_schema().names).schema == jobs_schema()
    assert set(jobs["source_format"].to_pylist()) <= {reader.format}
    assert log["job_totals"].num_rows == jobs.num_rows


def test_is_the_reader_picked_for_its_source(reader_and_sample):
    reader, sample = reader_and_sample
    assert sniff(sample, reader.way) is reader
    fmt, log = read_source(sample, reader=reader.way)
    assert fmt == reader.format
    assert dict(log) == dict(reader.read(sample, False))


def _damaged(raw: bytes) -> dict[str, bytes]:
    noise = np.random.default_rng(0).bytes(len(raw) - 64)
    return {"empty": b"", "truncated": raw[: len(raw) // 2], "corrupt": raw[:64] + noise}


@pytest.mark.parametrize("damage", ["empty", "truncated", "corrupt"])
def test_refuses_a_damaged_file_naming_it(reader_and_sample, tmp_path, damage):
    reader, sample = reader_and_sample
    bad = tmp_path / f"{damage}-{sample.name}"
    bad.write_bytes(_damaged(sample.read_bytes())[damage])
    with pytest.raises(CorruptLogError) as err:
        reader.read(bad, False)
    assert str(err.value).startswith(f"{bad}: ")


def test_reads_in_a_way_ingest_accepts(reader_and_sample, tmp_path):
    from iosight.cli import app
    from iosight.warehouse import check_ingest_args

    reader, sample = reader_and_sample
    check_ingest_args([sample], workers=1, reader=reader.way)
    res = CliRunner().invoke(app, ["ingest", str(sample), "-w", str(tmp_path / "wh"),
                                   "--reader", "no-such-way"])  # fmt: skip
    assert res.exit_code != 0 and not (tmp_path / "wh").exists()
    assert f"choose one of: {', '.join(reader_ways())}" in res.output
    assert reader.way in reader_ways()
