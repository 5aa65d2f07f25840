"""Darshan's LDMS stream messages, formatted as the runtime formats them, and a SYNTHETIC
stream of them for tests and benchmarks.

The format is ``darshan_ldms_connector_send`` of ``darshan-runtime/lib/darshan-ldms.c``
(darshan-hpc/darshan, as of commit 84ab6b5, 2025): one ``sprintf`` into a 1,024-byte
buffer, published with ``ldmsd_stream_publish(..., LDMSD_STREAM_JSON, buf, strlen(buf) +
1)``. Its quirks, kept here because a reader must take them:

- strings are pasted in unescaped (a path holding ``"`` or ``\\`` is not valid JSON);
- ``"schema"``, ``"exe"`` and ``"file"`` are ``"N/A"`` in ``"type":"MOD"`` messages
  (``read``, ``write``, ``close``); only ``"type":"MET"`` (``open``) carries them;
- the first two separators are ``", "``, the others ``","``;
- ``seg`` always holds one object; its HDF5 fields are -1 outside ``H5D``;
- ``start`` is the operation's start in seconds since the job started (Darshan's wall
  clock), ``dur`` its duration, ``total`` the record's cumulative time counter
  (``F_READ_TIME``, ``F_WRITE_TIME``, ``F_META_TIME``), ``timestamp`` the absolute end of
  the operation (epoch s, ``%lu.%.6lu``: microseconds truncated);
- ``cnt`` is the record's cumulative count of that operation (``POSIX_READS``, ...), ``len``
  the bytes of this operation (-1 for ``open``/``close``), ``off`` its offset;
- ``job_id`` is ``SLURM_JOB_ID``, ``LSB_JOBID``, ``JOB_ID`` or ``LOAD_STEP_ID``, else the
  log's job id; the modules that publish are POSIX, MPIIO, STDIO, H5F and H5D
  (``DARSHAN_LDMS_ENABLE_<MODULE>``); ``ProducerName`` is the host name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

#: the modules that call ``darshan_ldms_connector_send`` (darshan-posix.c, -stdio.c,
#: -mpiio.c, -hdf5.c)
LDMS_MODULES = ("POSIX", "MPIIO", "STDIO", "H5F", "H5D")
_FORMAT = (
    '{{"schema":"{schema}", "uid":{uid}, "exe":"{exe}","job_id":{job_id},"rank":{rank},'
    '"ProducerName":"{host}","file":"{file}","record_id":{record_id},"module":"{module}",'
    '"type":"{type}","max_byte":{max_byte},"switches":{switches},"flushes":{flushes},'
    '"cnt":{cnt},"op":"{op}","seg":[{{"pt_sel":-1,"irreg_hslab":-1,"reg_hslab":-1,'
    '"ndims":-1,"npoints":-1,"off":{off},"len":{len},"start":{start:0.6f},"dur":{dur:0.6f},'
    '"total":{total:0.6f},"timestamp":{sec}.{usec:06d}}}]}}'
)


@dataclass(frozen=True)
class LdmsJob:
    """What the connector knows of a job at start-up (``darshan_ldms_connector_initialize``)."""

    job_id: int  # the scheduler's job id
    uid: int  # the user id running it
    exe: str  # the executable's path
    start: float  # epoch s: Darshan's wall clock 0
    hosts: tuple[str, ...] = ("nid00001",)  # node names; rank r runs on hosts[r % len]


def ldms_message(
    job: LdmsJob,
    *,
    rank: int,
    record_id: int,
    file: str,
    module: str,
    op: str,
    start: float,
    end: float,
    length: int = -1,
    offset: int = -1,
    cnt: int = 1,
    total: float = 0.0,
    max_byte: int = -1,
    switches: int = -1,
    flushes: int = -1,
) -> str:
    """One message as ``darshan_ldms_connector_send`` writes it (no newline); ``start``
    and ``end`` are seconds since the job started, as the runtime passes them.

    ``job``: the job sending it; ``rank``: the MPI rank; ``record_id``: Darshan's hash of
    the file name, ``file`` (sent with ``op="open"`` only); ``module``: Darshan's module
    (``"POSIX"``, ...); ``op``: the operation (``open``, ``read``, ``write``, ``close``,
    ...); ``length`` and ``offset``: the access's bytes and file offset (-1: none);
    ``cnt``: the module's count of this operation so far; ``total``: seconds spent in it so
    far; ``max_byte``, ``switches``, ``flushes``: Darshan's counters of the record (-1:
    not tracked).
    """
    met = op == "open"  # only open is sent as "MET" (meta data) with its paths
    end_abs = job.start + end
    sec = int(np.floor(end_abs))
    usec = min(int((end_abs - sec) * 1e6), 999_999)
    na = "N/A"
    return _FORMAT.format(
        schema="darshan_data" if met else na,
        uid=job.uid,
        exe=job.exe if met else na,
        job_id=job.job_id,
        rank=rank,
        host=job.hosts[rank % len(job.hosts)],
        file=file if met else na,
        record_id=record_id,
        module=module,
        type="MET" if met else "MOD",
        max_byte=max_byte,
        switches=switches,
        flushes=flushes,
        cnt=cnt,
        op=op,
        off=offset,
        len=length,
        start=start,
        dur=end - start,
        total=total,
        sec=sec,
        usec=usec,
    )


def synthetic_ldms_stream(
    job: LdmsJob,
    n: int,
    *,
    ranks: int = 4,
    duration: float = 600.0,
    read_share: float = 0.3,
    size: int = 1 << 20,
    modules: tuple[str, ...] = ("POSIX",),
    seed: int = 0,
) -> Iterator[str]:
    """SYNTHETIC: ``n`` messages of ``job`` as the connector publishes them, in time
    order: ``ranks`` ranks each open one file per Darshan module of ``modules``, then read
    or write ``size`` bytes at a time (a share ``read_share`` of reads) over ``duration``
    seconds, and close it; ``seed`` seeds the random times. The values are invented; the
    format is darshan-ldms.c's."""
    rng = np.random.default_rng(seed)
    ops = max(n - 2 * ranks * len(modules), 0)
    times = np.sort(rng.uniform(1.0, max(duration - 1.0, 1.0), ops))
    owner = rng.integers(0, ranks * len(modules), ops)
    reads = rng.random(ops) < read_share
    files = [
        (r, m, (job.job_id * 7919 + r * 31 + i) % (1 << 63), f"/lus/scratch/out.{r}.{m}")
        for i, m in enumerate(modules)
        for r in range(ranks)
    ]
    counts = np.zeros((len(files), 2), dtype=np.int64)
    made = 0
    for rank, module, rec, path in files:
        if made < n:
            yield ldms_message(job, rank=rank, record_id=rec, file=path, module=module,
                               op="open", start=0.5, end=0.5001)  # fmt: skip
            made += 1
    for t, k, is_read in zip(times, owner, reads, strict=True):
        rank, module, rec, path = files[k]
        d = int(is_read)
        counts[k, d] += 1
        c = int(counts[k, d])
        yield ldms_message(job, rank=rank, record_id=rec, file=path, module=module,
                           op="read" if is_read else "write", start=float(t),
                           end=float(t) + 0.002, length=size, offset=(c - 1) * size, cnt=c,
                           total=0.002 * c, max_byte=c * size - 1)  # fmt: skip
        made += 1
    for rank, module, rec, path in files:
        if made < n:
            yield ldms_message(job, rank=rank, record_id=rec, file=path, module=module,
                               op="close", start=duration - 0.5, end=duration - 0.4999)  # fmt: skip
            made += 1
