"""Format sniffing: every reader is picked from the file's bytes, compressed or not."""

from __future__ import annotations

import bz2
import gzip
import shutil
from pathlib import Path

import pytest

from iosight._errors import CorruptLogError
from iosight.darshan._sources import read_source, sniff

DATA = Path(__file__).parent / "data"
PARSER_DUMP = DATA / "parser_all_small.txt"


def _example_log() -> Path:
    from darshan.log_utils import get_log_path

    return Path(get_log_path("ior_hdf5_example.darshan"))


@pytest.mark.parametrize("compress", [None, gzip, bz2])
def test_parser_text_is_sniffed_plain_gzip_and_bzip2(tmp_path, compress):
    path = tmp_path / "dump.darshan.txt"
    raw = PARSER_DUMP.read_bytes()
    path.write_bytes(raw if compress is None else compress.compress(raw))
    name, tables = read_source(path)
    assert name == "parser-text"
    assert tables["jobs"]["jobid"].to_pylist() == [4242]


def test_darshan3_and_job_totals_are_sniffed(tmp_path):
    assert sniff(_example_log()).name == "darshan3"
    csv = tmp_path / "totals.csv"
    csv.write_text("jobid,start_time,end_time,nprocs,total_POSIX_BYTES_WRITTEN\n7,0,60,4,1024\n")
    shutil.copy(csv, tmp_path / "plain.csv")
    with open(csv, "rb") as src, gzip.open(tmp_path / "totals.csv.gz", "wb") as dst:
        dst.write(src.read())
    for p in (csv, tmp_path / "totals.csv.gz"):
        name, tables = read_source(p)
        assert name == "job-totals"
        assert tables["job_totals"]["total_POSIX_BYTES_WRITTEN"].to_pylist() == [1024]


def test_darshan2_logs_are_sniffed(shared):
    logs = sorted(shared("darshan-logs").glob("*2.x*.darshan.gz"))
    assert logs
    formats = {sniff(p).name for p in logs}
    assert formats == {"darshan2"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"hello, not a log\n" * 10, "not a Darshan log"),
        (gzip.compress(b"\x00garbage" * 40), "not a Darshan log"),
        (b"\x1f\x8b\x08truncated", "not a Darshan log"),
        (b"BZh9" + b"\xff" * 20, "not a Darshan log"),
    ],
    ids=["empty", "text", "gzip-garbage", "gzip-truncated", "bzip2-garbage"],
)
def test_unknown_bytes_get_a_clear_error(tmp_path, content, message):
    path = tmp_path / "x.darshan.gz"
    path.write_bytes(content)
    with pytest.raises(CorruptLogError, match=message):
        read_source(path)


def test_directory_walk_ingests_every_format(tmp_path, shared, warehouse):
    from iosight.warehouse import ingest

    src = tmp_path / "archive"
    (src / "2012").mkdir(parents=True)
    shutil.copy(_example_log(), src / "a.darshan")
    old = next(iter(sorted(shared("darshan-logs").glob("*2.x*.darshan.gz"))))
    shutil.copy(old, src / "2012" / "b.darshan.gz")
    (src / "c.darshan.txt.gz").write_bytes(gzip.compress(PARSER_DUMP.read_bytes()))
    (src / "notes.md").write_text("not a source, not walked")
    report = ingest([src], warehouse, workers=1)
    assert (report.ingested, report.failed) == (3, 0)
    fmts = warehouse.sql("select source_format from jobs order by 1")["source_format"].tolist()
    assert fmts == ["darshan2", "darshan3", "parser-text"]
