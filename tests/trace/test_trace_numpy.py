"""numpy's C-stdio file functions land in STDIO records, counted once, as PyDarshan reads them."""

from __future__ import annotations

import os

import numpy as np
import pytest

from iosight.trace import ProcessInfo, darshan_hash, trace

darshan = pytest.importorskip("darshan")

MODULES = ("posix", "stdio", "numpy")


def _stdio(log, path):
    with darshan.DarshanReport(str(log), read_all=True) as r:
        assert (
            "POSIX" not in r.records
            or not (r.records["POSIX"].to_df()["counters"]["id"] == darshan_hash(str(path))).any()
        )  # numpy's descriptor copies leave no POSIX record behind
        df = r.records["STDIO"].to_df()
    row = df["counters"]["id"] == darshan_hash(str(path))
    return df["counters"][row].iloc[0].to_dict(), df["fcounters"][row].iloc[0].to_dict()


def test_tofile_and_fromfile_on_paths(tmp_path):
    p, a = tmp_path / "a.f8", np.arange(1000, dtype=np.float64)  # 8000 bytes
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 31), modules=MODULES) as t:
        a.tofile(p)
        b = np.fromfile(p)
        c = np.fromfile(str(p), dtype=np.int32, count=10, offset=40)  # bytes 40..79
    assert (b == a).all() and (c == a.view(np.int32)[10:20]).all()
    c, f = _stdio(t.finish().log, p)
    expect = {
        "STDIO_OPENS": 3,  # numpy's open for tofile, one per fromfile
        "STDIO_WRITES": 1,
        "STDIO_READS": 2,
        "STDIO_SEEKS": 0,  # numpy's own seeks around its C stream are not the program's
        "STDIO_FLUSHES": 1,  # tofile flushes the file object before writing through C
        "STDIO_BYTES_WRITTEN": 8000,
        "STDIO_BYTES_READ": 8040,
        "STDIO_MAX_BYTE_WRITTEN": 7999,
        "STDIO_MAX_BYTE_READ": 7999,
    }
    assert {k: c[k] for k in expect} == expect
    assert 0 < f["STDIO_F_WRITE_START_TIMESTAMP"] < f["STDIO_F_WRITE_END_TIMESTAMP"]
    assert f["STDIO_F_WRITE_END_TIMESTAMP"] < f["STDIO_F_READ_START_TIMESTAMP"]
    assert f["STDIO_F_READ_TIME"] > 0 and f["STDIO_F_WRITE_TIME"] > 0


def test_numpy_between_python_reads_and_writes_of_one_file(tmp_path):
    p, a = tmp_path / "mixed.bin", np.arange(500, dtype=np.int32)  # 2000 bytes
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 32), modules=MODULES) as t:
        with open(p, "wb") as fh:
            fh.write(b"head")
            a.tofile(fh)  # bytes 4..2003
            fh.write(b"tail")  # 2004..2007: the file object's offset followed numpy's
        with open(p, "rb") as fh:
            assert fh.read(4) == b"head"
            got = np.fromfile(fh, dtype=np.int32, count=500)
            rest = fh.read()
    assert (got == a).all() and rest == b"tail" and p.stat().st_size == 2008
    c, _ = _stdio(t.finish().log, p)
    assert (c["STDIO_WRITES"], c["STDIO_BYTES_WRITTEN"], c["STDIO_MAX_BYTE_WRITTEN"]) == (
        3,
        2008,
        2007,
    )
    assert (c["STDIO_READS"], c["STDIO_BYTES_READ"], c["STDIO_MAX_BYTE_READ"]) == (3, 2008, 2007)
    assert (c["STDIO_OPENS"], c["STDIO_SEEKS"]) == (2, 0)


def test_text_mode_counts_the_characters_moved(tmp_path):
    p, a = tmp_path / "a.txt", np.array([1.5, 2.25, 3.0])
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 33), modules=MODULES) as t:
        a.tofile(p, sep=",")
        b = np.fromfile(p, sep=",")
    assert (b == a).all()
    size = p.stat().st_size  # "1.5,2.25,3.0"
    c, _ = _stdio(t.finish().log, p)
    assert (c["STDIO_BYTES_WRITTEN"], c["STDIO_BYTES_READ"]) == (size, size) == (12, 12)


def test_save_and_load_are_counted_once(tmp_path):
    p, a = tmp_path / "a.npy", np.ones((10, 100))
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 34), modules=MODULES) as t:
        np.save(p, a)
        assert (np.load(p) == a).all()
    c, _ = _stdio(t.finish().log, p)
    size = p.stat().st_size  # 128-byte header + 8000 bytes
    assert c["STDIO_BYTES_WRITTEN"] == size == 8128 and c["STDIO_MAX_BYTE_WRITTEN"] == size - 1
    assert c["STDIO_MAX_BYTE_READ"] == size - 1


def test_programs_own_dup_of_a_read_only_file_is_no_write(tmp_path):
    p = tmp_path / "r.bin"
    p.write_bytes(b"x" * 100)
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 35), modules=MODULES) as t:
        with open(p, "rb") as fh:
            os.close(os.dup(fh.fileno()))
            fh.seek(50)
            fh.read()
    c, _ = _stdio(t.finish().log, p)
    assert (c["STDIO_WRITES"], c["STDIO_SEEKS"], c["STDIO_BYTES_READ"]) == (0, 1, 50)


def test_untraced_files_pass_through(tmp_path):
    a = np.arange(3, dtype=np.uint8)
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 36), modules=MODULES) as t:
        a.tofile(tmp_path / "logs" / "inside-log-dir.bin")  # the log directory is excluded
        assert (np.fromfile(tmp_path / "logs" / "inside-log-dir.bin", dtype=np.uint8) == a).all()
    assert t.finish().records["STDIO"] == 0
