"""POSIX and STDIO counters of small workloads with known I/O, as PyDarshan reads them."""

from __future__ import annotations

import io
import mmap
import os

import pytest

from iosight.trace import ProcessInfo, darshan_hash, trace

darshan = pytest.importorskip("darshan")


def _read_back(log_path, module, path):
    with darshan.DarshanReport(str(log_path), read_all=True) as r:
        assert r.name_records[darshan_hash(str(path))] == str(path)
        df = r.records[module].to_df()
    c, f = df["counters"], df["fcounters"]
    row = c["id"] == darshan_hash(str(path))
    return c[row].iloc[0].to_dict(), f[row].iloc[0].to_dict()


def test_posix_counters(tmp_path):
    data = tmp_path / "data.bin"
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 11)) as t:
        fd = os.open(data, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o640)
        for _ in range(8):
            os.write(fd, b"a" * 4096)  # sequential, consecutive 4 KiB writes
        os.pwrite(fd, b"b" * 100, 65536)  # a 100-byte write past a 32 KiB gap
        os.fsync(fd)
        os.close(fd)
        fd = os.open(data, os.O_RDONLY)
        os.lseek(fd, 1000, os.SEEK_SET)
        os.read(fd, 2000)  # 1000..2999
        os.read(fd, 2000)  # 3000..4999: consecutive
        os.pread(fd, 10, 10000)  # forward jump: sequential, stride 5000
        os.fstat(fd)
        with mmap.mmap(fd, 4096, prot=mmap.PROT_READ):
            pass
        os.close(fd)
        os.stat(data)
    c, f = _read_back(t.finish().log, "POSIX", data)
    expect = {
        "POSIX_OPENS": 2,
        "POSIX_READS": 3,
        "POSIX_WRITES": 9,
        "POSIX_SEEKS": 1,
        "POSIX_STATS": 2,
        "POSIX_MMAPS": 1,
        "POSIX_FSYNCS": 1,
        "POSIX_MODE": 0o640,
        "POSIX_BYTES_READ": 4010,
        "POSIX_BYTES_WRITTEN": 8 * 4096 + 100,
        "POSIX_MAX_BYTE_READ": 10009,
        "POSIX_MAX_BYTE_WRITTEN": 65635,
        "POSIX_CONSEC_WRITES": 7,
        "POSIX_SEQ_WRITES": 8,
        "POSIX_CONSEC_READS": 1,
        "POSIX_SEQ_READS": 3,
        "POSIX_RW_SWITCHES": 1,
        "POSIX_SIZE_WRITE_1K_10K": 8,
        "POSIX_SIZE_WRITE_0_100": 1,
        "POSIX_SIZE_READ_1K_10K": 2,
        "POSIX_SIZE_READ_0_100": 1,
        "POSIX_ACCESS1_ACCESS": 4096,
        "POSIX_ACCESS1_COUNT": 8,
        "POSIX_ACCESS2_ACCESS": 2000,
        "POSIX_ACCESS2_COUNT": 2,
        "POSIX_ACCESS3_ACCESS": 100,
        "POSIX_ACCESS3_COUNT": 1,
        "POSIX_ACCESS4_ACCESS": 10,
        "POSIX_ACCESS4_COUNT": 1,
        # strides: the pwrite skips 65536-32768 bytes, the pread 10000-5000
        "POSIX_STRIDE1_STRIDE": 32768,
        "POSIX_STRIDE1_COUNT": 1,
        "POSIX_STRIDE2_STRIDE": 5000,
        "POSIX_STRIDE2_COUNT": 1,
        "POSIX_STRIDE3_COUNT": 0,
        "POSIX_MAX_READ_TIME_SIZE": c["POSIX_MAX_READ_TIME_SIZE"],
        "rank": 0,
    }
    for k, v in expect.items():
        assert c[k] == v, k
    assert c["POSIX_MAX_READ_TIME_SIZE"] in (2000, 10)
    assert 0 < f["POSIX_F_OPEN_START_TIMESTAMP"] < f["POSIX_F_WRITE_START_TIMESTAMP"]
    assert f["POSIX_F_WRITE_END_TIMESTAMP"] < f["POSIX_F_READ_START_TIMESTAMP"]
    assert f["POSIX_F_READ_START_TIMESTAMP"] < f["POSIX_F_READ_END_TIMESTAMP"]
    assert f["POSIX_F_CLOSE_END_TIMESTAMP"] >= f["POSIX_F_READ_END_TIMESTAMP"]
    for k in ("READ_TIME", "WRITE_TIME", "META_TIME"):
        assert f[f"POSIX_F_{k}"] > 0
    assert f["POSIX_F_MAX_READ_TIME"] <= f["POSIX_F_READ_TIME"]


def test_stdio_counters(tmp_path):
    text, binary = tmp_path / "notes.txt", tmp_path / "blob.bin"
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 12)) as t:
        with open(text, "w") as fh:
            fh.write("alpha\n")
            fh.writelines(["beta\n", "gamma\n"])
            fh.flush()
        with open(text) as fh:
            lines = list(fh)
        with open(binary, "wb") as fh:
            fh.write(b"\0" * 10_000)
        with open(binary, "rb") as fh:
            fh.seek(5000)
            buf = bytearray(3000)
            fh.readinto(buf)
            fh.read()
        with binary.open("ab") as fh:
            fh.write(b"tail")
    log = t.finish().log
    assert lines == ["alpha\n", "beta\n", "gamma\n"]
    c, f = _read_back(log, "STDIO", text)
    assert (c["STDIO_OPENS"], c["STDIO_WRITES"], c["STDIO_FLUSHES"], c["STDIO_READS"]) == (
        2,
        2,
        1,
        3,
    )
    assert (c["STDIO_BYTES_WRITTEN"], c["STDIO_BYTES_READ"]) == (17, 17)
    assert (c["STDIO_MAX_BYTE_WRITTEN"], c["STDIO_MAX_BYTE_READ"]) == (16, 16)
    c, f = _read_back(log, "STDIO", binary)
    assert (c["STDIO_OPENS"], c["STDIO_WRITES"], c["STDIO_READS"], c["STDIO_SEEKS"]) == (3, 2, 2, 1)
    assert c["STDIO_BYTES_WRITTEN"] == 10_004 and c["STDIO_BYTES_READ"] == 5000
    assert c["STDIO_MAX_BYTE_READ"] == 9999 and c["STDIO_MAX_BYTE_WRITTEN"] == 10_003
    assert 0 < f["STDIO_F_OPEN_START_TIMESTAMP"] < f["STDIO_F_WRITE_START_TIMESTAMP"]
    assert f["STDIO_F_READ_TIME"] > 0 and f["STDIO_F_META_TIME"] > 0


def test_file_objects_still_behave(tmp_path):
    p = tmp_path / "x.txt"
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 13)):
        with open(p, "w", encoding="utf-8") as fh:
            assert isinstance(fh, io.TextIOBase) and fh.name == str(p)
            print("printed", file=fh)
        with open(p, "rb") as fh:
            assert isinstance(fh, io.BufferedIOBase) and fh.read() == b"printed\n"
        assert open is not io.open or True
    assert open(p).read() == "printed\n"  # unpatched again


def test_record_limit_counts_overflow(tmp_path):
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 14), record_limit=3) as t:
        for i in range(5):
            (tmp_path / f"f{i}").write_bytes(b"x")
    res = t.finish()
    assert res.records["STDIO"] == 3 and res.dropped["STDIO"] == 2
    with darshan.DarshanReport(str(res.log), read_all=True) as r:
        assert r.modules["STDIO"]["partial_flag"]
        assert r.metadata["job"]["metadata"]["iosight_dropped_STDIO"] == "2"


def test_excluded_paths_are_not_recorded(tmp_path):
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 15)) as t:
        open("/proc/self/status").read()
        os.stat("/etc/hostname") if os.path.exists("/etc/hostname") else None
    assert t.finish().records == {"POSIX": 0, "STDIO": 0, "H5F": 0, "H5D": 0}


def test_forked_child_records_nothing_and_writes_no_log(tmp_path):
    logs = tmp_path / "logs"
    with trace(logs, proc=ProcessInfo(0, 1, 16)) as t:
        fh = open(tmp_path / "f.txt", "w")
        fh.write("parent\n")
        pid = os.fork()
        if pid == 0:  # child: keeps using the inherited file object, then exits
            try:
                fh.write("child\n")
                fh.flush()
                res = t.finish()
                os._exit(0 if res.log is None and not res.records else 1)
            finally:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        fh.close()
    assert os.waitstatus_to_exitcode(status) == 0
    res = t.finish()
    assert len(list(logs.glob("*.darshan"))) == 1 and res.records["STDIO"] == 1


def test_fdopen_counts_on_the_posix_files_stdio_record(tmp_path):
    p = tmp_path / "fd.txt"
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 17)) as t:
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write("via fdopen\n")
            fh.custom_attribute = 1  # an attribute the program adds stays readable
            assert fh.custom_attribute == 1 and fh.mode == "w" and fh.fileno() == fd
    c, _ = _read_back(t.finish().log, "STDIO", p)
    assert (c["STDIO_FDOPENS"], c["STDIO_OPENS"], c["STDIO_BYTES_WRITTEN"]) == (1, 0, 11)


def test_pydarshan_derived_metrics_work_on_traced_logs(tmp_path):
    from darshan.backend.cffi_backend import accumulate_records

    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 18)) as t:
        fd = os.open(tmp_path / "m.bin", os.O_CREAT | os.O_WRONLY, 0o600)
        os.write(fd, b"q" * 3000)
        os.close(fd)
    with darshan.DarshanReport(str(t.finish().log), read_all=True) as r:
        acc = accumulate_records(r.records["POSIX"].to_df(), "POSIX", 1)
    assert acc.derived_metrics.total_bytes == 3000
    assert acc.summary_record["counters"]["POSIX_WRITES"][0] == 1


def test_rename_and_dup(tmp_path):
    a, b = tmp_path / "a.tmp", tmp_path / "b.dat"
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 19)) as t:
        fd = os.open(a, os.O_CREAT | os.O_WRONLY, 0o600)
        fd2 = os.dup(fd)
        os.write(fd2, b"12345")
        os.close(fd2)
        os.close(fd)
        os.rename(a, b)
    log = t.finish().log
    ca, _ = _read_back(log, "POSIX", a)
    assert (ca["POSIX_OPENS"], ca["POSIX_DUPS"], ca["POSIX_WRITES"]) == (2, 1, 1)
    assert ca["POSIX_RENAME_SOURCES"] == 1
    cb, _ = _read_back(log, "POSIX", b)
    assert cb["POSIX_RENAME_TARGETS"] == 1
    with darshan.DarshanReport(str(log), read_all=True) as r:
        df = r.records["POSIX"].to_df()["counters"]
    renamed_from = int(df.loc[df["id"] == darshan_hash(str(b)), "POSIX_RENAMED_FROM"].iloc[0])
    assert renamed_from % (1 << 64) == darshan_hash(str(a))  # an id kept in an int64 counter


def test_readinto1_and_readall_are_counted(tmp_path):
    data = tmp_path / "blob.bin"
    data.write_bytes(b"\1" * 6000)
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 17)) as t:
        with open(data, "rb") as fh:
            buf = bytearray(1000)
            assert fh.readinto1(buf) == 1000
        with open(data, "rb", buffering=0) as fh:  # raw FileIO
            assert len(fh.readall()) == 6000
    c, _ = _read_back(t.finish().log, "STDIO", data)
    assert (c["STDIO_OPENS"], c["STDIO_READS"], c["STDIO_BYTES_READ"]) == (2, 2, 7000)
