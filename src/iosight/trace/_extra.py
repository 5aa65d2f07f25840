"""DXT traces and HEATMAP bins: the variable-length Darshan records iosight can add.

DXT_POSIX (``darshan-dxt-log-format.h``) keeps every read and write segment of a
file: a 104-byte header (id, rank, shared flag, hostname, write and read counts)
followed by the write segments then the read segments (offset, length, start, end).
HEATMAP (``darshan-heatmap-log-format.h``) keeps, per module and process, the bytes
read and written in each time bin: a 48-byte header (id, rank, bin width, bin count,
two pointer slots) followed by the write bins then the read bins.

iosight's reading of the heatmap: bins start 0.1 s wide and double in width (adjacent
bins summed) whenever the run outgrows ``HEATMAP_MAX_BINS``, as Darshan's runtime
does; an operation's bytes are spread over the bins its [start, end] interval covers
in proportion to the overlap, and zero-length operations fall in the bin of their start.
"""

from __future__ import annotations

import socket
import struct

import numpy as np

from iosight.trace._format import darshan_hash

HEATMAP_START_WIDTH = 0.1
HEATMAP_MAX_BINS = 200
_DXT_HEAD = struct.Struct("<Qqq64sqq")
_HEAT_HEAD = struct.Struct("<Qqdq16x")
_SEG = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])


def spread(start, end, nbytes, width: float, n_bins: int) -> np.ndarray:
    """Bytes per bin when each operation's bytes are spread over [start, end]."""
    start, end, nbytes = (np.asarray(x, dtype=float) for x in (start, end, nbytes))
    b0 = np.minimum((start // width).astype(np.int64), n_bins - 1)
    b1 = np.minimum((end // width).astype(np.int64), n_bins - 1)
    n = b1 - b0 + 1
    idx = np.repeat(np.arange(len(start)), n)
    bins = np.repeat(b0, n) + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    ov = np.minimum(end[idx], (bins + 1) * width) - np.maximum(start[idx], bins * width)
    dur = (end - start)[idx]
    w = np.where(dur > 0, np.clip(ov, 0, None) / np.where(dur > 0, dur, 1.0), 1.0)
    return np.bincount(bins, weights=nbytes[idx] * w, minlength=n_bins)


class Heatmap:
    """Read and write bytes of one module over time, in doubling-width bins."""

    def __init__(self) -> None:
        self.width = HEATMAP_START_WIDTH
        self.read = np.zeros(0)
        self.write = np.zeros(0)

    def add(self, t1: np.ndarray, t2: np.ndarray, nbytes: np.ndarray, is_write: np.ndarray):
        if len(t1) == 0:
            return
        need = int(t2.max() * (1.0 / self.width)) + 1
        while need > HEATMAP_MAX_BINS:
            self._coarsen()
            need = int(t2.max() * (1.0 / self.width)) + 1
        if need > len(self.read):
            pad = need - len(self.read)
            self.read = np.concatenate((self.read, np.zeros(pad)))
            self.write = np.concatenate((self.write, np.zeros(pad)))
        n_bins = len(self.read)
        inv = 1.0 / self.width  # times are >= 0: truncation is floor, and cheaper than //
        b0 = (t1 * inv).astype(np.int64)
        # operations last microseconds and bins a tenth of a second or more: almost all
        # start and end in one bin and are counted there at once; the few that cross a
        # boundary are spread over the bins they cover
        cross = np.flatnonzero(b0 != (t2 * inv).astype(np.int64))
        weights = nbytes.astype(np.float64)
        weights[cross] = 0.0
        both = np.bincount(b0 + n_bins * is_write, weights=weights, minlength=2 * n_bins)
        if len(cross):
            w = is_write[cross]
            for sel, part in ((~w, both[:n_bins]), (w, both[n_bins:])):
                if sel.any():
                    k = cross[sel]
                    part += spread(t1[k], t2[k], nbytes[k], self.width, n_bins)
        self.read += both[:n_bins]
        self.write += both[n_bins:]

    def _coarsen(self) -> None:
        for name in ("read", "write"):
            a = getattr(self, name)
            a = np.concatenate((a, np.zeros(len(a) % 2)))
            setattr(self, name, a[0::2] + a[1::2])
        self.width *= 2

    def record_bytes(self, module: str, rank: int, run_time: float) -> tuple[int, str, bytes]:
        """(record id, record name, HEATMAP record) covering the whole run."""
        n = max(int(run_time // self.width) + 1, len(self.read))
        while n > HEATMAP_MAX_BINS:
            self._coarsen()
            n = max(int(run_time // self.width) + 1, len(self.read))
        w = np.zeros(n, dtype=np.int64)
        r = np.zeros(n, dtype=np.int64)
        w[: len(self.write)] = np.round(self.write).astype(np.int64)
        r[: len(self.read)] = np.round(self.read).astype(np.int64)
        name = f"heatmap:{module}"
        rid = darshan_hash(name)
        head = _HEAT_HEAD.pack(rid, rank, self.width, n)
        return rid, name, head + w.tobytes() + r.tobytes()


def dxt_record_bytes(rec_id: int, rank: int, segments: np.ndarray) -> bytes:
    """One DXT_POSIX record from queued operations (``kind`` 0 read, 1 write; ``off``,
    ``n``, ``t1``, ``t2`` fields, times since the job started)."""
    host = socket.gethostname().encode()[:63]
    kinds = segments["kind"]
    out = []
    for k in (1, 0):
        s = segments[kinds == k]
        arr = np.zeros(len(s), dtype=_SEG)
        arr["offset"], arr["length"], arr["start"], arr["end"] = s["off"], s["n"], s["t1"], s["t2"]
        out.append(arr.tobytes())
    n_w, n_r = int((kinds == 1).sum()), int((kinds == 0).sum())
    return _DXT_HEAD.pack(rec_id, rank, 0, host, n_w, n_r) + out[0] + out[1]


def parse_heatmaps(blob: bytes) -> list[tuple[int, int, float, np.ndarray, np.ndarray]]:
    """(id, rank, bin width, write bins, read bins) of each HEATMAP record in a region."""
    out, pos = [], 0
    while pos + _HEAT_HEAD.size <= len(blob):
        rid, rank, width, n = _HEAT_HEAD.unpack_from(blob, pos)
        pos += _HEAT_HEAD.size
        bins = np.frombuffer(blob, dtype="<i8", count=2 * n, offset=pos)
        out.append((rid, rank, width, bins[:n].astype(float), bins[n:].astype(float)))
        pos += 16 * n
    return out


def align_heatmaps(blobs: list[bytes], shifts: list[float], run_time: float) -> bytes:
    """One HEATMAP region for a merged job: every record re-binned to a common bin width
    and bin count on the job's clock (``shifts``: each blob's process start minus the job
    start, in seconds), as PyDarshan requires of the records of one module."""
    recs = [(r, s) for blob, s in zip(blobs, shifts, strict=True) for r in parse_heatmaps(blob)]
    if not recs:
        return b""
    width = max(r[2] for r, _ in recs)
    n = int(run_time // width) + 1
    placed = []
    for (rid, rank, w, wb, rb), shift in recs:
        factor = max(int(round(width / w)), 1)
        pad = (-len(wb)) % factor
        wb = np.concatenate((wb, np.zeros(pad))).reshape(-1, factor).sum(axis=1)
        rb = np.concatenate((rb, np.zeros(pad))).reshape(-1, factor).sum(axis=1)
        s = int(round(shift / width))
        n = max(n, s + len(wb))
        placed.append((rid, rank, s, wb, rb))
    while n > HEATMAP_MAX_BINS:
        width *= 2
        n = -(-n // 2)
        placed = [
            (rid, rank, s // 2, *(_pairs(np.concatenate((np.zeros(s % 2), b))) for b in (wb, rb)))
            for rid, rank, s, wb, rb in placed
        ]
    out = []
    for rid, rank, s, wb, rb in placed:
        w, r = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        w[s : s + len(wb)] = np.round(wb[: n - s]).astype(np.int64)
        r[s : s + len(rb)] = np.round(rb[: n - s]).astype(np.int64)
        out.append(_HEAT_HEAD.pack(rid, rank, width, n) + w.tobytes() + r.tobytes())
    return b"".join(out)


def _pairs(a: np.ndarray) -> np.ndarray:
    a = np.concatenate((a, np.zeros(len(a) % 2)))
    return a[0::2] + a[1::2]


def shift_dxt(blob: bytes, shift: float) -> bytes:
    """A DXT region with every segment's start and end moved by ``shift`` seconds."""
    buf, pos = bytearray(blob), 0
    while pos + _DXT_HEAD.size <= len(buf):
        *_, n_w, n_r = _DXT_HEAD.unpack_from(buf, pos)
        pos += _DXT_HEAD.size
        seg = np.frombuffer(buf, dtype=_SEG, count=n_w + n_r, offset=pos).copy()
        seg["start"] += shift
        seg["end"] += shift
        buf[pos : pos + seg.nbytes] = seg.tobytes()
        pos += seg.nbytes
    return bytes(buf)
