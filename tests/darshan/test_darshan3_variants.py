"""Logs libdarshan-util 3.5 cannot read, built from real ones: bzip2 and uncompressed
regions (``darshan-convert``), DXT with per-segment pthread ids (DXT_POSIX v2 /
DXT_MPIIO v3, darshan's development branch) and modules of an unknown future version."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import darshan3_logs as dl
from iosight.darshan import warnings_in
from iosight.darshan._darshan3 import read_darshan3
from tests_support import SHARED

LOGS = SHARED / "darshan-logs"
DXT = "darshan__darshan-util__pydarshan__darshan__tests__input__sample-dxt-simple.darshan"
SAMPLES = [
    DXT,  # 3.21: POSIX, MPI-IO, DXT_POSIX, DXT_MPIIO
    "darshan-logs__darshan_logs__dlio_logs__snyder_python3_id3116902-2110484_12-19-66980-"
    "9799170114715598281_1.darshan",  # 3.41: LUSTRE, HEATMAP, STDIO
    "darshan-logs__darshan_logs__hdf5_diagonal_write_only__hdf5_diagonal_write_1_byte_dxt.darshan",
    "darshan-logs__darshan_logs__empty_log__empty_log.darshan",
]


def _log(name: str) -> Path:
    path = LOGS / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


def _without_source(tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    out = dict(tables)
    out["jobs"] = out["jobs"].drop_columns(["source_path"])
    return out


def _assert_same(got: dict[str, pa.Table], want: dict[str, pa.Table]) -> None:
    got, want = _without_source(got), _without_source(want)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].equals(want[name]), name


@pytest.mark.parametrize("name", SAMPLES, ids=lambda n: n[-40:])
@pytest.mark.parametrize("comp", [0, 1, 2], ids=["zlib", "bzip2", "none"])
def test_recompressed_log_reads_equal_to_original(tmp_path: Path, name: str, comp: int) -> None:
    original = _log(name)
    log = dl.split(original.read_bytes())
    assert log.comp == 0
    out = tmp_path / f"c{comp}.darshan"
    out.write_bytes(dl.join(log, comp=comp))
    assert out.read_bytes()[16] == comp
    _assert_same(read_darshan3(out), read_darshan3(original))


def _with_thread_ids(log: dl.Log, module: str, version: int, base: int) -> int:
    i = log.module_id(module)
    log.modules[i] = dl.map_dxt_segments(
        log.modules[i], lambda seg, k: seg + struct.pack("<Q", base + k)
    )
    log.versions[i] = version
    return i


def test_dxt_with_pthread_ids_reads_them(tmp_path: Path) -> None:
    original = _log(DXT)
    log = dl.split(original.read_bytes())
    assert log.versions[log.module_id("DXT_POSIX")] == 1
    assert log.versions[log.module_id("DXT_MPIIO")] == 2
    _with_thread_ids(log, "DXT_POSIX", 2, 7000)
    _with_thread_ids(log, "DXT_MPIIO", 3, 90000)
    out = tmp_path / "tid.darshan"
    out.write_bytes(dl.join(log))
    got, want = read_darshan3(out), read_darshan3(original)
    for table, base in (("dxt_posix", 7000), ("dxt_mpiio", 90000)):
        assert "pthread_id" not in want[table].schema.names
        assert want[table].num_rows > 0
        tids = got[table]["pthread_id"].to_numpy()
        np.testing.assert_array_equal(tids, base + np.arange(want[table].num_rows))
        assert got[table].drop_columns(["pthread_id"]).equals(want[table])
    for table in ("posix", "mpiio", "names", "job_totals"):
        assert got[table].equals(want[table])


@pytest.mark.parametrize("module", ["POSIX", "DXT_POSIX"])
def test_unknown_module_version_costs_only_that_module(tmp_path: Path, module: str) -> None:
    original = _log(DXT)
    log = dl.split(original.read_bytes())
    log.versions[log.module_id(module)] = 99
    out = tmp_path / "future.darshan"
    out.write_bytes(dl.join(log))
    got, want = read_darshan3(out), read_darshan3(original)
    lost = {"POSIX": "posix", "DXT_POSIX": "dxt_posix"}[module]
    assert lost in want and lost not in got
    meta = got["jobs"]["metadata"][0].as_py()
    assert f"iosight_warning=module {module} version 99 is newer than this reader" in meta
    for table in ("mpiio", "dxt_mpiio", "names", "mounts"):
        assert got[table].equals(want[table]), table


def test_heatmap_records_of_other_bin_counts_read_one_by_one(tmp_path: Path) -> None:
    """Darshan writes every HEATMAP record with one bin count (read as one view of the
    region); a record of another count (here the first one loses its last bin) is read
    record by record to the same rows, less that bin, the first record's ``nbins`` one
    less."""
    path = _log(SAMPLES[1])
    log = dl.split(path.read_bytes())
    hid = log.module_id("HEATMAP")
    region = log.modules[hid]
    (k,) = struct.unpack_from("<q", region, 24)
    size = 48 + 16 * k
    assert k > 1 and len(region) >= 2 * size
    head = bytearray(region[:48])
    struct.pack_into("<q", head, 24, k - 1)
    writes, reads = region[48 : 48 + 8 * k], region[48 + 8 * k : size]
    log.modules[hid] = bytes(head) + writes[:-8] + reads[:-8] + region[size:]
    changed = tmp_path / "heatmap.darshan"
    changed.write_bytes(dl.join(log))
    want = read_darshan3(path)["heatmap"].to_pandas()
    rid, rank = struct.unpack_from("<Qq", region, 0)
    first = (want["record_id"] == rid) & (want["rank"] == rank)
    assert first.any()
    want.loc[first, "nbins"] = k - 1
    want = want[~(first & (want["bin"] == k - 1))].reset_index(drop=True)  # its last bin
    pd.testing.assert_frame_equal(read_darshan3(changed)["heatmap"].to_pandas(), want)


def test_claimed_nprocs_costs_no_memory(tmp_path: Path) -> None:
    """A job record claiming 10^8 processes (the most the reader accepts) over one
    rank's records: the job totals (the slowest rank's time among them) cost memory for
    the records, not for every rank the log claims, and come out the same."""
    path = _log(SAMPLES[1])
    log = dl.split(path.read_bytes())
    job = bytearray(log.job)
    struct.pack_into("<q", job, 40, 10**8)  # 3.41: uid, start s/ns, end s/ns, nprocs
    log.job = bytes(job)
    claimed = tmp_path / "claimed.darshan"
    claimed.write_bytes(dl.join(log))
    tracemalloc.start()
    try:
        got = read_darshan3(claimed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got["jobs"]["nprocs"][0].as_py() == 10**8
    assert got["job_totals"].equals(read_darshan3(path)["job_totals"])
    assert peak < 32 << 20, peak


@pytest.mark.parametrize(
    ("word", "value", "unknown", "said"),
    [
        (3, -5, {"nprocs": -1}, "garbage nprocs -5 (outside 1..10^8); nprocs unknown"),
        (1, 10**12, {"start_time": None, "run_time": None}, "implausible start time 10000"),
    ],
    ids=["nprocs", "start"],
)
def test_garbage_job_field_is_unknown_not_the_log(
    tmp_path: Path, word: int, value: int, unknown: dict, said: str
) -> None:
    """A job record field out of its plausible range (nprocs outside 1..10^8, a time
    outside 1990-2100) is unknown (-1 or null) with a warning line; the records stay."""
    path = _log(SAMPLES[0])  # 3.21: uid, start, end, nprocs, jobid
    log = dl.split(path.read_bytes())
    job = bytearray(log.job)
    struct.pack_into("<q", job, 8 * word, value)
    log.job = bytes(job)
    changed = tmp_path / "garbage.darshan"
    changed.write_bytes(dl.join(log))
    got, want = read_darshan3(changed), read_darshan3(path)
    row = got["jobs"].to_pylist()[0]
    assert {k: row[k] for k in unknown} == unknown
    assert any(w.startswith(said) for w in warnings_in(row["metadata"])), row["metadata"]
    for table in set(want) - {"jobs"}:
        assert got[table].equals(want[table]), table
