"""Darshan 2.x reader: the shared 2.x logs, hand-built logs, and broken inputs."""

from __future__ import annotations

import csv
import gzip
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from iosight._errors import CorruptLogError
from iosight.darshan._darshan2 import job_totals, read_darshan2
from iosight.darshan._darshan2_counters import (
    CP_COUNTERS,
    CP_F_COUNTERS,
    MISSING_COUNTERS,
    MPIIO_COLUMNS,
    POSIX_COLUMNS,
)
from iosight.darshan._tables import JOB_COLUMNS, jobs_schema

BUCKETS = "0_100 100_1K 1K_10K 10K_100K 100K_1M 1M_4M 4M_10M 10M_100M 100M_1G 1G_PLUS".split()


def _manifest_2x(shared) -> list[dict]:
    root = shared("darshan-logs")
    with open(root / "MANIFEST.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    picked = [r for r in rows if r["format"].startswith("darshan-2")]
    for r in picked:
        r["path"] = root / r["filename"]
    return picked


def test_counter_tables_cover_every_2x_counter_once():
    assert len(CP_COUNTERS) == 144 and len(CP_F_COUNTERS) == 18
    mapped = set(POSIX_COLUMNS) | set(MPIIO_COLUMNS)
    assert mapped == set(CP_COUNTERS) | set(CP_F_COUNTERS)
    assert not set(POSIX_COLUMNS) & set(MPIIO_COLUMNS)
    # 3.x names are unique within a table
    assert len(set(POSIX_COLUMNS.values())) == len(POSIX_COLUMNS)
    assert len(set(MPIIO_COLUMNS.values())) == len(MPIIO_COLUMNS)
    # the shift tables of darshan-logutils.c: 1.21 records 133+12, 1.22 138+14, 1.24 140+14
    for version, (nc, nf) in {"1.21": (133, 12), "1.22": (138, 14), "1.24": (140, 14)}.items():
        missing, f_missing = MISSING_COUNTERS[version]
        assert 144 - len(missing) == nc and 18 - len(f_missing) == nf


def test_every_shared_2x_log_reads_or_fails_cleanly(shared):
    rows = _manifest_2x(shared)
    assert len(rows) >= 38
    read = 0
    for row in rows:
        try:
            tables = read_darshan2(row["path"])
        except CorruptLogError as err:
            assert str(err) and "\n" not in str(err)
            continue
        read += 1
        job = tables["jobs"]
        assert job.schema.equals(jobs_schema()) and job.num_rows == 1
        j = job.to_pylist()[0]
        assert j["log_version"] == row["darshan_log_version"]
        for col in ("nprocs", "jobid"):
            if row[col]:
                assert j[col] == int(row[col])
        if row["start_time_epoch"]:
            assert j["start_time"] == float(row["start_time_epoch"])
        assert j["nprocs"] > 0 and j["end_time"] >= j["start_time"]
        assert "job_key" not in job.column_names
        posix = tables["posix"].to_pandas()
        assert posix.shape[0] > 0
        assert tables["posix"].column_names[:2] == ["rank", "record_id"]
        assert (posix["POSIX_BYTES_READ"] >= 0).all() and (posix["POSIX_BYTES_WRITTEN"] >= 0).all()
        # the access-size histogram counts every read/write (posix + stdio level):
        # fails if any counter lands at the wrong index
        hist_r = posix[[f"POSIX_SIZE_READ_{b}" for b in BUCKETS]].sum(axis=1)
        hist_w = posix[[f"POSIX_SIZE_WRITE_{b}" for b in BUCKETS]].sum(axis=1)
        assert (hist_r == posix["POSIX_READS"] + posix["CP_POSIX_FREADS"]).all()
        assert (hist_w == posix["POSIX_WRITES"] + posix["CP_POSIX_FWRITES"]).all()
        # bytes written fit below the highest offset written (+1) times the ranks
        shared_rows = posix["rank"] == -1
        assert (posix.loc[~shared_rows, "POSIX_MAX_BYTE_WRITTEN"] + 1 >= 0).all()
        names = tables["names"]
        assert set(names["record_id"].to_pylist()) == set(posix["record_id"])
        totals = tables["job_totals"].to_pylist()[0]
        assert totals["total_POSIX_BYTES_WRITTEN"] == posix["POSIX_BYTES_WRITTEN"].sum()
    assert read >= 36


def test_shared_logs_agree_with_their_file_names(shared):
    """2.x log names hold ``id<jobid>_<month>-<day>-<seconds of day>``: check the header."""
    checked = 0
    for row in _manifest_2x(shared):
        m = re.search(r"[_-]id(\d+)_(\d+)-(\d+)-(\d+)", row["filename"])
        version = tuple(int(x) for x in row["darshan_log_version"].split("."))
        if not m or version < (1, 21):  # 1.4: unsupported, raises (test above)
            continue
        j = read_darshan2(row["path"])["jobs"].to_pylist()[0]
        jobid, seconds = int(m.group(1)), int(m.group(4))
        if version < (2, 0):
            assert j["jobid"] == 0  # 1.x formats had no job id
        elif version >= (2, 1):
            assert j["jobid"] == jobid
        # same second of the day up to the time zone (whole hours) and a minute of slack
        off = (j["start_time"] - seconds) % 1800
        assert min(off, 1800 - off) < 60
        exe = Path(j["exe"].split()[0]).name
        assert exe.split("-")[0] in row["filename"]
        checked += 1
    assert checked >= 30


# ---- hand-built logs ---------------------------------------------------------


def _log_205(order: str, records: list[tuple[int, int, str, dict, dict]]) -> bytes:
    """A format 2.05 log built with ``struct`` (independent of the reader's dtypes)."""
    job = struct.pack(
        order + "8sqqqqqq", b"2.05", 6567223, 1000, 1_400_000_000, 1_400_000_009, 4, 77
    )
    job += b"lib_ver=2.2.9\n".ljust(1024, b"\0")
    exe = b"./app -x\n2049\text4\t/\n7\tlustre\t/scratch"
    out = job + exe.ljust(4096 - len(job), b"\0")
    for hsh, rank, name, ints, floats in records:
        counters = [ints.get(c, 0) for c in CP_COUNTERS]
        fcounters = [floats.get(c, 0.0) for c in CP_F_COUNTERS]
        out += struct.pack(order + "Qq16s144q18d", hsh, rank, name.encode(), *counters, *fcounters)
    return out


RECORDS = [
    (
        2**63 + 5,
        -1,
        "ratch/out.dat",
        {
            "CP_POSIX_WRITES": 8,
            "CP_BYTES_WRITTEN": 8 << 20,
            "CP_MAX_BYTE_WRITTEN": (8 << 20) - 1,
            "CP_SIZE_WRITE_1M_4M": 8,
            "CP_COLL_WRITES": 4,
            "CP_DEVICE": 7,
        },
        {"CP_F_WRITE_START_TIMESTAMP": 0.5, "CP_F_WRITE_END_TIMESTAMP": 3.0},
    ),
    (
        11,
        2,
        "input.txt",
        {"CP_POSIX_READS": 3, "CP_BYTES_READ": 300, "CP_SIZE_READ_100_1K": 3, "CP_DEVICE": 2049},
        {"CP_F_READ_START_TIMESTAMP": 0.25, "CP_F_READ_END_TIMESTAMP": 5.0},
    ),
]


@pytest.mark.parametrize("order", ["<", ">"])
def test_hand_built_205_log_either_byte_order(tmp_path, order):
    path = tmp_path / "a.darshan.gz"
    path.write_bytes(gzip.compress(_log_205(order, RECORDS)))
    t = read_darshan2(path)
    j = t["jobs"].to_pylist()[0]
    assert (j["jobid"], j["uid"], j["nprocs"], j["exe"]) == (77, 1000, 4, "./app -x")
    assert (j["start_time"], j["end_time"], j["run_time"]) == (1.4e9, 1.4e9 + 9, 10.0)
    assert j["lib_version"] == "2.2.9" and j["modules"] == "POSIX,MPI-IO"
    assert t["mounts"].to_pylist() == [
        {"mount_point": "/", "fs_type": "ext4"},
        {"mount_point": "/scratch", "fs_type": "lustre"},
    ]
    p = t["posix"].to_pylist()
    assert [r["record_id"] for r in p] == [2**63 + 5, 11] and [r["rank"] for r in p] == [-1, 2]
    assert p[0]["POSIX_BYTES_WRITTEN"] == 8 << 20 and p[1]["POSIX_BYTES_READ"] == 300
    assert p[0]["POSIX_F_WRITE_END_TIMESTAMP"] == 3.0
    m = t["mpiio"].to_pylist()
    assert len(m) == 1 and m[0]["MPIIO_COLL_WRITES"] == 4 and m[0]["record_id"] == 2**63 + 5
    names = {r["name"]: (r["mount_point"], r["fs_type"]) for r in t["names"].to_pylist()}
    assert names == {"ratch/out.dat": ("/scratch", "lustre"), "input.txt": ("/", "ext4")}
    tot = t["job_totals"].to_pylist()[0]
    assert tot["total_POSIX_BYTES_READ"] == 300 and tot["total_POSIX_BYTES_WRITTEN"] == 8 << 20
    assert tot["total_POSIX_F_READ_START_TIMESTAMP"] == 0.25  # min of the positive ones
    assert tot["total_POSIX_F_WRITE_START_TIMESTAMP"] == 0.5
    assert tot["total_POSIX_F_READ_END_TIMESTAMP"] == 5.0
    assert tot["total_MPIIO_COLL_WRITES"] == 4


def test_hand_built_121_log_is_widened(tmp_path):
    """Format 1.21: big-endian 32-bit header and 133+12 counters placed at 2.x indices."""
    missing, f_missing = MISSING_COUNTERS["1.21"]
    present = [c for c in CP_COUNTERS if c not in missing]
    f_present = [c for c in CP_F_COUNTERS if c not in f_missing]
    head = struct.pack(">8siIiii", b"1.21", 0, 4279, 74, 75, 4) + b"/bin/app"
    data = head.ljust(1024, b"\0")
    values = {c: i + 1 for i, c in enumerate(present)}
    fvalues = {c: i + 0.5 for i, c in enumerate(f_present)}
    data += struct.pack(
        ">Qi4x133q12d12s4x",
        42,
        -1,
        *[values[c] for c in present],
        *[fvalues[c] for c in f_present],
        b"t-1.1.1.dat",
    )
    path = tmp_path / "old.darshan.gz"
    path.write_bytes(gzip.compress(data))
    t = read_darshan2(path)
    j = t["jobs"].to_pylist()[0]
    assert (j["nprocs"], j["uid"], j["start_time"], j["jobid"]) == (4, 4279, 74.0, 0)
    row = t["posix"].to_pylist()[0]
    assert row["POSIX_BYTES_READ"] == values["CP_BYTES_READ"]
    assert row["CP_SIZE_AT_OPEN"] == 0 and row["CP_HDF5_OPENS"] == 0  # absent in 1.21
    assert row["POSIX_ACCESS4_COUNT"] == values["CP_ACCESS4_COUNT"]
    assert row["POSIX_F_META_TIME"] == fvalues["CP_F_POSIX_META_TIME"]
    assert row["POSIX_F_MAX_READ_TIME"] == 0.0
    assert t["names"].to_pylist()[0]["name"] == "t-1.1.1.dat"
    mpi = t["mpiio"].to_pylist()[0]
    assert mpi["MPIIO_INDEP_OPENS"] == values["CP_INDEP_OPENS"]
    assert mpi["MPIIO_F_WRITE_TIME"] == fvalues["CP_F_MPI_WRITE_TIME"]


def test_broken_inputs_raise_corrupt_log_error(tmp_path):
    good = gzip.compress(_log_205("<", RECORDS))
    raw = _log_205("<", RECORDS)
    cases = {
        "empty": b"",
        "random": np.random.default_rng(0).bytes(4000),
        "truncated_gzip": good[: len(good) // 2],
        "short_record": gzip.compress(raw[:-100]),
        "short_header": gzip.compress(raw[:40]),
        "bad_magic": gzip.compress(raw[:8] + b"\x01" * 8 + raw[16:]),
        "version": gzip.compress(b"9.99" + raw[4:]),
        "text": gzip.compress(b"# darshan log version: 3.41\n" * 100),
        "nonsense": gzip.compress(b"abc" * 2000),
    }
    for name, blob in cases.items():
        path = tmp_path / f"{name}.darshan.gz"
        path.write_bytes(blob)
        with pytest.raises(CorruptLogError) as err:
            read_darshan2(path)
        assert str(err.value) and "\n" not in str(err.value), name
        assert str(err.value).startswith(str(path)), name
    with pytest.raises(CorruptLogError, match="not a file"):
        read_darshan2(tmp_path)


def test_job_totals_rules_by_hand():
    import pyarrow as pa

    posix = pa.table(
        {
            "rank": pa.array([0, 1, 2], pa.int64()),
            "record_id": pa.array([1, 1, 2], pa.uint64()),
            "POSIX_READS": pa.array([1, 2, 3], pa.int64()),
            "POSIX_MAX_BYTE_READ": pa.array([10, 99, 5], pa.int64()),
            "POSIX_F_READ_START_TIMESTAMP": [0.0, 2.5, 1.5],
            "POSIX_F_READ_END_TIMESTAMP": [0.0, 7.0, 9.0],
            "POSIX_F_READ_TIME": [0.5, 0.25, 0.25],
            "POSIX_MODE": pa.array([436, 420, 436], pa.int64()),
        }
    )
    t = job_totals({"posix": posix, "names": pa.table({"x": [1]})}).to_pylist()
    assert t == [
        {
            "total_POSIX_READS": 6,
            "total_POSIX_MAX_BYTE_READ": 99,
            "total_POSIX_F_READ_START_TIMESTAMP": 1.5,
            "total_POSIX_F_READ_END_TIMESTAMP": 9.0,
            "total_POSIX_F_READ_TIME": 1.0,
            "total_POSIX_MODE": 436,
        }
    ]


def test_job_columns_order_matches_contract(tmp_path):
    path = tmp_path / "a.darshan.gz"
    path.write_bytes(gzip.compress(_log_205("<", RECORDS)))
    assert tuple(read_darshan2(path)["jobs"].column_names) == JOB_COLUMNS
