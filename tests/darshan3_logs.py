"""Rewrite real Darshan 3.x logs for tests: recompress regions, change module versions
and region contents, the way ``darshan-convert`` or a newer darshan-runtime would write
them. Little-endian logs only; written independently of the reader under test."""

from __future__ import annotations

import bz2
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

MODULES_341 = {"POSIX": 1, "MPI-IO": 2, "LUSTRE": 8, "STDIO": 9, "DXT_POSIX": 10}
MODULES_341.update({"DXT_MPIIO": 11, "HEATMAP": 15, "H5F": 3, "H5D": 4})
MODULES_341.update({"PNETCDF_FILE": 5, "PNETCDF_VAR": 6, "BG/Q": 7, "DFS": 16, "DAOS": 17})
MODULES_321 = {"POSIX": 1, "MPI-IO": 2, "LUSTRE": 7, "STDIO": 8, "DXT_POSIX": 9}
MODULES_321.update({"DXT_MPIIO": 10, "HEATMAP": 14, "H5F": 3, "H5D": 4})


@dataclass
class Log:
    """One log split into its header fields and inflated regions."""

    version: bytes
    comp: int
    partial: int
    nmods: int
    job: bytes
    names: bytes
    modules: dict[int, bytes]  # module id -> inflated region
    versions: list[int]
    deflated: dict[int, bytes] = field(default_factory=dict)  # module id -> zlib region
    deflated_names: bytes = b""  # the name records' zlib region, instead of ``names``

    def set_deflated(self, name: str, version: int, region: bytes) -> None:
        """Module ``name`` of ``version`` with ``region`` as its file bytes (zlib)."""
        i = self.module_id(name)
        self.modules.pop(i, None)
        self.deflated[i] = region
        self.versions[i] = version

    def module_id(self, name: str) -> int:
        return (MODULES_341 if self.nmods == 64 else MODULES_321)[name]


def _layout(version: bytes) -> tuple[int, int]:
    return (64, 32) if version >= b"3.41" else (16, 24)


def _inflate(raw: bytes, comp: int) -> bytes:
    if comp == 0:
        out, rest = b"", raw
        while rest:
            d = zlib.decompressobj()
            out += d.decompress(rest)
            rest = d.unused_data if d.eof else b""
        return out
    return bz2.decompress(raw) if comp == 1 else raw


def _deflate(data: bytes, comp: int) -> bytes:
    if comp == 0:
        return zlib.compress(data)
    return bz2.compress(data) if comp == 1 else data


def split(blob: bytes) -> Log:
    version = blob[:8]
    nmods, map_at = _layout(version)
    size = map_at + 16 + 20 * nmods
    comp = blob[16]
    partial = struct.unpack_from("<Q" if nmods == 64 else "<I", blob, 24 if nmods == 64 else 20)[0]
    name_off, name_len = struct.unpack_from("<QQ", blob, map_at)
    maps = struct.unpack_from(f"<{2 * nmods}Q", blob, map_at + 16)
    versions = list(struct.unpack_from(f"<{nmods}I", blob, map_at + 16 + 16 * nmods))
    offs = [maps[2 * i] for i in range(nmods) if maps[2 * i + 1]]
    job_end = name_off or min(offs, default=len(blob))
    modules = {
        i: _inflate(blob[maps[2 * i] : maps[2 * i] + maps[2 * i + 1]], comp)
        for i in range(nmods)
        if maps[2 * i + 1]
    }
    names = _inflate(blob[name_off : name_off + name_len], comp) if name_len else b""
    job = _inflate(blob[size:job_end], comp)
    return Log(version, comp, partial, nmods, job, names, modules, versions)


def join(log: Log, comp: int | None = None) -> bytes:
    """The log file of ``log``, its regions compressed with ``comp`` (0 zlib, 1 bzip2, 2 none)."""
    comp = log.comp if comp is None else comp
    nmods, map_at = _layout(log.version)
    size = map_at + 16 + 20 * nmods
    body = bytearray(_deflate(log.job, comp))
    name_map = (0, 0)
    if log.names or log.deflated_names:
        raw = log.deflated_names or _deflate(log.names, comp)
        name_map = (size + len(body), len(raw))
        body += raw
    maps = [0] * (2 * nmods)
    for i in sorted({*log.modules, *log.deflated}):
        raw = log.deflated[i] if i in log.deflated else _deflate(log.modules[i], comp)
        maps[2 * i], maps[2 * i + 1] = size + len(body), len(raw)
        body += raw
    head = bytearray(size)
    head[:8] = log.version
    struct.pack_into("<q", head, 8, 6567223)
    head[16] = comp
    if nmods == 64:
        struct.pack_into("<Q", head, 24, log.partial)
    else:
        struct.pack_into("<I", head, 20, log.partial)
    struct.pack_into("<QQ", head, map_at, *name_map)
    struct.pack_into(f"<{2 * nmods}Q", head, map_at + 16, *maps)
    struct.pack_into(f"<{nmods}I", head, map_at + 16 + 16 * nmods, *log.versions)
    return bytes(head) + bytes(body)


def map_dxt_segments(region: bytes, segment: Callable[[bytes, int], bytes]) -> bytes:
    """A DXT region with every 32-byte segment replaced by ``segment(bytes, index)``."""
    out, pos, k = bytearray(), 0, 0
    while pos + 104 <= len(region):
        w, r = struct.unpack_from("<qq", region, pos + 88)
        out += region[pos : pos + 104]
        pos += 104
        for _ in range(w + r):
            out += segment(region[pos : pos + 32], k)
            pos += 32
            k += 1
    return bytes(out)


def zlib_repeated(unit: bytes, size: int) -> bytes:
    """A zlib region inflating to ``unit`` over and over, ``size`` bytes in all (``unit``
    divides 1 MiB evenly or repeats in whole units): back-to-back streams of one MiB each,
    as Darshan writes a stream per rank's share. 1 MiB of zeros deflates to ~1 KB, so a
    region of 1 GiB is a file of 1 MB."""
    per = max(1, (1 << 20) // len(unit))
    stream = zlib.compress(unit * per, 9)
    return stream * max(1, size // (per * len(unit)))
