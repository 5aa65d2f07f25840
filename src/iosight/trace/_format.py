"""The Darshan 3.41 log format: record ids, record layouts, writing and reading logs.

A log is an uncompressed header (version string, magic number, compression type,
partial flags, one ``(offset, length)`` map for the name records and one per module,
module versions), then zlib streams, one per region: the job record with the
executable line and mount table, the name records, and each module's records
(Snyder et al., *Modular HPC I/O Characterization with Darshan*, §III-A, Fig. 1).
Layouts follow ``darshan-log-format.h`` and the module headers of Darshan 3.4
(the log version PyDarshan 3.5 reads).
"""

from __future__ import annotations

import getpass
import struct
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iosight._errors import CorruptLogError

LOG_VERSION = b"3.41"
MAGIC_NR = 6567223
MAX_MODS = 64
JOB_RECORD_SIZE = 4096
JOB_METADATA_LEN = 1024
_JOB_STRUCT = struct.Struct("<7q1024s")  # uid, start s/ns, end s/ns, nprocs, jobid, metadata
EXE_MNT_LEN = JOB_RECORD_SIZE - _JOB_STRUCT.size - 1
_HEADER = struct.Struct(f"<8sqB7xQ2Q{2 * MAX_MODS}Q{MAX_MODS}I")
HEADER_SIZE = _HEADER.size  # 1328

# module ids of the Darshan 3.4 X-macro list, with the record versions PyDarshan 3.5 reads
MODULE_IDS = {"POSIX": 1, "H5F": 3, "H5D": 4, "STDIO": 9, "DXT_POSIX": 10, "HEATMAP": 15}
MODULE_VERSIONS = {"POSIX": 4, "H5F": 3, "H5D": 2, "STDIO": 2, "DXT_POSIX": 1, "HEATMAP": 1}

POSIX_COUNTERS = (
    "OPENS FILENOS DUPS READS WRITES SEEKS STATS MMAPS FSYNCS FDSYNCS RENAME_SOURCES "
    "RENAME_TARGETS RENAMED_FROM MODE BYTES_READ BYTES_WRITTEN MAX_BYTE_READ MAX_BYTE_WRITTEN "
    "CONSEC_READS CONSEC_WRITES SEQ_READS SEQ_WRITES RW_SWITCHES MEM_NOT_ALIGNED MEM_ALIGNMENT "
    "FILE_NOT_ALIGNED FILE_ALIGNMENT MAX_READ_TIME_SIZE MAX_WRITE_TIME_SIZE "
    "SIZE_READ_0_100 SIZE_READ_100_1K SIZE_READ_1K_10K SIZE_READ_10K_100K SIZE_READ_100K_1M "
    "SIZE_READ_1M_4M SIZE_READ_4M_10M SIZE_READ_10M_100M SIZE_READ_100M_1G SIZE_READ_1G_PLUS "
    "SIZE_WRITE_0_100 SIZE_WRITE_100_1K SIZE_WRITE_1K_10K SIZE_WRITE_10K_100K "
    "SIZE_WRITE_100K_1M SIZE_WRITE_1M_4M SIZE_WRITE_4M_10M SIZE_WRITE_10M_100M "
    "SIZE_WRITE_100M_1G SIZE_WRITE_1G_PLUS STRIDE1_STRIDE STRIDE2_STRIDE STRIDE3_STRIDE "
    "STRIDE4_STRIDE STRIDE1_COUNT STRIDE2_COUNT STRIDE3_COUNT STRIDE4_COUNT ACCESS1_ACCESS "
    "ACCESS2_ACCESS ACCESS3_ACCESS ACCESS4_ACCESS ACCESS1_COUNT ACCESS2_COUNT ACCESS3_COUNT "
    "ACCESS4_COUNT FASTEST_RANK FASTEST_RANK_BYTES SLOWEST_RANK SLOWEST_RANK_BYTES"
).split()
POSIX_FCOUNTERS = (
    "OPEN_START_TIMESTAMP READ_START_TIMESTAMP WRITE_START_TIMESTAMP CLOSE_START_TIMESTAMP "
    "OPEN_END_TIMESTAMP READ_END_TIMESTAMP WRITE_END_TIMESTAMP CLOSE_END_TIMESTAMP READ_TIME "
    "WRITE_TIME META_TIME MAX_READ_TIME MAX_WRITE_TIME FASTEST_RANK_TIME SLOWEST_RANK_TIME "
    "VARIANCE_RANK_TIME VARIANCE_RANK_BYTES"
).split()
STDIO_COUNTERS = (
    "OPENS FDOPENS READS WRITES SEEKS FLUSHES BYTES_WRITTEN BYTES_READ MAX_BYTE_READ "
    "MAX_BYTE_WRITTEN FASTEST_RANK FASTEST_RANK_BYTES SLOWEST_RANK SLOWEST_RANK_BYTES"
).split()
STDIO_FCOUNTERS = (
    "META_TIME WRITE_TIME READ_TIME OPEN_START_TIMESTAMP CLOSE_START_TIMESTAMP "
    "WRITE_START_TIMESTAMP READ_START_TIMESTAMP OPEN_END_TIMESTAMP CLOSE_END_TIMESTAMP "
    "WRITE_END_TIMESTAMP READ_END_TIMESTAMP FASTEST_RANK_TIME SLOWEST_RANK_TIME "
    "VARIANCE_RANK_TIME VARIANCE_RANK_BYTES"
).split()

# darshan-hdf5-log-format.h (H5F version 3, H5D version 2: with file_rec_id); 5 dims kept
H5F_COUNTERS = "OPENS FLUSHES USE_MPIIO".split()
H5F_FCOUNTERS = (
    "OPEN_START_TIMESTAMP CLOSE_START_TIMESTAMP OPEN_END_TIMESTAMP CLOSE_END_TIMESTAMP META_TIME"
).split()
H5D_MAX_NDIMS = 5
_SIZES = "0_100 100_1K 1K_10K 10K_100K 100K_1M 1M_4M 4M_10M 10M_100M 100M_1G 1G_PLUS".split()
H5D_COUNTERS = (
    "OPENS READS WRITES FLUSHES BYTES_READ BYTES_WRITTEN RW_SWITCHES REGULAR_HYPERSLAB_SELECTS "
    "IRREGULAR_HYPERSLAB_SELECTS POINT_SELECTS MAX_READ_TIME_SIZE MAX_WRITE_TIME_SIZE"
).split()
H5D_COUNTERS += [f"SIZE_{d}_AGG_{s}" for d in ("READ", "WRITE") for s in _SIZES]
H5D_COUNTERS += [
    f"ACCESS{k}_{part}"
    for k in range(1, 5)
    for part in (
        "ACCESS",
        *(f"LENGTH_D{i}" for i in range(1, H5D_MAX_NDIMS + 1)),
        *(f"STRIDE_D{i}" for i in range(1, H5D_MAX_NDIMS + 1)),
    )
]
H5D_COUNTERS += [f"ACCESS{k}_COUNT" for k in range(1, 5)]
H5D_COUNTERS += "DATASPACE_NDIMS DATASPACE_NPOINTS DATATYPE_SIZE".split()
H5D_COUNTERS += [f"CHUNK_SIZE_D{i}" for i in range(1, H5D_MAX_NDIMS + 1)]
H5D_COUNTERS += (
    "USE_MPIIO_COLLECTIVE USE_DEPRECATED FASTEST_RANK FASTEST_RANK_BYTES SLOWEST_RANK "
    "SLOWEST_RANK_BYTES"
).split()
H5D_FCOUNTERS = (
    "OPEN_START_TIMESTAMP READ_START_TIMESTAMP WRITE_START_TIMESTAMP CLOSE_START_TIMESTAMP "
    "OPEN_END_TIMESTAMP READ_END_TIMESTAMP WRITE_END_TIMESTAMP CLOSE_END_TIMESTAMP READ_TIME "
    "WRITE_TIME META_TIME MAX_READ_TIME MAX_WRITE_TIME FASTEST_RANK_TIME SLOWEST_RANK_TIME "
    "VARIANCE_RANK_TIME VARIANCE_RANK_BYTES"
).split()

COUNTER_NAMES = {
    "POSIX": (
        [f"POSIX_{n}" for n in POSIX_COUNTERS],
        [f"POSIX_F_{n}" for n in POSIX_FCOUNTERS],
    ),
    "STDIO": (
        [f"STDIO_{n}" for n in STDIO_COUNTERS],
        [f"STDIO_F_{n}" for n in STDIO_FCOUNTERS],
    ),
    "H5F": ([f"H5F_{n}" for n in H5F_COUNTERS], [f"H5F_F_{n}" for n in H5F_FCOUNTERS]),
    "H5D": ([f"H5D_{n}" for n in H5D_COUNTERS], [f"H5D_F_{n}" for n in H5D_FCOUNTERS]),
}


def record_dtype(module: str) -> np.dtype:
    """The packed C layout of one ``darshan_<module>_file`` record (base record first;
    ``darshan_hdf5_dataset`` has its file's record id after it)."""
    n_c, n_f = (len(x) for x in COUNTER_NAMES[module])
    head = [("id", "<u8"), ("rank", "<i8")]
    if module == "H5D":
        head.append(("file_rec_id", "<u8"))
    return np.dtype([*head, ("counters", "<i8", (n_c,)), ("fcounters", "<f8", (n_f,))])


_M = 0xFFFFFFFFFFFFFFFF


def _mix64(a: int, b: int, c: int) -> tuple[int, int, int]:
    for sa, sb, sc in ((43, 9, 8), (38, 23, 5), (35, 49, 11), (12, 18, 22)):
        a = ((a - b - c) & _M) ^ (c >> sa)
        b = ((b - c - a) & _M) ^ ((a << sb) & _M)
        c = ((c - a - b) & _M) ^ (b >> sc)
    return a, b, c


def darshan_hash(name: str | bytes, level: int = 0) -> int:
    """Bob Jenkins' 64-bit ``lookup8`` hash, as ``darshan_core_gen_record_id`` applies it.

    Darshan names a record by ``darshan_hash(path, strlen(path), 0)``; the same path thus
    gets the same id in every process and every log, which is what lets shared records
    be found and reduced (§III-A).

    ``name``: the path hashed; ``level``: the hash's seed.
    """
    k = name.encode() if isinstance(name, str) else name
    length = len(k)
    a = b = level & _M
    c = 0x9E3779B97F4A7C13
    pos = 0
    while length - pos >= 24:
        a = (a + int.from_bytes(k[pos : pos + 8], "little")) & _M
        b = (b + int.from_bytes(k[pos + 8 : pos + 16], "little")) & _M
        c = (c + int.from_bytes(k[pos + 16 : pos + 24], "little")) & _M
        a, b, c = _mix64(a, b, c)
        pos += 24
    tail = k[pos:]
    c = (c + length) & _M
    # the first byte of c is reserved for the length: bytes 16..22 go in shifted by one
    a = (a + int.from_bytes(tail[:8], "little")) & _M
    b = (b + int.from_bytes(tail[8:16], "little")) & _M
    c = (c + (int.from_bytes(tail[16:23], "little") << 8)) & _M
    return _mix64(a, b, c)[2]


@dataclass
class Job:
    """The job record: who ran, when, how many processes, under which batch job."""

    uid: int = 0
    start_time_sec: int = 0
    start_time_nsec: int = 0
    end_time_sec: int = 0
    end_time_nsec: int = 0
    nprocs: int = 1
    jobid: int = 0
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class LogContent:
    """Everything one Darshan log holds, as iosight writes and merges it.

    ``records`` maps a module name (``"POSIX"``, ``"STDIO"``) to a structured array of
    :func:`record_dtype` rows; ``partial`` names modules that dropped records for lack
    of room (the header's partial flags); ``blobs`` holds the serialized records of
    variable-length modules (``"DXT_POSIX"``, ``"HEATMAP"``).

    ``job``: the job record (ids, times, process count); ``exe``: the command line; ``names``:
    record id to path.
    """

    job: Job
    exe: str
    mounts: list[tuple[str, str]] = field(default_factory=list)  # (mount point, fs type)
    names: dict[int, str] = field(default_factory=dict)
    records: dict[str, np.ndarray] = field(default_factory=dict)
    partial: set[str] = field(default_factory=set)
    blobs: dict[str, bytes] = field(default_factory=dict)  # DXT_POSIX / HEATMAP regions


def _job_bytes(log: LogContent) -> bytes:
    j = log.job
    meta = "".join(f"{k}={v}\n" for k, v in j.metadata.items()).encode()[: JOB_METADATA_LEN - 1]
    head = _JOB_STRUCT.pack(
        j.uid,
        j.start_time_sec,
        j.start_time_nsec,
        j.end_time_sec,
        j.end_time_nsec,
        j.nprocs,
        j.jobid,
        meta,
    )
    exe = log.exe.replace("\n", " ").encode()[:EXE_MNT_LEN]
    mnt = b""
    # Darshan writes the mount table in reverse order, each entry as "\n<type>\t<path>"
    for point, fstype in reversed(log.mounts):
        entry = f"\n{fstype}\t{point}".encode()
        if len(exe) + len(mnt) + len(entry) > EXE_MNT_LEN or " " in point + fstype:
            continue
        mnt += entry
    return head + exe + mnt + b"\0"


def write_log(path: str | Path, log: LogContent) -> Path:
    """Write ``log`` as a zlib-compressed Darshan 3.41 log that PyDarshan reads.

    Records are written sorted by rank, then id, as ``darshan_record_sort`` leaves them.

    ``path``: the file written.
    """
    path = Path(path)
    regions: list[tuple[int, bytes]] = [(-2, _job_bytes(log))]
    names = b"".join(
        struct.pack("<Q", rid) + name.encode(errors="surrogateescape") + b"\0"
        for rid, name in sorted(log.names.items())
    )
    if names:
        regions.append((-1, names))
    data = {m: b"" for m in MODULE_IDS}
    for mod, recs in log.records.items():
        if len(recs):
            order = np.lexsort((recs["id"], -recs["rank"]))
            data[mod] = np.ascontiguousarray(recs[order]).tobytes()
    data.update({m: b for m, b in log.blobs.items() if b})
    regions += sorted((MODULE_IDS[m], b) for m, b in data.items() if b)
    name_map = (0, 0)
    mod_map = [0] * (2 * MAX_MODS)
    mod_ver = [0] * MAX_MODS
    body = bytearray()
    for rid, data in regions:
        comp = zlib.compress(data, 6)
        off = HEADER_SIZE + len(body)
        body += comp
        if rid == -1:
            name_map = (off, len(comp))
        elif rid >= 0:
            mod_map[2 * rid : 2 * rid + 2] = [off, len(comp)]
    for rid, _ in regions:
        for mod, mid in MODULE_IDS.items():
            if mid == rid:
                mod_ver[mid] = MODULE_VERSIONS[mod]
    partial = sum(1 << MODULE_IDS[m] for m in log.partial)
    header = _HEADER.pack(LOG_VERSION, MAGIC_NR, 0, partial, *name_map, *mod_map, *mod_ver)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(header + bytes(body))
    tmp.replace(path)
    return path


def read_log(path: str | Path) -> LogContent:
    """Read a zlib Darshan 3.41 log with POSIX/STDIO records (the logs iosight writes).

    Used by ``merge``; other modules' regions are skipped. Raises
    :class:`~iosight._errors.CorruptLogError` for anything else.

    ``path``: the log.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise CorruptLogError(f"cannot read log {path}: {err.strerror}") from None
    if len(raw) < HEADER_SIZE:
        raise CorruptLogError(f"{path} is too short to be a Darshan log")
    fields = _HEADER.unpack_from(raw)
    version, magic, comp, partial = fields[:4]
    if magic != MAGIC_NR or version.rstrip(b"\0") != LOG_VERSION or comp != 0:
        raise CorruptLogError(f"{path} is not a zlib Darshan {LOG_VERSION.decode()} log")
    name_off, name_len = fields[4:6]
    mod_map = fields[6 : 6 + 2 * MAX_MODS]
    offsets = [o for o in (name_off, *mod_map[0::2]) if o] + [len(raw)]

    def region(off: int, length: int) -> bytes:
        try:
            return zlib.decompress(raw[off : off + length])
        except zlib.error as err:
            raise CorruptLogError(f"{path}: damaged compressed region: {err}") from None

    job_raw = region(HEADER_SIZE, min(offsets) - HEADER_SIZE)
    vals = _JOB_STRUCT.unpack_from(job_raw)
    meta = vals[7].split(b"\0", 1)[0].decode(errors="replace")
    job = Job(*vals[:7], metadata=dict(x.split("=", 1) for x in meta.splitlines() if "=" in x))
    lines = job_raw[_JOB_STRUCT.size :].split(b"\0", 1)[0].decode(errors="replace").split("\n")
    mounts = [tuple(reversed(x.split("\t", 1))) for x in lines[1:] if "\t" in x][::-1]
    names: dict[int, str] = {}
    if name_len:
        buf = region(name_off, name_len)
        pos = 0
        while pos + 8 < len(buf):
            end = buf.index(b"\0", pos + 8)
            names[struct.unpack_from("<Q", buf, pos)[0]] = buf[pos + 8 : end].decode(
                errors="surrogateescape"
            )
            pos = end + 1
    records, blobs = {}, {}
    for mod, mid in MODULE_IDS.items():
        off, length = mod_map[2 * mid], mod_map[2 * mid + 1]
        if length and mod in COUNTER_NAMES:
            records[mod] = np.frombuffer(region(off, length), dtype=record_dtype(mod)).copy()
        elif length:
            blobs[mod] = region(off, length)
    flagged = {m for m, mid in MODULE_IDS.items() if partial >> mid & 1}
    return LogContent(job, lines[0], list(mounts), names, records, flagged, blobs)


def log_name(log: LogContent) -> str:
    """Darshan's log file name: ``<user>_<exe>_id<jobid>_<m>-<d>-<sec of day>-<hash>_1.darshan``."""
    t = time.localtime(log.job.start_time_sec)
    words = [Path(w).name for w in log.exe.split()] or ["python"]
    exe = words[1] if words[0].startswith("python") and len(words) > 1 else words[0]
    exe = "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in exe)[:40]
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(log.job.uid)
    secs = t.tm_hour * 3600 + t.tm_min * 60 + t.tm_sec
    h = darshan_hash(f"{log.exe}{log.job.start_time_sec}{log.job.start_time_nsec}") % 10**19
    return f"{user}_{exe}_id{log.job.jobid}_{t.tm_mon}-{t.tm_mday}-{secs}-{h}_1.darshan"
