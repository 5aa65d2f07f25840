"""Hostile input stays data: thousands of mutated real logs through the native reader.

Mutations (seeded, so a failure reproduces): bit flips anywhere, truncations, header
and region-map fields set to lies (lengths past the end, counts in the billions,
overlapping regions, unknown compression), junk compressed streams, and 8-byte words
inside inflated regions overwritten (record counts, bins, stripes, nprocs, times).
Only :class:`CorruptLogError` may escape, with a one-line reason; what does read passes
the plausibility rules (nprocs in 1..10^8, times in 1990-2100, no negative counts), or
says with a warning line that a job field is unknown (nprocs -1, a time null).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

import darshan3_logs as dl
from iosight._errors import CorruptLogError, IosightError
from iosight.darshan import warnings_in
from iosight.darshan._darshan3 import MAX_LOG_BYTES, read_darshan3_bytes
from tests_support import SHARED

SEEDS = [
    "darshan__darshan-util__pydarshan__darshan__tests__input__sample-dxt-simple.darshan",
    "darshan-logs__darshan_logs__dlio_logs__snyder_python3_id3116902-2110484_12-19-66980-"
    "9799170114715598281_1.darshan",
    "darshan-logs__darshan_logs__release_logs__mpi-io-test-x86_64-3.4.5.darshan",
    "darshan-logs__darshan_logs__release_logs__mpi-io-test-ppc64-3.1.8.darshan",
    "darshan-logs__darshan_logs__release_logs__mpi-io-test-x86_64-3.0.0.darshan",
    "darshan-logs__darshan_logs__empty_log__empty_log.darshan",
]
PER_SEED = 800
_WORDS = [-1, 0, 1, 2**31, 2**40, 2**62, -(2**62), 10**9]


def _seeds() -> list[bytes]:
    paths = [SHARED / "darshan-logs" / n for n in SEEDS]
    if not all(p.exists() for p in paths):
        pytest.skip("../shared/darshan-logs not present")
    return [p.read_bytes() for p in paths]


def _map_fields(blob: bytes) -> list[int]:
    """Byte offsets of the header's 8-byte region-map fields (name map + module maps)."""
    n, at = (64, 32) if blob[:4] >= b"3.41" else (16, 24)
    return [at + 8 * i for i in range(2 + 2 * n)]


def _mutate(blob: bytes, rng: np.random.Generator) -> bytes:
    kind = rng.integers(7)
    b = bytearray(blob)
    if kind == 0:  # bit flips anywhere
        for pos in rng.integers(0, len(b), rng.integers(1, 9)):
            b[pos] ^= 1 << int(rng.integers(8))
    elif kind == 1:  # truncation
        del b[int(rng.integers(0, len(b))) :]
    elif kind == 2:  # a region-map field lies
        at = int(rng.choice(_map_fields(blob)))
        value = int(rng.choice([*_WORDS[1:], len(b) - 1, len(b) + 9, int(rng.integers(0, len(b)))]))
        struct.pack_into("<Q" if blob[8] == 0x37 else ">Q", b, at, value % 2**64)
    elif kind == 3:  # header scalars: compression type, partial flags, module versions
        pos = int(rng.choice([16, 20, 24, len(blob) and _map_fields(blob)[-1] + 8 + 4 * 3]))
        b[pos] = int(rng.integers(256))
    elif kind == 4:  # a region's compressed stream replaced by junk
        log = dl.split(blob) if blob[8] == 0x37 else None
        if log and log.modules:
            i = int(rng.choice(list(log.modules)))
            raw = dl.join(log)
            junk = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
            return raw.replace(zlib.compress(log.modules[i]), junk, 1)
    else:  # words inside an inflated region overwritten (counts, nprocs, times)
        if blob[8] != 0x37:  # the test writer handles little-endian logs only
            return bytes(b[: len(b) // 2])
        log = dl.split(blob)
        regions = ["job", "names", *log.modules]
        which = regions[int(rng.integers(len(regions)))]
        data = bytearray(
            log.job if which == "job" else log.names if which == "names" else log.modules[which]
        )
        for _ in range(int(rng.integers(1, 4))):
            if len(data) >= 8:
                at = int(rng.integers(0, len(data) // 8)) * 8
                struct.pack_into("<q", data, at, int(rng.choice(_WORDS)))
        if which == "job":
            log.job = bytes(data)
        elif which == "names":
            log.names = bytes(data)
        else:
            log.modules[which] = bytes(data)
        return dl.join(log)
    return bytes(b)


def _plausible(tables: dict) -> None:
    job = tables["jobs"].to_pylist()[0]
    warned = bool(warnings_in(job["metadata"]))
    assert 0 < job["nprocs"] <= 10**8 or (job["nprocs"] == -1 and warned)
    for t in (job["start_time"], job["end_time"]):
        if t is None:
            assert warned and job["run_time"] is None
        else:
            assert int(t) == 0 or 631152000 <= t <= 4102444800 + 1  # 0: unset
    for name in ("dxt_posix", "dxt_mpiio"):
        if name in tables:
            assert tables[name]["seq"].to_numpy().min() >= 0
    if "heatmap" in tables:
        assert tables["heatmap"]["bin"].to_numpy().min() >= 0
    cells = sum(t.num_rows * t.num_columns for t in tables.values())
    assert cells * 8 <= 4 * MAX_LOG_BYTES


def test_mutated_logs_are_data_not_crashes() -> None:
    rng = np.random.default_rng(12)
    read = rejected = 0
    for seed in _seeds():
        for _ in range(PER_SEED):
            blob = _mutate(seed, rng)
            try:
                tables = read_darshan3_bytes(blob, "fuzz.darshan")
            except CorruptLogError as err:
                assert isinstance(err, IosightError)
                assert "\n" not in str(err) and str(err).startswith("fuzz.darshan: ")
                rejected += 1
                continue
            _plausible(tables)
            read += 1
    # both outcomes occur: the mutations reach the checks and the tolerant paths
    assert read > 100 and rejected > 100, (read, rejected)
