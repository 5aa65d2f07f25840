"""DXT-heavy job logs made with iosight's own tracer: many ranks, millions of small operations.

The field's big-trace problem (PyDarshan needing more than 7 GB for a log of 600,000 DXT
segments, darshan-hpc/darshan issues #692, #779 and #802) needs logs of millions of
segments to measure against. One process is traced for real with DXT on (small
``pwrite``/``pread`` calls on one shared file); its log is then replicated as every rank
of the job, each rank's copy starting 0.1 ms after the previous one, and the
copies are merged as the tracer merges per-rank logs (shared records reduced to rank -1,
DXT records kept per rank). The I/O pattern is one real process's; its repetition across
ranks is synthetic, and the job's metadata says so.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

import numpy as np

from iosight.trace._extra import _DXT_HEAD
from iosight.trace._format import LogContent, write_log
from iosight.trace._merge import combine
from iosight.trace._process import ProcessInfo
from iosight.trace._session import trace

_OP_BYTES = 64  # bytes per traced operation: small, as in the issues' big DXT logs


def dxt_heavy_log(out: str | Path, segments: int, ranks: int = 1024) -> Path:
    """Write a job log of ``ranks`` processes and at least ``segments`` DXT segments
    (a whole number per rank: ``ceil(segments / ranks)`` each) to ``out``."""
    per_rank = -(-segments // ranks)
    with tempfile.TemporaryDirectory() as tmp:
        one = _traced_rank(Path(tmp), per_rank, ranks)
        log = combine([_as_rank(one, r) for r in range(ranks)])
    log.job.metadata["iosight_synthetic"] = f"one traced process replicated as {ranks} ranks"
    return write_log(out, log)


def _traced_rank(tmp: Path, ops: int, ranks: int) -> LogContent:
    """Rank 0's log: ``ops`` small operations (writes, then reads of them) traced with DXT."""
    from iosight.trace._format import read_log

    proc = ProcessInfo(rank=0, nprocs=ranks, jobid=4242)
    with trace(tmp / "logs", proc=proc, dxt=True, modules=("posix",)) as t:
        fd = os.open(tmp / "shared.dat", os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
        block = b"x" * _OP_BYTES
        writes = (ops + 1) // 2
        for i in range(writes):
            os.pwrite(fd, block, i * _OP_BYTES)
        for i in range(ops - writes):
            os.pread(fd, _OP_BYTES, i * _OP_BYTES)
        os.close(fd)
    return read_log(t.finish().partial)


def _as_rank(log: LogContent, rank: int) -> LogContent:
    """``log`` (rank 0's) as rank ``rank``'s: its records and DXT heads name that rank and
    its start and end are ``rank`` tenths of a millisecond later (the merge shifts its
    times by as much)."""
    records = {}
    for mod, recs in log.records.items():
        recs = recs.copy()
        recs["rank"] = rank
        records[mod] = recs
    start_ns = log.job.start_time_nsec + 100_000 * rank
    end_ns = log.job.end_time_nsec + 100_000 * rank
    job = dataclasses.replace(
        log.job,
        start_time_sec=log.job.start_time_sec + start_ns // 10**9,
        start_time_nsec=start_ns % 10**9,
        end_time_sec=log.job.end_time_sec + end_ns // 10**9,
        end_time_nsec=end_ns % 10**9,
    )
    blobs = dict(log.blobs)
    if "DXT_POSIX" in blobs:
        blobs["DXT_POSIX"] = _dxt_with_rank(blobs["DXT_POSIX"], rank)
    blobs.pop("HEATMAP", None)  # one rank's bins would not add up to the job's
    return dataclasses.replace(log, job=job, records=records, blobs=blobs)


def _dxt_with_rank(blob: bytes, rank: int) -> bytes:
    """A DXT_POSIX region with every record's head naming ``rank``."""
    buf, pos = bytearray(blob), 0
    while pos + _DXT_HEAD.size <= len(buf):
        rid, _, shared, host, n_w, n_r = _DXT_HEAD.unpack_from(buf, pos)
        _DXT_HEAD.pack_into(buf, pos, rid, rank, shared, host, n_w, n_r)
        pos += _DXT_HEAD.size + (n_w + n_r) * np.dtype("<i8").itemsize * 4
    return bytes(buf)
