"""Darshan logs with known I/O problems, made on demand by iosight's own tracer.

Each workload runs in this process under ``iosight.trace.trace`` with an explicit
``ProcessInfo`` (a multi-rank job is its ranks run one after another; the last one
merges the job log, as ``mpirun -np N iosight trace`` would). Every log is real
Darshan 3.41 output of real I/O; the programs are small so the fixture takes seconds.
"""

from __future__ import annotations

import os

import numpy as np

from iosight.trace import ProcessInfo, trace

KiB, MiB = 1 << 10, 1 << 20


def small_writes(d, rank):  # 2000 writes of 1 KiB
    fd = os.open(d / "small.bin", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    for _ in range(2000):
        os.write(fd, b"x" * KiB)
    os.close(fd)


def reread(d, rank):  # 4 MiB written once, then read twice in 1 MiB reads
    fd = os.open(d / "input.bin", os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    os.write(fd, b"r" * (4 * MiB))
    for _ in range(2):
        for off in range(0, 4 * MiB, MiB):
            os.pread(fd, MiB, off)
    os.close(fd)


def random_offsets() -> np.ndarray:
    """The offsets :func:`random_reads` reads 1 KiB at, in order (seeded: tests recount them)."""
    return np.random.default_rng(0).integers(0, 4 * MiB - KiB, 4000)


def random_reads(d, rank):  # 4000 reads of 1 KiB at random offsets of a 4 MiB file
    path = d / "table.bin"
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    os.write(fd, b"t" * (4 * MiB))
    for off in random_offsets():
        os.pread(fd, KiB, int(off))
    os.close(fd)


SHARED_BLOCKS = (1, 32, 128)  # 64 KiB blocks each rank writes to the shared file


def unequal_ranks(d, rank):
    """3 ranks: a shared file (all ranks) with 1/32/128 blocks, and a file only ranks 0 and 1
    write (so Darshan keeps per-rank records): 4 MiB by rank 0, 64 KiB by rank 1."""
    fd = os.open(d / "shared.bin", os.O_CREAT | os.O_WRONLY, 0o644)
    base = sum(SHARED_BLOCKS[:rank]) * 64 * KiB
    for i in range(SHARED_BLOCKS[rank]):
        os.pwrite(fd, b"s" * (64 * KiB), base + i * 64 * KiB)
    os.close(fd)
    if rank < 2:
        fd = os.open(d / "half.bin", os.O_CREAT | os.O_WRONLY, 0o644)
        os.pwrite(fd, b"h" * (4 * MiB if rank == 0 else 64 * KiB), rank * 4 * MiB)
        os.close(fd)


def stdio_heavy(d, rank):  # 4 MiB of text lines through a Python file object (STDIO)
    with open(d / "table.csv", "w") as f:
        for i in range(4 * MiB // 64):
            f.write(f"{i:063d}\n")


def clean_writer(d, rank):  # 32 MiB in 4 MiB sequential writes
    fd = os.open(d / "checkpoint.bin", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    block = b"c" * (4 * MiB)
    for _ in range(8):
        os.write(fd, block)
    os.close(fd)


WORKLOADS = {
    # name: (function, ranks, job id); small_writes is traced with DXT on
    "small_writes": (small_writes, 1, 1301),
    "reread": (reread, 1, 1302),
    "random_reads": (random_reads, 1, 1303),
    "unequal_ranks": (unequal_ranks, 3, 1304),
    "stdio_heavy": (stdio_heavy, 1, 1305),
    "clean_writer": (clean_writer, 1, 1306),
}


def trace_and_ingest(root):
    """(warehouse, {workload name: job_key}) with every workload traced under ``root``."""
    from iosight.warehouse import Warehouse, find_job, ingest

    logs = root / "logs"
    for name, (fn, nprocs, jobid) in WORKLOADS.items():
        data = root / "data" / name
        data.mkdir(parents=True)
        for rank in range(nprocs):
            proc = ProcessInfo(rank=rank, nprocs=nprocs, jobid=jobid)
            with trace(logs, proc=proc, dxt=name == "small_writes"):
                fn(data, rank)
    wh = Warehouse(root / "wh", create=True)
    report = ingest(sorted(logs.glob("*.darshan")), wh, workers=1)
    assert report.ok, report.errors
    keys = {name: find_job(wh, str(jobid)) for name, (_, _, jobid) in WORKLOADS.items()}
    return wh, keys
