"""Native reader for Darshan 2.x logs (``*.darshan.gz``, formats 1.21-2.06).

A 2.x log is one gzip (or bzip2) stream holding fixed C structs: a job header,
the executable line followed by the mount table, zero padding up to the first
record, then one ``struct darshan_file`` per (file, rank). The layouts per
format version follow Darshan 2.x ``darshan-log-format.h`` and
``darshan-util/darshan-logutils.c`` (``getjob_internal_*``,
``getfile_internal_*``, ``shift_missing_*``); the counters and their 3.x names
are in :mod:`iosight.darshan._darshan2_counters`.

iosight's readings:

- Byte order of 2.x formats comes from the magic number, as in
  ``getjob_internal_2*``. Formats 1.21-1.24 have no magic; darshan-logutils
  assumes big-endian 32-bit (Blue Gene/P). iosight tries big-endian first and
  falls back to little-endian when only that gives a sane header
  (``0 < nprocs < 2**31`` and ``start <= end``).
- Files are identified in 2.x by a hash of the path and only the last 12 (1.x)
  or 15 (2.x) characters of the name are stored: ``names.name`` is that
  suffix, as ``darshan-parser`` 2.x prints it.
- Mount points come from ``CP_DEVICE`` matched against the mount table, as
  ``darshan-parser`` 2.x does, ``"UNKNOWN"`` when there is no match.
- Every record becomes a ``posix`` row (2.x has one record for both layers);
  records with any MPI-IO activity also get an ``mpiio`` row.
- ``*_TIMESTAMP`` values are seconds since job start from format 2.04 on.
  Earlier formats stored raw ``MPI_Wtime`` values (darshan-logutils' version
  warnings); where those are wall-clock epochs (at or after a job start that
  is itself a plausible epoch, > 1e8 s) iosight subtracts the job start, and
  leaves other clocks (e.g. Blue Gene/P time since boot) as found.
- ``run_time`` is ``end_time - start_time + 1``, as ``darshan-parser`` 2.x
  prints it (2.x times have one-second resolution).
"""

from __future__ import annotations

import bz2
import gzip
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import CorruptLogError, read_naming_file
from iosight.darshan._darshan2_counters import (
    CP_COUNTERS,
    CP_F_COUNTERS,
    MISSING_COUNTERS,
    MPIIO_COLUMNS,
    POSIX_COLUMNS,
)
from iosight.darshan._tables import LogTables, jobs_schema, path_text

if TYPE_CHECKING:
    import pyarrow as pa

CP_MAGIC_NR = 6567223
_NC, _NF = len(CP_COUNTERS), len(CP_F_COUNTERS)
_INDEX_COLUMNS = ("rank", "record_id", "file_rec_id")
# identifiers and settings, not quantities: job_totals keeps the largest value seen
_TAKE_MAX = ("_END_TIMESTAMP", "_MODE", "_ALIGNMENT", "_FASTEST_RANK", "_SLOWEST_RANK")
# module tables whose counters enter job_totals (the others hold no counters)
_NON_COUNTER_TABLES = ("lustre", "dxt_posix", "dxt_mpiio", "heatmap")


@dataclass(frozen=True)
class _Layout:
    """Where the parts of one 2.x format version lie in the uncompressed stream."""

    job_size: int  # bytes of struct darshan_job (exe string starts here)
    records_at: int  # CP_JOB_RECORD_SIZE: first file record
    metadata_len: int  # bytes of job.metadata (0 before 2.01)
    n_counters: int  # counters stored per record (before shift_missing)
    n_fcounters: int
    legacy: bool  # 1.x struct: int32 rank, name suffix after the counters
    widen_as: str = ""  # key of MISSING_COUNTERS when records hold fewer counters


_PRERELEASE_RECORD = 32 + (140 + 14) * 8  # 2.0.0-pre/trunk: 2.x struct, 1.24 counters


def _layout(version: str, data: bytes) -> _Layout:
    """Layout of ``data`` (the whole uncompressed log) for its format version.

    Pre-release 2.0.0 builds wrote ``"2.00"`` with the 1.24 counter set in the
    2.x record struct, some without the ``jobid`` field; iosight recognises them
    by their record size and by the executable path starting at byte 48.
    """
    if version in ("2.04", "2.05", "2.06"):
        return _Layout(1080, 4096, 1024, _NC, _NF, legacy=False)
    if version in ("2.01", "2.02", "2.03"):
        return _Layout(120, 1024, 64, _NC, _NF, legacy=False)
    if version == "2.00":
        body = len(data) - 1024
        if body > 0 and body % (32 + (_NC + _NF) * 8) and body % _PRERELEASE_RECORD == 0:
            job_size = 48 if all(32 <= b < 127 for b in data[48:56]) else 56
            return _Layout(job_size, 1024, 0, 140, 14, legacy=False, widen_as="1.24")
        return _Layout(56, 1024, 0, _NC, _NF, legacy=False)
    sizes = {"1.21": (133, 12), "1.22": (138, 14), "1.23": (140, 14), "1.24": (140, 14)}
    if version in sizes:
        nc, nf = sizes[version]
        return _Layout(28, 1024, 0, nc, nf, legacy=True, widen_as=version)
    if data.startswith(b"# darshan"):
        raise CorruptLogError("compressed darshan-parser text, not a binary 2.x log")
    raise CorruptLogError(f"unsupported Darshan log format version {version!r}")


def _record_dtype(layout: _Layout, order: str) -> np.dtype:
    """``struct darshan_file`` of this format as a numpy dtype (``order``: '<' or '>')."""
    if layout.legacy:  # hash, int32 rank (+pad), counters, fcounters, name[12] (+pad)
        return np.dtype(
            [
                ("hash", order + "u8"),
                ("rank", order + "i4"),
                ("_pad", "V4"),
                ("counters", order + "i8", (layout.n_counters,)),
                ("fcounters", order + "f8", (layout.n_fcounters,)),
                ("name", "S12"),
                ("_pad2", "V4"),
            ]
        )
    return np.dtype(
        [
            ("hash", order + "u8"),
            ("rank", order + "i8"),
            ("name", "S16"),
            ("counters", order + "i8", (layout.n_counters,)),
            ("fcounters", order + "f8", (layout.n_fcounters,)),
        ]
    )


def _decompress(raw: bytes) -> bytes:
    try:
        if raw[:3] == b"BZh":
            return bz2.decompress(raw)
        if raw[:2] == b"\x1f\x8b":
            return gzip.decompress(raw)
    except (OSError, EOFError, ValueError, zlib.error) as err:
        raise CorruptLogError(f"truncated or damaged compressed stream ({err})") from None
    raise CorruptLogError("not a Darshan 2.x log: neither gzip nor bzip2 data")


def _job_header(data: bytes, version: str, layout: _Layout) -> tuple[str, dict]:
    """Byte order and job fields; raises on a bad magic number or a short header."""
    if len(data) < layout.job_size:
        raise CorruptLogError(f"truncated job header ({len(data)} of {layout.job_size} bytes)")
    if layout.legacy:  # version[8], int32 magic?, uint32 uid, int32 start, end, nprocs
        for order in (">", "<"):
            uid, start, end, nprocs = np.frombuffer(data, order + "i4", 4, 12).tolist()
            if 0 < nprocs < 2**31 and 0 <= start <= end:
                return order, dict(
                    uid=uid & 0xFFFFFFFF, start=start, end=end, nprocs=nprocs, jobid=0
                )
        raise CorruptLogError(f"garbage job header in format {version} log")
    for order in ("<", ">"):
        magic, uid, start, end, nprocs, jobid = np.frombuffer(data, order + "i8", 6, 8).tolist()
        if magic == CP_MAGIC_NR:
            jobid = jobid if layout.job_size >= 56 else 0  # pre-release 2.00: no jobid
            return order, dict(uid=uid, start=start, end=end, nprocs=nprocs, jobid=jobid)
    raise CorruptLogError("bad magic number in Darshan 2.x job header")


def _parse_metadata(blob: bytes) -> tuple[str, dict[str, str]]:
    """job.metadata as text and as ``key=value`` pairs (split on the first ``=``)."""
    text = blob.split(b"\0", 1)[0].decode("utf-8", "replace").strip()
    pairs = (line.split("=", 1) for line in text.split("\n") if "=" in line)
    return text, {k: v for k, v in pairs}


def _exe_and_mounts(region: bytes) -> tuple[str, list[tuple[int, str, str]]]:
    """The executable line and ``(device, fs_type, mount_point)`` entries after it."""
    text = region.split(b"\0", 1)[0].decode("utf-8", "replace")
    exe, *lines = text.split("\n")
    mounts = []
    for line in lines:
        parts = line.split("\t")
        if len(parts) != 3:
            raise CorruptLogError(f"poorly formatted mount table entry {line[:60]!r}")
        try:
            mounts.append((int(parts[0]), parts[1], parts[2]))
        except ValueError:
            raise CorruptLogError(f"bad device id in mount table: {parts[0][:30]!r}") from None
    return exe, mounts


def _widen(records: np.ndarray, widen_as: str) -> tuple[np.ndarray, np.ndarray]:
    """Counters of an older format placed at their 2.06 indices (zeros where absent)."""
    counters = records["counters"].astype(np.int64)
    fcounters = records["fcounters"].astype(np.float64)
    if not widen_as:
        return counters, fcounters
    missing, f_missing = MISSING_COUNTERS[widen_as]
    out = np.zeros((len(records), _NC), np.int64)
    keep = [i for i, name in enumerate(CP_COUNTERS) if name not in missing]
    out[:, keep] = counters
    f_out = np.zeros((len(records), _NF), np.float64)
    f_keep = [i for i, name in enumerate(CP_F_COUNTERS) if name not in f_missing]
    f_out[:, f_keep] = fcounters
    return out, f_out


def _normalise_timestamps(fcounters: np.ndarray, start: float) -> None:
    """In place: epoch ``*_TIMESTAMP`` values of pre-2.04 logs -> seconds since start."""
    cols = [i for i, name in enumerate(CP_F_COUNTERS) if name.endswith("TIMESTAMP")]
    stamps = fcounters[:, cols]
    fcounters[:, cols] = np.where(stamps >= start, stamps - start, stamps)


def _module_table(
    columns: dict[str, str],
    rank: np.ndarray,
    record_id: np.ndarray,
    counters: np.ndarray,
    fcounters: np.ndarray,
) -> pa.Table:
    import pyarrow as pa

    data: dict[str, pa.Array] = {
        "rank": pa.array(rank, pa.int64()),
        "record_id": pa.array(record_id, pa.uint64()),
    }
    for i, name in enumerate(CP_COUNTERS):
        if name in columns:
            data[columns[name]] = pa.array(counters[:, i], pa.int64())
    for i, name in enumerate(CP_F_COUNTERS):
        if name in columns:
            data[columns[name]] = pa.array(fcounters[:, i], pa.float64())
    return pa.table(data)


def _mpi_activity(counters: np.ndarray, fcounters: np.ndarray) -> np.ndarray:
    """Rows with any MPI-IO counter or MPI-IO time set."""
    ints = [i for i, n in enumerate(CP_COUNTERS) if n in MPIIO_COLUMNS]
    floats = [i for i, n in enumerate(CP_F_COUNTERS) if n in MPIIO_COLUMNS]
    return (counters[:, ints] > 0).any(axis=1) | (fcounters[:, floats] > 0).any(axis=1)


def cp_record_tables(
    rank: np.ndarray, record_id: np.ndarray, counters: np.ndarray, fcounters: np.ndarray
) -> dict[str, pa.Table]:
    """Darshan 2.x records as warehouse tables: the interface both 2.x readers fill.

    ``counters``/``fcounters`` hold one row per record in the 2.06 ``CP_*`` layout
    (:data:`CP_COUNTERS`, :data:`CP_F_COUNTERS`), however the reader got them (the
    binary log, or a 2.x ``darshan-parser`` dump). Every record goes to ``posix``;
    records with any MPI-IO counter or time also go to ``mpiio``, as Darshan 2.x
    kept both layers in one record.
    """
    tables = {"posix": _module_table(POSIX_COLUMNS, rank, record_id, counters, fcounters)}
    mpi = _mpi_activity(counters, fcounters)
    if mpi.any():
        tables["mpiio"] = _module_table(
            MPIIO_COLUMNS, rank[mpi], record_id[mpi], counters[mpi], fcounters[mpi]
        )
    return tables


def _reduce_column(name: str, values: np.ndarray) -> int | float:
    if name.endswith("_START_TIMESTAMP"):
        positive = values[values > 0]
        return positive.min().item() if positive.size else values.dtype.type(0).item()
    if name.endswith(_TAKE_MAX) or "_MAX_" in name or name == "CP_DEVICE":
        return values.max().item()
    return values.sum().item()


def job_totals(tables: dict[str, pa.Table]) -> pa.Table:
    """One-row ``job_totals`` table: the ``darshan-parser --total`` style reduction.

    Parameters
    ----------
    tables : dict of str to pyarrow.Table
        Module tables of one log (``posix``, ``mpiio``, ``stdio``, ...); tables
        without counters (``jobs``, ``names``, ``lustre``, DXT, heatmap) are ignored.

    Returns
    -------
    pyarrow.Table
        ``total_<COUNTER>`` for every numeric counter column of a non-empty
        module table, keeping its type.

    Notes
    -----
    iosight's reading of ``darshan-parser --total``, for sources without
    libdarshan-util's accumulator (2.x logs, parser dumps lacking ``total_*``
    lines): counts, bytes and times are summed; ``*_MAX_*`` counters
    (``POSIX_MAX_BYTE_READ``, ``POSIX_F_MAX_READ_TIME``, ...) and
    ``*_END_TIMESTAMP`` take the maximum; ``*_START_TIMESTAMP`` takes the
    minimum of the positive values (0 when none), as darshan's aggregators skip
    unset (zero) timestamps. Identifiers and settings (``*_MODE``,
    ``*_ALIGNMENT``, ``*_FASTEST_RANK``, ``*_SLOWEST_RANK``, ``CP_DEVICE``) keep
    the largest value seen instead of a meaningless (and overflow-prone) sum.
    The top-4 stride/access tables and the rank-variance counters, which darshan
    merges specially, are summed and carry no job-level meaning.
    """
    import pyarrow as pa
    from pyarrow import types as pat

    from iosight.darshan._tables import MODULE_TABLES

    module_tables = set(MODULE_TABLES.values()) - set(_NON_COUNTER_TABLES)
    totals: dict[str, pa.Array] = {}
    for tname, table in tables.items():
        if tname not in module_tables or table.num_rows == 0:
            continue
        for field in table.schema:
            if field.name in _INDEX_COLUMNS:
                continue
            if not (pat.is_integer(field.type) or pat.is_floating(field.type)):
                continue
            values = table.column(field.name).to_numpy()
            totals[f"total_{field.name}"] = pa.array(
                [_reduce_column(field.name, values)], field.type
            )
    return pa.table(totals)


def read_darshan2(path: Path) -> LogTables:
    """Read one Darshan 2.x log into the warehouse tables (see ``_tables.py``).

    Parameters
    ----------
    path : Path
        A ``*.darshan.gz`` (or bzip2) log of format 1.21-2.06.

    Returns
    -------
    LogTables
        ``jobs``, ``names``, ``mounts``, ``posix``, ``mpiio`` (when any record has
        MPI-IO activity) and ``job_totals``.

    Raises
    ------
    CorruptLogError
        Not gzip/bzip2, truncated stream or record, bad magic number, garbage
        header, unsupported format version.
    """
    return read_naming_file(Path(path), _read)


def _read(path: Path) -> LogTables:
    import pyarrow as pa

    raw = path.read_bytes()
    if not raw:
        raise CorruptLogError("empty file")
    data = _decompress(raw)
    version = data[:8].split(b"\0", 1)[0].decode("ascii", "replace")
    layout = _layout(version, data)
    order, job = _job_header(data, version, layout)
    meta_text, metadata = _parse_metadata(data[56 : 56 + layout.metadata_len])
    exe, mount_entries = _exe_and_mounts(data[layout.job_size : layout.records_at])

    body = data[layout.records_at :]
    dtype = _record_dtype(layout, order)
    if len(body) % dtype.itemsize:
        n_full = len(body) // dtype.itemsize
        raise CorruptLogError(
            f"truncated file record after {n_full} records "
            f"({len(body) % dtype.itemsize} of {dtype.itemsize} bytes)"
        )
    records = np.frombuffer(body, dtype)
    counters, fcounters = _widen(records, layout.widen_as)
    if version < "2.04" and job["start"] > 1e8:
        _normalise_timestamps(fcounters, float(job["start"]))
    rank = records["rank"].astype(np.int64)
    record_id = records["hash"].astype(np.uint64)

    tables = cp_record_tables(rank, record_id, counters, fcounters)

    devices = {dev: (mnt, fs) for dev, fs, mnt in reversed(mount_entries)}
    device = counters[:, CP_COUNTERS.index("CP_DEVICE")]
    _, first = np.unique(record_id, return_index=True)
    first.sort()
    names = [rec.split(b"\0", 1)[0].decode("utf-8", "replace") for rec in records["name"][first]]
    where = [devices.get(int(d), ("UNKNOWN", "UNKNOWN")) for d in device[first]]
    tables["names"] = pa.table(
        {
            "record_id": pa.array(record_id[first], pa.uint64()),
            "name": pa.array(names, pa.string()),
            "mount_point": pa.array([w[0] for w in where], pa.string()),
            "fs_type": pa.array([w[1] for w in where], pa.string()),
        }
    )
    tables["mounts"] = pa.table(
        {
            "mount_point": pa.array([m for _, _, m in mount_entries], pa.string()),
            "fs_type": pa.array([f for _, f, _ in mount_entries], pa.string()),
        }
    )
    modules = "POSIX,MPI-IO" if "mpiio" in tables else "POSIX"
    row = {
        "source_path": path_text(path),
        "source_format": "darshan2",
        "log_version": version,
        "lib_version": metadata.get("lib_ver", ""),
        "jobid": job["jobid"],
        "uid": job["uid"],
        "exe": exe,
        "nprocs": job["nprocs"],
        "start_time": float(job["start"]),
        "end_time": float(job["end"]),
        "run_time": float(job["end"] - job["start"] + 1),
        "modules": modules,
        "partial_modules": "",
        "partial": False,
        "synthetic": False,
        "metadata": meta_text,
    }
    tables["jobs"] = pa.Table.from_pylist([row], jobs_schema())  # known_at: null, ingest sets it
    tables["job_totals"] = job_totals(tables)
    return LogTables(tables)
