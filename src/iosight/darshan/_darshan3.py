"""Read a Darshan 3.x log natively: the file format itself, no libdarshan-util.

A 3.x log is an uncompressed header (version string, magic number, compression
type, partial-module flags, the region map and per-module format versions) and
compressed regions: the job record (``struct darshan_job`` plus the exe and
mount table), the name records (``id, NUL-terminated name``) and one region per
module holding that module's records back to back (``darshan-logutils.c``,
``include/darshan-log-format.h``). Each region is inflated whole (zlib, bzip2
or stored) and its records are viewed with a numpy structured dtype, so a log
becomes columns with one copy and no Python per counter.

Old module versions are up-converted to the current counter set exactly as
libdarshan-util 3.5 does (``darshan-<module>-logutils.c``): a record is a row of
8-byte words and each step inserts the counters a later version added, with the
same fill values (-1, or 0 for ids). A module of a version newer than this reader
knows is skipped with a warning (``jobs.metadata`` gains a line), never the job.

Hostile input is a :class:`CorruptLogError` with a one-line reason, never another
exception: regions outside the file or overlapping, bad compressed streams, unknown
versions or compression, nprocs outside 1..10^8, times outside 1990-2100, negative
record counts, ranks outside the job. Allocation is bounded by what the file holds,
never by a count it claims: a region inflates to at most :data:`MAX_REGION_BYTES`
(1 GiB) and all regions of a log to :data:`MAX_LOG_BYTES` (2 GiB); a record whose
count (segments, bins, components, stripes) needs more bytes than the region holds
ends the region, as libdarshan-util's short read does; the arrays built from a
region are a small multiple (<= 4x) of its inflated size.
"""

from __future__ import annotations

import bz2
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from iosight._errors import CorruptLogError
from iosight.darshan._accumulate import ACCUMULATED, accumulate
from iosight.darshan._darshan3_counters import COUNTERS, LUSTRE_COMP_COUNTERS
from iosight.darshan._record_tables import (
    concat_int64,
    heatmap_table,
    named_tables,
    names_table,
    totals_table,
)
from iosight.darshan._tables import LogTables, jobs_schema, table_for_module, with_warning

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
# zeroed 128-word scratch record: {module: {version: (words read, steps)}}; a step is
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
_SCRATCH_WORDS = 128
_GENERIC = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q")
_GENERIC += ("DFS", "DAOS")
_EXTRA_WORDS = {"DFS": 4, "DAOS": 6}  # pool/cont uuids (+ oid_hi, oid_lo) after fcounters
_WITH_FILE_REC = ("H5D", "PNETCDF_VAR")


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


def _inflate(raw: bytes, comp: int, what: str, budget: list[int]) -> bytes:
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


def _inflate_zlib(raw: bytes, cap: int, what: str) -> bytes:
    """Inflate a region of back-to-back zlib streams (one per rank's share, so thousands
    in a large job's region), at most ``cap`` bytes. The input goes in ``_FEED``-byte
    pieces: at each stream's end zlib copies the rest of its input to ``unused_data``,
    which for the whole region would cost quadratic time. A truncated last stream keeps
    what inflated, as libdarshan does."""
    chunks, size, pos, view = [], 0, 0, memoryview(raw)
    d = zlib.decompressobj()
    while pos < len(raw):
        piece = view[pos : pos + _FEED]
        chunk = d.decompress(piece, cap + 1 - size)
        size += len(chunk)
        chunks.append(chunk)
        if size > cap or d.unconsumed_tail:
            raise CorruptLogError(f"{what} inflates past {cap} bytes")
        if d.eof:
            pos += len(piece) - len(d.unused_data)
            d = zlib.decompressobj()
        else:
            pos += len(piece)
    return b"".join(chunks)


def read_darshan3(path: str | Path, *, job_totals_row: bool = False) -> LogTables:
    """Read one Darshan 3.x log (format 3.00-3.41) into warehouse tables.

    ``job_totals_row``: give ``job_totals`` as its one row (a dict, column -> value),
    for a caller that builds one table of many logs' rows (ingest: a one-row table of
    ~190 columns costs more to build and to concatenate than the whole row does).

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
    return read_darshan3_bytes(blob, path, job_totals_row=job_totals_row)


def read_darshan3_bytes(
    blob: bytes, path: str | Path = "<bytes>", *, job_totals_row: bool = False
) -> LogTables:
    """:func:`read_darshan3` of a log already in memory (``path`` names it in errors)."""
    path = Path(path)
    if not blob:
        raise CorruptLogError(f"{path}: empty file")
    try:
        return _read(blob, path, job_totals_row)
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


def _read(blob: bytes, path: Path, job_totals_row: bool) -> LogTables:
    hdr = _header(blob, path)
    budget = [MAX_LOG_BYTES]
    _check_overlaps(hdr)
    job_end = hdr.name_map[0] or min((r[0] for r in hdr.regions.values()), default=len(blob))
    job_raw = _region(
        blob, hdr, "job", hdr.header_size, job_end - hdr.header_size, [_JOB_RECORD_SIZE * 4]
    )
    job, mounts = _job(job_raw[:_JOB_RECORD_SIZE], hdr)
    names: dict[int, str] = {}
    if hdr.name_map[1]:
        names = _names(_region(blob, hdr, "name", *hdr.name_map, budget), hdr)
    warnings: list[str] = []
    tables: LogTables = {}
    raw_records: dict[str, np.ndarray] = {}
    for mod, (off, length, ver) in hdr.regions.items():
        known = KNOWN_VERSIONS.get(mod)
        if known is None:
            continue  # APXC, APMPI, MDHIM, ...: not in the warehouse contract
        if ver == 0 or ver > known:
            warnings.append(f"module {mod} version {ver} is newer than this reader; skipped")
            continue
        data = _region(blob, hdr, mod, off, length, budget)
        if mod == "PNETCDF_FILE" and hdr.version < "3.41":
            recs = _legacy_pnetcdf_records(data, ver, hdr.order)
        elif mod in _GENERIC:
            recs = _generic_records(data, mod, ver, hdr.order)
        if mod in _GENERIC:
            if len(recs):
                raw_records[mod] = recs
                tables[table_for_module(mod)] = _generic_table(mod, recs)
        elif mod == "LUSTRE":
            tables["lustre"] = _lustre_table(data, ver, hdr.order)
        elif mod in ("DXT_POSIX", "DXT_MPIIO"):
            with_tid = (mod == "DXT_POSIX" and ver >= 2) or (mod == "DXT_MPIIO" and ver >= 3)
            # DXT_MPIIO v1 recorded no offsets: libdarshan reports -1
            no_offsets = mod == "DXT_MPIIO" and ver == 1
            tables[table_for_module(mod)] = _dxt_table(data, hdr.order, with_tid, no_offsets)
        elif mod == "HEATMAP":
            tables["heatmap"] = _heatmap_table(data, hdr.order, names)
    tables = named_tables(tables, names)
    present = [m for m in hdr.regions]
    for w in warnings:
        job["metadata"] = with_warning(job["metadata"], w)
    job.update(
        modules=",".join(present),
        partial_modules=",".join(hdr.partial_modules),
        partial=bool(hdr.partial_modules),
    )
    tables["jobs"] = pa.Table.from_pylist([job], schema=jobs_schema())
    tables["mounts"] = pa.table(
        {
            "mount_point": pa.array([m[0] for m in mounts], pa.string()),
            "fs_type": pa.array([m[1] for m in mounts], pa.string()),
        }
    )
    tables["names"] = names_table(names, mounts)
    _check_ranks(raw_records, job["nprocs"])
    totals = _job_totals(raw_records)
    if totals:
        tables["job_totals"] = totals if job_totals_row else totals_table(totals)
    return tables


def _check_overlaps(hdr: _Header) -> None:
    spans = sorted(
        [(o, o + n, m) for m, (o, n, _) in hdr.regions.items()]
        + ([(hdr.name_map[0], sum(hdr.name_map), "name")] if hdr.name_map[1] else [])
    )
    for (_, end, a), (start, _, b) in zip(spans, spans[1:], strict=False):
        if start < end:
            raise CorruptLogError(f"regions {a} and {b} overlap")


def _job(data: bytes, hdr: _Header) -> tuple[dict, list[tuple[str, str]]]:
    o = hdr.order
    if hdr.version >= "3.41":
        fmt, size = o + "7q", 56
    else:
        fmt, size = o + "5q", 40
    if len(data) < size + 1024:
        raise CorruptLogError(f"job record truncated ({len(data)} bytes)")
    vals = struct.unpack_from(fmt, data, 0)
    if hdr.version >= "3.41":
        uid, s, sn, e, en, nprocs, jobid = vals
        if not (0 <= sn < 10**9 and 0 <= en < 10**9):
            raise CorruptLogError(
                f"implausible nanoseconds ({sn}, {en}): not a format {hdr.version} job "
                "record (a pre-release development log?)"
            )
        start, end = s + sn * 1e-9, e + en * 1e-9
        run_time = (e + en / 1e9) - (s + sn / 1e9)
    else:
        uid, s, e, nprocs, jobid = vals
        start, end = float(s), float(e)
        run_time = float(e - s + 1)
    if not 0 < nprocs <= _MAX_NPROCS:
        raise CorruptLogError(f"garbage header (nprocs={nprocs})")
    for what, t in (("start", s), ("end", e)):
        if not (_TIME_RANGE[0] <= t <= _TIME_RANGE[1] or t == 0):
            raise CorruptLogError(f"implausible {what} time {t} (outside 1990-2100)")
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
        "source_path": str(hdr.path),
        "source_format": "darshan3",
        "log_version": hdr.version,
        "lib_version": kv.get("lib_ver", ""),
        "jobid": jobid,
        "uid": uid,
        "exe": exe.decode("utf-8", "replace"),
        "nprocs": nprocs,
        "start_time": start,
        "end_time": end,
        "run_time": run_time,
        "synthetic": False,
        "metadata": meta.strip(),
    }
    return job, mounts


def _names(data: bytes, hdr: _Header) -> dict[int, str]:
    out: dict[int, str] = {}
    pos, n = 0, len(data)
    idfmt = hdr.order + "Q"
    v300 = hdr.version == "3.00"
    while pos + 9 <= n:
        (rid,) = struct.unpack_from(idfmt, data, pos)
        if v300:  # 3.00: id, uint32 name length, name (no NUL)
            (ln,) = struct.unpack_from(hdr.order + "I", data, pos + 8)
            end = pos + 12 + ln
            if end > n:
                break
            name = data[pos + 12 : end]
            pos = end
        else:
            end = data.find(b"\0", pos + 8)
            if end < 0:
                break
            name = data[pos + 8 : end]
            pos = end + 1
        out[rid] = name.decode("utf-8", "replace")  # a repeated id: the last name wins
    return out


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
    if ver not in steps:
        recs = _words(data, _current_words(mod), order)
        return np.ascontiguousarray(recs)
    nwords, ops = steps[ver]
    recs = _words(data, nwords, order)
    scratch = np.zeros((len(recs), _SCRATCH_WORDS), np.uint64)
    scratch[:, :nwords] = recs
    for op in ops:
        if op[0] == "drop_if_positive":
            scratch = scratch[scratch[:, op[1]].view(np.int64) <= 0]
        elif op[0] == "move":
            _, dest, src, n = op
            scratch[:, dest : dest + n] = scratch[:, src : src + n].copy()
        else:
            scratch[:, op[1] : op[1] + len(op[2])] = np.asarray(op[2], np.uint64)
    recs = scratch[:, : _current_words(mod)]
    return np.ascontiguousarray(recs)


def _legacy_pnetcdf_records(data: bytes, ver: int, order: str) -> np.ndarray:
    """Pre-3.41 PNETCDF records (``INDEP_OPENS, COLL_OPENS`` and open/close timestamps)
    as PNETCDF_FILE records: opens summed into ``OPENS``, counters the old module did
    not keep set to -1, as libdarshan-util 3.5 returns them."""
    nwords = 7 if ver == 1 else 8  # v1: no F_CLOSE_START / F_OPEN_END
    old = _words(data, nwords, order)
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


def _i64(data: bytes, pos: int, order: str, n: int = 1):
    return struct.unpack_from(f"{order}{n}q", data, pos)


def _lustre_table(data: bytes, ver: int, order: str) -> pa.Table:
    """LUSTRE records: v2 {base, num_comps, num_stripes, comps, ost_ids}; v1
    {base, 5 counters, ost_ids[stripe_width]} up-converted to one component."""
    names = LUSTRE_COMP_COUNTERS
    ranks, ids, comp_no, pools, osts = [], [], [], [], []
    counters: list[tuple[int, ...]] = []
    pos, n = 0, len(data)
    while True:
        if ver >= 2:
            if pos + 32 > n:
                break
            rid, rank, ncomp, nstripe = struct.unpack_from(order + "Qqqq", data, pos)
            need = 32 + ncomp * 72 + nstripe * 8
            if ncomp < 0 or nstripe < 0 or pos + need > n:
                if pos + need > n and ncomp >= 0 and nstripe >= 0:
                    break
                raise CorruptLogError(f"LUSTRE record with {ncomp} components, {nstripe} stripes")
            ost_all = list(_i64(data, pos + 32 + ncomp * 72, order, nstripe))
            at = 0
            for c in range(ncomp):
                cpos = pos + 32 + c * 72
                vals = _i64(data, cpos, order, 7)
                pool = data[cpos + 56 : cpos + 72].split(b"\0", 1)[0].decode("utf-8", "replace")
                stripes = max(vals[1], 0)
                counters.append(vals)
                osts.append(ost_all[at : at + stripes])
                at += stripes
                ranks.append(rank)
                ids.append(rid)
                comp_no.append(c)
                pools.append(pool)
            pos += need
        else:
            if pos + 64 > n:
                break
            rid, rank, n_osts, n_mdts, s_off, s_size, width = struct.unpack_from(
                order + "Qq5q", data, pos
            )
            need = 56 + max(width, 1) * 8
            if width < 0 or pos + need > n:
                break
            ost_list = list(_i64(data, pos + 56, order, width)) if width else []
            counters.append((s_size, width, -1, -1, 0, -1, -1))
            osts.append(ost_list)
            ranks.append(rank)
            ids.append(rid)
            comp_no.append(0)
            pools.append("")
            pos += need
    mat = np.asarray(counters, dtype=np.int64).reshape(-1, len(names))
    return pa.table(
        {
            "rank": pa.array(ranks, pa.int64()),
            "record_id": pa.array(ids, pa.uint64()),
            "component": pa.array(comp_no, pa.int64()),
            **{name: pa.array(mat[:, i]) for i, name in enumerate(names)},
            "pool_name": pa.array(pools, pa.string()),
            "ost_ids": pa.array(osts, pa.list_(pa.int64())),
        }
    )


_OPS = pa.array(["read", "write"])


def _dxt_table(data: bytes, order: str, with_tid: bool, no_offsets: bool) -> pa.Table:
    """DXT records: a 104-byte head (base, shared flag, hostname[64], write and read
    counts) then the write segments and the read segments (offset, length, start,
    end[, pthread_id])."""
    seg_size = 40 if with_tid else 32
    heads, starts = [], []
    pos, n = 0, len(data)
    while pos + 104 <= n:
        w, r = struct.unpack_from(order + "qq", data, pos + 88)
        if w < 0 or r < 0:
            raise CorruptLogError(f"DXT record with {w} writes, {r} reads")
        end = pos + 104 + (w + r) * seg_size
        if end > n:
            break
        heads.append((pos, w, r))
        starts.append(pos + 104)
        pos = end
    nrec = len(heads)
    counts = np.array([w + r for _, w, r in heads], dtype=np.int64)
    nwrites = np.array([w for _, w, _ in heads], dtype=np.int64)
    fields = [("offset", "i8"), ("length", "i8"), ("start", "f8"), ("end", "f8")]
    if with_tid:
        fields.append(("pthread_id", "u8"))
    dt = np.dtype([(k, order + v) for k, v in fields])
    buf = np.frombuffer(data, np.uint8)
    if nrec:
        seg_bytes = np.concatenate(
            [buf[s : s + c * seg_size] for s, c in zip(starts, counts.tolist(), strict=True)]
        )
        seg = seg_bytes.view(dt)
    else:
        seg = np.zeros(0, dt)
    head_dt = np.dtype([("id", order + "u8"), ("rank", order + "i8")])
    base = np.array([np.frombuffer(data, head_dt, 1, p)[0] for p, _, _ in heads], head_dt)
    hosts = [
        data[p + 24 : p + 88].split(b"\0", 1)[0].decode("utf-8", "replace") for p, _, _ in heads
    ]
    rec_of = np.repeat(np.arange(nrec), counts)
    seq = np.arange(len(seg)) - np.repeat(np.cumsum(counts) - counts, counts)
    is_write = seq < np.repeat(nwrites, counts)
    cols = {
        "rank": pa.array(base["rank"].astype(np.int64)[rec_of]),
        "record_id": pa.array(base["id"].astype(np.uint64)[rec_of]),
        "hostname": pa.DictionaryArray.from_arrays(
            pa.array(rec_of.astype(np.int32)), pa.array(hosts, pa.string())
        ).cast(pa.string()),
        "seq": pa.array(seq.astype(np.int64)),
        "op": _OPS.take(pa.array(is_write.astype(np.int8))),
        "offset": pa.array(
            np.full(len(seg), -1, np.int64) if no_offsets else seg["offset"].astype(np.int64)
        ),
        "length": pa.array(seg["length"].astype(np.int64)),
        "start": pa.array(seg["start"].astype(np.float64)),
        "end": pa.array(seg["end"].astype(np.float64)),
    }
    if with_tid:
        cols["pthread_id"] = pa.array(seg["pthread_id"].astype(np.uint64))
    return pa.table(cols)


def _heatmap_table(data: bytes, order: str, names: dict[int, str]) -> pa.Table:
    """HEATMAP records: base, bin width, nbins, 2 pointers, write bins, read bins.

    Records of one bin count (what Darshan writes) are one structured view of the
    region; others are walked record by record."""
    recs = _heatmap_uniform(data, order)
    return heatmap_table(*(recs if recs is not None else _heatmap_walk(data, order)), names)


def _heatmap_uniform(data: bytes, order: str):
    """The records as arrays when all hold the first one's bin count and fill the region
    (a tail too short for a record header), else None.

    Exact, not a guess: record i's bin count is read where a record-by-record walk reads
    it once records 0..i-1 held the first one's count, so a record of another count is
    caught at its own header.
    """
    if len(data) < 48:
        return None
    (k,) = struct.unpack_from(order + "q", data, 24)
    size = 48 + 16 * k
    if k <= 0 or len(data) % size >= 48:
        return None
    e = order + "i8"
    dt = np.dtype(
        [("id", order + "u8"), ("rank", e), ("width", order + "f8"), ("nbins", e)]
        + [("ptr", order + "u8", 2), ("w", e, k), ("r", e, k)]
    )
    recs = np.frombuffer(data, dt, len(data) // size)
    if not (recs["nbins"] == k).all():
        return None
    return (
        recs["id"].astype(np.uint64),
        recs["rank"].astype(np.int64),
        recs["width"].astype(np.float64),
        np.full(len(recs), k, np.int64),
        recs["w"].astype(np.int64).ravel(),
        recs["r"].astype(np.int64).ravel(),
    )


def _heatmap_walk(data: bytes, order: str):
    """The records as arrays, walked one by one (a record's bin count sets its size)."""
    recs = []
    pos, n = 0, len(data)
    while pos + 48 <= n:
        rid, rank, width, nbins = struct.unpack_from(order + "Qqdq", data, pos)
        end = pos + 48 + 16 * nbins
        if nbins < 0:
            raise CorruptLogError(f"HEATMAP record with {nbins} bins")
        if end > n:
            break
        recs.append((rid, rank, width, nbins, pos + 48))
        pos = end
    i8 = np.dtype(order + "i8")
    return (
        np.array([x[0] for x in recs], np.uint64),
        np.array([x[1] for x in recs], np.int64),
        np.array([x[2] for x in recs], np.float64),
        np.array([x[3] for x in recs], np.int64),
        concat_int64([np.frombuffer(data, i8, nb, p) for _, _, _, nb, p in recs]),
        concat_int64([np.frombuffer(data, i8, nb, p + 8 * nb) for _, _, _, nb, p in recs]),
    )


# modules whose records must hold ranks in [-1, nprocs): those the accumulator reduces
# (it indexes per-rank arrays by rank) and the I/O-library modules beside them; iosight's
# own rule (libdarshan-util's accumulator asserts only on rank >= nprocs, in what it
# reduces), so that a record of no process is an error, not data
_RANK_CHECKED = (*ACCUMULATED, "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")


def _check_ranks(raw: dict[str, np.ndarray], nprocs: int) -> None:
    """A log whose records name a rank outside [-1, nprocs) is corrupt."""
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
