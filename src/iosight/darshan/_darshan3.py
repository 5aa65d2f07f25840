"""Read a Darshan 3.x log natively: the file format itself, no libdarshan-util.

A 3.x log is an uncompressed header (version string, magic number, compression
type, partial-module flags, the region map and per-module format versions) and
compressed regions: the job record (``struct darshan_job`` plus the exe and
mount table), the name records (``id, NUL-terminated name``) and one region per
module holding that module's records back to back (``darshan-logutils.c``,
``include/darshan-log-format.h``). Each region is inflated whole (zlib, bzip2
or stored) into one buffer and its records are viewed in place as 8-byte words
(variable-size ones, DXT, HEATMAP and LUSTRE, by :mod:`._darshan3_records`), so a log
becomes columns with one copy and no Python per counter.

Old module versions are up-converted to the current counter set exactly as
libdarshan-util 3.5 does (``darshan-<module>-logutils.c``): a record is a row of
8-byte words and each step inserts the counters a later version added, with the
same fill values (-1, or 0 for ids). A module of a version newer than this reader
knows is skipped with a warning (``jobs.metadata`` gains a line), never the job.

Hostile input is a :class:`CorruptLogError` with a one-line reason, never another
exception: regions outside the file or overlapping, bad compressed streams, unknown
versions or compression, negative record counts, ranks outside the job. A job record
whose fields are garbage costs the job fields, not the records: nprocs outside 1..10^8
is -1 and a time outside 1990-2100 null, each with a warning line; a record not in its
version's layout at all (the pre-release 3.4 development logs, which libdarshan-util
reads as nprocs 4.4e18 and a negative run time) leaves uid, jobid, nprocs, times and
exe unknown, and only its module regions that are whole records of their version are
read (analyses that need the job fields skip such jobs).

Allocation is bounded by what the file holds, never by a count it claims: a region
inflates to at most :data:`MAX_REGION_BYTES` (1 GiB) and all regions of a log to
:data:`MAX_LOG_BYTES` (2 GiB); a record whose count (segments, bins, components,
stripes) needs more bytes than the region holds ends the region, as libdarshan-util's
short read does.

Memory and work follow what a region holds, not what it inflates to (1 GiB of zeros is
1 MB of zlib): records that give no row (zero segments, bins or components, ids without
a name record) build nothing, and a run of equal records is checked as one array. The
peak while reading a region is at most 1.5x its inflated size when its records give no
row (2.5x for an old module version, up-converted into a copy), 3.5x when they do, and
7x for DXT segments and HEATMAP bins (a ~70-byte row, plus the host name, per 32-byte
segment or 16-byte bin); tests/darshan/test_darshan3_bombs.py measures every module.
DXT segments are built in pieces of at most ``CHUNK_SEGMENTS`` rows; with ``chunked=True``
(ingest) the pieces come one at a time, so the peak is the region and one piece: a log of
10 million segments goes into a warehouse in about 0.5 GB above the interpreter, not 1.4
GB (tests/darshan/test_darshan3_big_dxt.py, ``benchmarks/big_dxt.py``).
"""

from __future__ import annotations

import bz2
import struct
import zlib
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from iosight._errors import CorruptLogError
from iosight.darshan._accumulate import ACCUMULATED, accumulate
from iosight.darshan._darshan3_counters import COUNTERS
from iosight.darshan._darshan3_records import holds_whole_records, name_records, row_table
from iosight.darshan._record_tables import (
    known_ids,
    named_ids,
    named_tables,
    names_table,
)
from iosight.darshan._tables import (
    LogTables,
    RowBlock,
    TableChunks,
    jobs_table,
    path_text,
    table_for_module,
    with_warning,
)

MAGIC = 6567223
MAX_REGION_BYTES = 1 << 30  # one inflated region (1 GiB)
MAX_LOG_BYTES = 2 << 30  # all inflated regions of one log (2 GiB)
_MAX_NPROCS = 10**8
_TIME_RANGE = (631152000, 4102444800)  # 1990-01-01 .. 2100-01-01 (UTC)
_JOB_RECORD_SIZE = 4096

# module names by id in the 3.41 id space (darshan-log-format.h, DARSHAN_MODULE_IDS)
MODULE_IDS = (
    "NULL",
    "POSIX",
    "MPI-IO",
    "H5F",
    "H5D",
    "PNETCDF_FILE",
    "PNETCDF_VAR",
    "BG/Q",
    "LUSTRE",
    "STDIO",
    "DXT_POSIX",
    "DXT_MPIIO",
    "MDHIM",
    "APXC",
    "APMPI",
    "HEATMAP",
    "DFS",
    "DAOS",
)
# module versions libdarshan-util 3.5 reads (newer: skipped with a warning) ...
KNOWN_VERSIONS = {
    "POSIX": 4,
    "MPI-IO": 3,
    "H5F": 3,
    "H5D": 2,
    "PNETCDF_FILE": 2,
    "PNETCDF_VAR": 1,
    "BG/Q": 2,
    "LUSTRE": 2,
    "STDIO": 2,
    "DXT_POSIX": 2,  # 2: development branch, 8-byte pthread_id per segment
    "DXT_MPIIO": 3,  # 3: likewise
    "HEATMAP": 1,
    "DFS": 1,
    "DAOS": 1,
}
_LOG_VERSIONS = ("3.00", "3.10", "3.20", "3.21", "3.41")
_BASE = 2  # words of struct darshan_base_record (id, rank)
_WORD = 8


def _f(x: float) -> int:
    """The 8-byte pattern of a double, as an unsigned word."""
    return struct.unpack("<Q", struct.pack("<d", x))[0]


_I_NEG1 = (1 << 64) - 1  # int64 -1
_F_NEG1 = _f(-1.0)

# up-conversion of old module versions, replayed as libdarshan-util does it in a
# zeroed scratch record (128 words there; here one current record: no step touches a
# word past it): {module: {version: (words read, steps)}}; a step is
# ("move", dest, src, n) (memmove of n words), ("set", at, words) or
# ("drop_if_positive", word) (POSIX v1 records with stdio counters are omitted).
# The moves are kept literal: where libdarshan's move is short, the words it leaves
# behind are what it returns (POSIX v<=3 variance counters), and so do we.
_F2 = [_F_NEG1, _F_NEG1]
_POSIX_3_TO_4 = [("set", 3, [_I_NEG1, _I_NEG1]), ("set", 12, [_I_NEG1, _I_NEG1, 0])]
_UPCONVERT: dict[str, dict[int, tuple[int, list]]] = {
    "POSIX": {
        1: (
            85,
            [
                ("drop_if_positive", 8),
                ("move", 8, 12, 73),
                ("move", 71, 69, 12),
                ("set", 69, _F2),
                ("move", 5, 3, 82),
                ("set", 3, [_I_NEG1, _I_NEG1]),
                ("move", 15, 12, 73),
                ("set", 12, [_I_NEG1, _I_NEG1, 0]),
            ],
        ),
        2: (
            81,
            [
                ("move", 71, 69, 12),
                ("set", 69, _F2),
                ("move", 5, 3, 78),
                ("set", 3, [_I_NEG1, _I_NEG1]),
                ("move", 15, 12, 69),
                ("set", 12, [_I_NEG1, _I_NEG1, 0]),
            ],
        ),
        3: (
            83,
            [
                ("move", 5, 3, 80),
                ("set", 3, [_I_NEG1, _I_NEG1]),
                ("move", 15, 12, 71),
                ("set", 12, [_I_NEG1, _I_NEG1, 0]),
            ],
        ),
    },
    "MPI-IO": {v: (68, [("move", 58, 56, 12), ("set", 56, _F2)]) for v in (1, 2)},
    "STDIO": {1: (30, [("move", 4, 3, 27), ("set", 3, [_I_NEG1])])},  # FDOPENS
    "H5F": {
        1: (
            5,
            [
                ("move", 6, 4, 1),
                ("set", 4, _F2),
                ("move", 5, 3, 4),
                ("set", 3, [_I_NEG1, _I_NEG1]),
                ("set", 9, [_F_NEG1]),
            ],
        ),
        2: (7, [("move", 5, 3, 4), ("set", 3, [_I_NEG1, _I_NEG1]), ("set", 9, [_F_NEG1])]),
    },
    "H5D": {1: (113, [("move", 3, 2, 111), ("set", 2, [0])])},  # FILE_REC_ID
}
_GENERIC = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q")
_GENERIC += ("DFS", "DAOS")
_EXTRA_WORDS = {"DFS": 4, "DAOS": 6}  # pool/cont uuids (+ oid_hi, oid_lo) after fcounters
_WITH_FILE_REC = ("H5D", "PNETCDF_VAR")
_LEGACY_PNETCDF_WORDS = {1: 7, 2: 8}  # words of a pre-3.41 PNETCDF record (v1: 2 fewer times)


@dataclass
class _Header:
    version: str
    order: str  # "<" or ">"
    comp: int
    partial: int
    name_map: tuple[int, int]
    regions: dict[str, tuple[int, int, int]]  # module -> (offset, length, version)
    header_size: int
    path: Path
    partial_modules: list[str] = field(default_factory=list)


def _map_ids(version: str, n: int) -> list[str]:
    """Module name of each id of this log version (ids moved when modules were added)."""
    if version >= "3.41":
        names = list(MODULE_IDS)
    elif version >= "3.20":  # no PNETCDF_VAR/DFS/DAOS yet; PNETCDF is today's PNETCDF_FILE
        names = [m for m in MODULE_IDS if m not in ("PNETCDF_VAR", "DFS", "DAOS")]
    else:  # 3.00/3.10: no H5D either (libdarshan shifts the map at H5D)
        names = [m for m in MODULE_IDS if m not in ("H5D", "PNETCDF_VAR", "DFS", "DAOS")]
    return (names + [f"MOD{i}" for i in range(len(names), n)])[:n]


def _header(data: bytes, path: Path) -> _Header:
    version = data[:8].split(b"\0", 1)[0].decode("ascii", "replace")
    if version not in _LOG_VERSIONS:
        raise CorruptLogError(f"{path}: unsupported Darshan log version {version!r}")
    order = "<"
    if len(data) >= 16 and struct.unpack("<q", data[8:16])[0] != MAGIC:
        if struct.unpack(">q", data[8:16])[0] != MAGIC:
            raise CorruptLogError(f"{path}: bad magic number (not a Darshan 3.x log)")
        order = ">"
    if version >= "3.41":  # 64 modules, 64-bit partial flags
        n, partial_fmt, map_at = 64, "Q", 32
    else:
        n, partial_fmt, map_at = 16, "I", 24
    size = map_at + 16 + 16 * n + 4 * n
    if len(data) < size:
        raise CorruptLogError(f"{path}: truncated header ({len(data)} of {size} bytes)")
    comp = data[16]
    (partial,) = struct.unpack_from(order + partial_fmt, data, 24 if n == 64 else 20)
    name_map = struct.unpack_from(order + "QQ", data, map_at)
    maps = struct.unpack_from(order + f"{2 * n}Q", data, map_at + 16)
    vers = struct.unpack_from(order + f"{n}I", data, map_at + 16 + 16 * n)
    names = _map_ids(version, n)
    regions = {}
    partial_modules = []
    for i, name in enumerate(names):
        off, length = maps[2 * i], maps[2 * i + 1]
        if length and name != "NULL":
            regions[name] = (off, length, vers[i])
        if partial >> i & 1 and name != "NULL":
            partial_modules.append(name)
    return _Header(version, order, comp, partial, name_map, regions, size, path, partial_modules)


def _inflate(raw: bytes, comp: int, what: str, budget: list[int]) -> bytes | bytearray:
    """One region's bytes, decompressed; at most MAX_REGION_BYTES and the log's budget."""
    cap = min(MAX_REGION_BYTES, budget[0])
    try:
        if comp == 0:
            data = _inflate_zlib(raw, cap, what)
        elif comp == 1:
            d = bz2.BZ2Decompressor()
            data = d.decompress(raw, cap + 1)
            if len(data) > cap or (not d.eof and not d.needs_input):
                raise CorruptLogError(f"{what} inflates past {cap} bytes")
        elif comp == 2:
            data = raw
        else:
            raise CorruptLogError(f"unknown compression type {comp}")
    except (zlib.error, OSError, EOFError, ValueError) as err:
        raise CorruptLogError(f"{what}: bad compressed stream ({err})") from None
    budget[0] -= len(data)
    return data


_FEED = 16 << 10  # compressed bytes handed to zlib per call


def _inflate_zlib(raw: bytes, cap: int, what: str) -> bytearray:
    """Inflate a region of back-to-back zlib streams (one per rank's share, so thousands
    in a large job's region), at most ``cap`` bytes, into one growing buffer (pieces
    joined at the end would hold the region twice). The input goes in ``_FEED``-byte
    pieces: at each stream's end zlib copies the rest of its input to ``unused_data``,
    which for the whole region would cost quadratic time; the streams that follow in a
    piece are inflated from that copy (most regions are one piece of many small
    streams). A truncated last stream keeps what inflated, as libdarshan does."""
    out, view = bytearray(), memoryview(raw)
    d = zlib.decompressobj()
    for pos in range(0, len(raw), _FEED):
        piece = view[pos : pos + _FEED]
        while piece:
            out += d.decompress(piece, cap + 1 - len(out))
            if len(out) > cap or d.unconsumed_tail:
                raise CorruptLogError(f"{what} inflates past {cap} bytes")
            if not d.eof:
                break
            piece = d.unused_data
            d = zlib.decompressobj()
    return out


def read_darshan3(path: str | Path, *, chunked: bool = False) -> LogTables:
    """Read one Darshan 3.x log (format 3.00-3.41) into warehouse tables.

    ``job_totals`` is held as its row (:attr:`LogTables.totals_row`), a table when asked.
    ``chunked``: give the DXT tables as :class:`~iosight.darshan.TableChunks`, built as
    they are iterated, for a caller that writes each piece away (ingest: a log of
    millions of segments then costs its region and one piece, not all its rows).
    With it, a module of fixed-size records comes as its records
    (:class:`~iosight.darshan.RowBlock`), so ingest builds one table of a batch's logs.

    ``path``: the log.

    Raises
    ------
    CorruptLogError
        When the header, region map or a region's contents are not a valid log.
    """
    path = Path(path)
    try:
        blob = path.read_bytes()
    except OSError as err:
        raise CorruptLogError(f"{path}: cannot open ({err.strerror})") from None
    return read_darshan3_bytes(blob, path, chunked=chunked)


def read_darshan3_bytes(
    blob: bytes, path: str | Path = "<bytes>", *, chunked: bool = False
) -> LogTables:
    """:func:`read_darshan3` of a log already in memory (``path`` names it in errors).

    ``blob``: the log's bytes; ``chunked``: as :func:`read_darshan3`.
    """
    path = Path(path)
    if not blob:
        raise CorruptLogError(f"{path}: empty file")
    try:
        return _read(blob, path, chunked)
    except CorruptLogError as err:
        if str(err).startswith(f"{path}: "):
            raise
        raise CorruptLogError(f"{path}: {err}") from None
    except (ValueError, IndexError, struct.error, OverflowError, MemoryError) as err:
        raise CorruptLogError(f"{path}: malformed log ({type(err).__name__}: {err})") from None


def _region(blob: bytes, hdr: _Header, what: str, off: int, length: int, budget) -> bytes:
    if off < hdr.header_size:
        raise CorruptLogError(f"corrupt region map: {what} region at {off} is inside the header")
    if off + length > len(blob):
        raise CorruptLogError(
            f"truncated or corrupt: {what} region [{off}, +{length}) ends past the end "
            f"of the file ({len(blob)} bytes)"
        )
    return _inflate(blob[off : off + length], hdr.comp, what, budget)


def _read(blob: bytes, path: Path, chunked: bool) -> LogTables:
    hdr = _header(blob, path)
    budget = [MAX_LOG_BYTES]
    _check_overlaps(hdr)
    job_end = hdr.name_map[0] or min((r[0] for r in hdr.regions.values()), default=len(blob))
    job_raw = _region(
        blob, hdr, "job", hdr.header_size, job_end - hdr.header_size, [_JOB_RECORD_SIZE * 4]
    )
    record = _job(job_raw[:_JOB_RECORD_SIZE], hdr)
    job, warnings = record.row, record.warnings
    names = _names(blob, hdr, budget)
    named = named_ids(names)
    tables: dict[str, pa.Table | TableChunks | RowBlock] = {}
    raw_records: dict[str, np.ndarray] = {}
    for mod, (off, length, ver) in hdr.regions.items():
        known = KNOWN_VERSIONS.get(mod)
        if known is None:
            continue  # APXC, APMPI, MDHIM, ...: not in the warehouse contract
        if ver == 0 or ver > known:
            warnings.append(f"module {mod} version {ver} is newer than this reader; skipped")
            continue
        # the region is held by the call reading it only (not past it, nor once its
        # records are up-converted into a copy)
        span = (blob, hdr, mod, off, length, budget)
        if not record.layout_known and not _holds_whole_records(span, ver):
            warnings.append(
                f"module {mod} region is not whole records of version {ver} (in a log of an "
                "unknown layout); skipped"
            )
            continue
        if mod in _GENERIC:
            recs = _module_records(_region(*span), mod, ver, hdr)
            if len(recs):
                raw_records[mod] = recs  # totals count unnamed records too, as libdarshan's
                named_recs = _named_rows(recs, named)
                tables[table_for_module(mod)] = (
                    RowBlock(mod, named_recs, partial(_generic_table, mod))
                    if chunked
                    else _generic_table(mod, named_recs)
                )
        else:
            data = _region(*span)
            table = row_table(data, mod, ver, hdr.order, names, named, chunked=chunked)
            tables[table_for_module(mod)] = table
    tables = named_tables(tables, names)
    present = [m for m in hdr.regions]
    for w in warnings:
        job["metadata"] = with_warning(job["metadata"], w)
    job.update(
        modules=",".join(present),
        partial_modules=",".join(hdr.partial_modules),
        partial=bool(hdr.partial_modules),
    )
    tables["jobs"] = _jobs(job, chunked)
    tables["mounts"] = pa.table(
        {
            "mount_point": pa.array([m[0] for m in record.mounts], pa.string()),
            "fs_type": pa.array([m[1] for m in record.mounts], pa.string()),
        }
    )
    tables["names"] = names_table(names, record.mounts)
    _check_ranks(raw_records, job["nprocs"] if job["nprocs"] > 0 else _MAX_NPROCS)
    return LogTables(tables, totals_row=_job_totals(raw_records) or None)


def _jobs(job: dict, chunked: bool) -> pa.Table | RowBlock:
    """The ``jobs`` table of the log's row, or (``chunked``) its row for ingest to build
    one table of a batch's (:class:`~iosight.darshan.RowBlock`)."""
    if not chunked:
        return jobs_table([job])
    return RowBlock("jobs", [job], jobs_table)


def _names(blob: bytes, hdr: _Header, budget: list[int]) -> dict[int, str]:
    """The name records, id -> name (the region is not held past reading them)."""
    if not hdr.name_map[1]:
        return {}
    v300 = hdr.version == "3.00"  # id, uint32 length, name (later: NUL-terminated names)
    return name_records(_region(blob, hdr, "name", *hdr.name_map, budget), hdr.order, v300)


def _holds_whole_records(span: tuple, ver: int) -> bool:
    """Whether a module's region is whole records of its version and nothing more: in a
    log whose job record is not in its version's layout (a development log), only such
    regions are trusted. The region is inflated on a copy of the log's budget (it is
    read again after)."""
    blob, hdr, mod, off, length, budget = span
    data = _region(blob, hdr, mod, off, length, list(budget))
    if _legacy_pnetcdf(mod, hdr):
        return len(data) % (_LEGACY_PNETCDF_WORDS[ver] * _WORD) == 0
    if mod in _GENERIC:
        return len(data) % (_version_words(mod, ver) * _WORD) == 0
    return holds_whole_records(data, mod, ver, hdr.order)


def _version_words(mod: str, ver: int) -> int:
    """Words of one record of a fixed-size module's version ``ver``."""
    steps = _UPCONVERT.get(mod, {})
    return steps[ver][0] if ver in steps else _current_words(mod)


def _legacy_pnetcdf(mod: str, hdr: _Header) -> bool:
    """Before 3.41, the PNETCDF module was another record (:func:`_legacy_pnetcdf_records`)."""
    return mod == "PNETCDF_FILE" and hdr.version < "3.41"


def _module_records(data: bytes | bytearray, mod: str, ver: int, hdr: _Header) -> np.ndarray:
    """The records of a module of fixed-size records (:data:`_GENERIC`), up-converted to
    its current version."""
    if _legacy_pnetcdf(mod, hdr):
        return _legacy_pnetcdf_records(data, ver, hdr.order)
    return _generic_records(data, mod, ver, hdr.order)


def _check_overlaps(hdr: _Header) -> None:
    spans = sorted(
        [(o, o + n, m) for m, (o, n, _) in hdr.regions.items()]
        + ([(hdr.name_map[0], sum(hdr.name_map), "name")] if hdr.name_map[1] else [])
    )
    for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < end:
            raise CorruptLogError(f"regions {a} and {b} overlap")


class _JobRecord(NamedTuple):
    """The job record: its row of ``jobs``, the mount table, a warning per garbage field,
    and whether its fixed fields are in the layout of the log's version at all."""

    row: dict
    mounts: list[tuple[str, str]]
    warnings: list[str]
    layout_known: bool


def _job(data: bytes, hdr: _Header) -> _JobRecord:
    o = hdr.order
    if hdr.version >= "3.41":
        fmt, size = o + "7q", 56
    else:
        fmt, size = o + "5q", 40
    if len(data) < size + 1024:
        raise CorruptLogError(f"job record truncated ({len(data)} bytes)")
    fields, warnings = _job_fields(struct.unpack_from(fmt, data, 0), hdr.version)
    meta = data[size : size + 1024].split(b"\0", 1)[0].decode("utf-8", "replace")
    kv = dict(line.split("=", 1) for line in meta.splitlines() if "=" in line)
    tail = data[size + 1024 :].split(b"\0", 1)[0]
    exe, newline, mnt = tail.partition(b"\n")
    if not newline:  # libdarshan takes the exe only up to a line break
        exe = b""
    mounts = []
    for line in mnt.split(b"\n") if mnt else []:
        parts = line.split()
        if len(parts) < 2:
            raise CorruptLogError("poorly formatted mount table")
        mounts.append((parts[1].decode("utf-8", "replace"), parts[0].decode("utf-8", "replace")))
    mounts.sort(key=lambda m: -len(m[0]))
    job = {
        "source_path": path_text(hdr.path),
        "source_format": "darshan3",
        "log_version": hdr.version,
        "lib_version": kv.get("lib_ver", ""),
        "exe": exe.decode("utf-8", "replace"),
        **fields,
        "synthetic": False,
        "metadata": meta.strip(),
    }
    return _JobRecord(job, mounts, warnings, fields is not _UNKNOWN_JOB)


# the job fields of a record whose layout is not known (the jobs contract: -1 for
# uid and nprocs, null for the others; no exe)
_UNKNOWN_JOB = {"uid": -1, "jobid": None, "nprocs": -1, "exe": ""}
_UNKNOWN_JOB |= {"start_time": None, "end_time": None, "run_time": None}


def _job_fields(vals: tuple[int, ...], version: str) -> tuple[dict, list[str]]:
    """``uid, jobid, nprocs`` and the times of the job record, garbage ones unknown (-1
    for ``nprocs``, None for times), with a warning each: the log's records stay data,
    and analyses that need these fields skip the job.

    A 3.41 record whose nanoseconds are not in 0..10^9 is not in the 3.41 layout (the
    pre-release 3.4 development logs, read by libdarshan-util as nprocs 4.4e18 and a
    negative run time), so none of its fields, nor the exe after them, can be trusted
    (:data:`_UNKNOWN_JOB`)."""
    if version >= "3.41":
        uid, s, sn, e, en, nprocs, jobid = vals
        if not (0 <= sn < 10**9 and 0 <= en < 10**9):
            return _UNKNOWN_JOB, [
                f"job record not in the format {version} layout (nanoseconds {sn}, {en}: "
                "a pre-release development log?); its uid, jobid, nprocs, times and exe "
                "are unknown"
            ]
        start, end = s + sn * 1e-9, e + en * 1e-9
        run_time = (e + en / 1e9) - (s + sn / 1e9)
    else:
        uid, s, e, nprocs, jobid = vals
        start, end = float(s), float(e)
        run_time = float(e - s + 1)
    fields = {"uid": uid, "jobid": jobid, "nprocs": nprocs}
    fields |= {"start_time": start, "end_time": end, "run_time": run_time}
    warnings = []
    if not 0 < nprocs <= _MAX_NPROCS:
        fields["nprocs"] = -1
        warnings.append(f"garbage nprocs {nprocs} (outside 1..10^8); nprocs unknown")
    for what, t in (("start", s), ("end", e)):
        if not (_TIME_RANGE[0] <= t <= _TIME_RANGE[1] or t == 0):
            fields[f"{what}_time"] = fields["run_time"] = None
            warnings.append(f"implausible {what} time {t} (outside 1990-2100); unknown")
    return fields, warnings


def _words(data: bytes, nwords: int, order: str) -> np.ndarray:
    """The region as whole records of ``nwords`` 8-byte words (a partial tail is dropped)."""
    count = len(data) // (nwords * _WORD)
    arr = np.frombuffer(data, dtype=order + "u8", count=count * nwords).reshape(count, nwords)
    return arr.astype("<u8", copy=False) if order == ">" else arr


def _current_words(mod: str) -> int:
    nc, nf = (len(x) for x in COUNTERS[mod])
    return _BASE + (1 if mod in _WITH_FILE_REC else 0) + nc + nf + _EXTRA_WORDS.get(mod, 0)


def _generic_records(data: bytes, mod: str, ver: int, order: str) -> np.ndarray:
    """The module's records as rows of little-endian words in the current version's layout."""
    steps = _UPCONVERT.get(mod, {})
    recs = _words(data, _version_words(mod, ver), order)
    if ver not in steps:
        return np.ascontiguousarray(recs)
    nwords, ops = steps[ver]
    scratch = np.zeros((len(recs), _current_words(mod)), np.uint64)
    scratch[:, :nwords] = recs
    for op in ops:
        if op[0] == "drop_if_positive":
            scratch = scratch[scratch[:, op[1]].view(np.int64) <= 0]
        elif op[0] == "move":
            _move(scratch, *op[1:])
        else:
            scratch[:, op[1] : op[1] + len(op[2])] = np.asarray(op[2], np.uint64)
    return scratch


_MOVE_ROWS = 1 << 13  # records moved at once (a copy of all would cost a second region)


def _move(recs: np.ndarray, dest: int, src: int, n: int) -> None:
    """``memmove`` of ``n`` words within every record, :data:`_MOVE_ROWS` at a time."""
    for lo in range(0, len(recs), _MOVE_ROWS):
        block = recs[lo : lo + _MOVE_ROWS]
        block[:, dest : dest + n] = block[:, src : src + n].copy()


def _legacy_pnetcdf_records(data: bytes, ver: int, order: str) -> np.ndarray:
    """Pre-3.41 PNETCDF records (``INDEP_OPENS, COLL_OPENS`` and open/close timestamps)
    as PNETCDF_FILE records: opens summed into ``OPENS``, counters the old module did
    not keep set to -1, as libdarshan-util 3.5 returns them."""
    old = _words(data, _LEGACY_PNETCDF_WORDS[ver], order)
    if ver == 1:
        old = np.concatenate(
            [old[:, :4], np.full((len(old), 2), _F_NEG1, np.uint64), old[:, 4:]], axis=1
        )
        old[:, [5, 7]] = old[:, [7, 5]]  # close timestamp moves after the two new slots
    out = np.full((len(old), _current_words("PNETCDF_FILE")), _I_NEG1, np.uint64)
    out[:, :2] = old[:, :2]
    at = _BASE
    out[:, at + 1] = (old[:, 2].view(np.int64) + old[:, 3].view(np.int64)).view(np.uint64)
    f = at + len(COUNTERS["PNETCDF_FILE"][0])
    out[:, f : f + 8] = _F_NEG1
    out[:, [f, f + 1, f + 3, f + 4]] = old[:, 4:8]
    return out


def _named_rows(recs: np.ndarray, named: np.ndarray) -> np.ndarray:
    """The records whose id has a name record (the others are dropped from every table:
    leaving them out first builds no columns for them)."""
    known = known_ids(recs[:, 0], named)
    return recs if known.all() else recs[known]


def _generic_table(mod: str, recs: np.ndarray) -> pa.Table:
    cnames, fnames = COUNTERS[mod]
    at = _BASE + (1 if mod in _WITH_FILE_REC else 0)
    cols = {"rank": pa.array(recs[:, 1].view(np.int64)), "record_id": pa.array(recs[:, 0])}
    if mod in _WITH_FILE_REC:
        cols["file_rec_id"] = pa.array(recs[:, 2])
    # one transposed copy into one Arrow array per type; each counter is a slice of it
    # (an array per counter costs 2x more, a strided column per counter 3x)
    n, nc, nf = len(recs), len(cnames), len(fnames)
    ints = pa.array(np.ascontiguousarray(recs[:, at : at + nc].T).view(np.int64).ravel())
    floats = pa.array(
        np.ascontiguousarray(recs[:, at + nc : at + nc + nf].T).view(np.float64).ravel()
    )
    arrays = [*cols.values()]
    arrays += [ints.slice(i * n, n) for i in range(nc)] + [
        floats.slice(i * n, n) for i in range(nf)
    ]
    return pa.Table.from_arrays(arrays, names=[*cols, *cnames, *fnames])


# modules whose records must hold ranks in [-1, nprocs): those the accumulator reduces
# (it indexes per-rank arrays by rank) and the I/O-library modules beside them; iosight's
# own rule (libdarshan-util's accumulator asserts only on rank >= nprocs, in what it
# reduces), so that a record of no process is an error, not data
_RANK_CHECKED = (*ACCUMULATED, "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")


def _check_ranks(raw: dict[str, np.ndarray], nprocs: int) -> None:
    """A log whose records name a rank outside [-1, nprocs) is corrupt (``nprocs``: the
    job's, or the largest plausible one when the job record's is garbage)."""
    for mod in _RANK_CHECKED:
        ranks = raw[mod][:, 1].view(np.int64) if mod in raw else ()
        if len(ranks) and (ranks.min() < -1 or ranks.max() >= nprocs):
            raise CorruptLogError(f"module {mod} has records of ranks outside [-1, {nprocs})")


def _job_totals(raw: dict[str, np.ndarray]) -> dict[str, float]:
    """``darshan-parser --total``: iosight's own copy of libdarshan-util's accumulator
    (:func:`accumulate`) for POSIX, MPI-IO and STDIO; libdarshan-util 3.5 reduces none of
    H5F, H5D and PnetCDF (see :mod:`iosight.darshan._accumulate`), so neither does iosight."""
    totals: dict[str, float] = {}
    for mod in ACCUMULATED:
        if mod in raw:
            totals.update(accumulate(mod, raw[mod]))
    return totals
