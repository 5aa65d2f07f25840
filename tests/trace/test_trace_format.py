"""The log writer: hand-built records read back by PyDarshan value by value."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import CorruptLogError
from iosight.trace import darshan_hash, read_log, write_log
from iosight.trace._format import COUNTER_NAMES, Job, LogContent, record_dtype

darshan = pytest.importorskip("darshan")


def _hand_log() -> LogContent:
    rng = np.random.default_rng(0)
    recs = {}
    for mod, paths, ranks in (
        ("POSIX", ["/scratch/a", "/scratch/b", "/scratch/c"], [0, 1, -1]),
        ("STDIO", ["/scratch/a", "/home/u/log.txt"], [0, 0]),
    ):
        arr = np.zeros(len(paths), dtype=record_dtype(mod))
        arr["id"] = [darshan_hash(p) for p in paths]
        arr["rank"] = ranks
        arr["counters"] = rng.integers(0, 10**9, size=arr["counters"].shape)
        arr["fcounters"] = rng.random(size=arr["fcounters"].shape) * 100
        recs[mod] = arr
    names = {
        darshan_hash(p): p for p in ["/scratch/a", "/scratch/b", "/scratch/c", "/home/u/log.txt"]
    }
    job = Job(
        uid=1234,
        start_time_sec=1_700_000_000,
        start_time_nsec=123,
        end_time_sec=1_700_000_042,
        end_time_nsec=456,
        nprocs=2,
        jobid=987654,
        metadata={"lib_ver": "iosight-trace", "h": "x=1"},
    )
    mounts = [("/", "overlay"), ("/scratch", "lustre"), ("/home", "nfs")]
    return LogContent(job, "python train.py --epochs 3", mounts, names, recs, {"STDIO"})


def test_pydarshan_reads_every_value(tmp_path):
    log = _hand_log()
    path = write_log(tmp_path / "hand.darshan", log)
    with darshan.DarshanReport(str(path), read_all=True) as r:
        job = r.metadata["job"]
        assert (job["uid"], job["nprocs"], job["jobid"]) == (1234, 2, 987654)
        assert (job["start_time_sec"], job["start_time_nsec"]) == (1_700_000_000, 123)
        assert (job["end_time_sec"], job["end_time_nsec"]) == (1_700_000_042, 456)
        assert job["log_ver"] == "3.41"
        assert job["metadata"] == {"lib_ver": "iosight-trace", "h": "x=1"}
        assert r.metadata["exe"] == "python train.py --epochs 3"
        assert sorted(r.mounts) == sorted((p, t) for p, t in log.mounts)
        assert r.name_records == log.names
        assert r.modules["STDIO"]["partial_flag"] and not r.modules["POSIX"]["partial_flag"]
        assert (r.modules["POSIX"]["ver"], r.modules["STDIO"]["ver"]) == (4, 2)
        for mod, recs in log.records.items():
            got = r.records[mod].to_df()
            c, f = got["counters"], got["fcounters"]
            for rec in recs:
                row = (c["id"] == rec["id"]) & (c["rank"] == rec["rank"])
                assert row.sum() == 1
                names, fnames = COUNTER_NAMES[mod]
                np.testing.assert_array_equal(c.loc[row, names].to_numpy()[0], rec["counters"])
                np.testing.assert_array_equal(f.loc[row, fnames].to_numpy()[0], rec["fcounters"])


def test_own_reader_round_trips(tmp_path):
    log = _hand_log()
    back = read_log(write_log(tmp_path / "x.darshan", log))
    assert back.job == log.job and back.exe == log.exe and back.mounts == log.mounts
    assert back.names == log.names and back.partial == {"STDIO"}
    for mod, recs in log.records.items():
        order = np.lexsort((recs["id"], -recs["rank"]))
        assert back.records[mod].tobytes() == recs[order].tobytes()


def test_record_ids_match_real_darshan_logs(shared):
    path = shared(
        "darshan-logs",
        "darshan-logs__darshan_logs__dlio_logs__snyder_python3_id3116902-2111438_12-19-67036-"
        "13923816086988003757_1.darshan",
    )
    from darshan.backend import cffi_backend as cb

    handle = cb.log_open(str(path))
    try:
        names = cb.log_get_name_records(handle)
    finally:
        cb.log_close(handle)
    assert len(names) > 10
    assert all(darshan_hash(name) == rid for rid, name in names.items())


def test_hash_hand_values():
    # lengths 0, 23 and 24 take the three paths of lookup8's tail handling
    assert darshan_hash("") != darshan_hash("a")
    assert darshan_hash("x" * 24) != darshan_hash("x" * 23)
    assert darshan_hash("<STDIN>") == 14734109647742566553  # id Darshan 3.4.6 gives it


def test_corrupt_logs_are_refused(tmp_path):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"not a darshan log at all" * 100)
    with pytest.raises(CorruptLogError, match="not a zlib Darshan"):
        read_log(bad)
    with pytest.raises(CorruptLogError, match="cannot read"):
        read_log(tmp_path / "missing.darshan")
