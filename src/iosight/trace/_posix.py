"""The ``posix`` module: file-descriptor I/O through the ``os`` module and ``mmap``.

Wraps ``os.open``, ``read``, ``write``, ``pread``, ``pwrite``, ``readv``, ``writev``,
``lseek``, ``stat``/``lstat``/``fstat``, ``fsync``, ``fdatasync``, ``dup``/``dup2``,
``rename``/``replace``, ``close`` and ``mmap.mmap``, and keeps Darshan's POSIX counters
(``darshan-posix.c`` of Darshan 3.4) per file: one record per path per process.

iosight's reading: a Python program cannot see the address of the buffer the
interpreter reads into, and the interpreter's buffers are 8-byte aligned, so
``POSIX_MEM_ALIGNMENT`` is 8 and ``POSIX_MEM_NOT_ALIGNED`` stays 0;
``POSIX_FILE_ALIGNMENT`` is the file system's block size (``statvfs``), as Darshan
takes it from the mount. The file offset is kept per record, as Darshan keeps it.
"""

from __future__ import annotations

import mmap
import os
import stat as stat_mod
import time

import numpy as np

from iosight.trace._core import TRACE_MODULES, TraceModule
from iosight.trace._counters import (
    BUCKET_EDGES,
    first_start,
    no_overlap_time,
    top_four,
    track_values,
)
from iosight.trace._events import (
    READ,
    RESET,
    SEEK,
    SYNC,
    WRITE,
    EventRecord,
    Ops,
    pack_at,
    pack_event,
)
from iosight.trace._format import POSIX_COUNTERS, POSIX_FCOUNTERS, darshan_hash

# index of each counter in a record's ``c`` (integer) and ``f`` (float) arrays
C = {n: i for i, n in enumerate(POSIX_COUNTERS)}
F = {n: i for i, n in enumerate(POSIX_FCOUNTERS)}
_OPENS, _DUPS, _READS, _WRITES = (C[k] for k in "OPENS DUPS READS WRITES".split())
_SEEKS, _STATS, _MMAPS, _FSYNCS, _FDSYNCS = (
    C[k] for k in "SEEKS STATS MMAPS FSYNCS FDSYNCS".split()
)
_BYTES_READ, _BYTES_WRITTEN = C["BYTES_READ"], C["BYTES_WRITTEN"]
_MAX_BYTE_READ, _MAX_BYTE_WRITTEN = C["MAX_BYTE_READ"], C["MAX_BYTE_WRITTEN"]
_CONSEC_READS, _CONSEC_WRITES = C["CONSEC_READS"], C["CONSEC_WRITES"]
_SEQ_READS, _SEQ_WRITES = C["SEQ_READS"], C["SEQ_WRITES"]
_RW_SWITCHES = C["RW_SWITCHES"]
_FILE_NOT_ALIGNED, _FILE_ALIGNMENT = C["FILE_NOT_ALIGNED"], C["FILE_ALIGNMENT"]
_MAX_READ_TIME_SIZE, _MAX_WRITE_TIME_SIZE = C["MAX_READ_TIME_SIZE"], C["MAX_WRITE_TIME_SIZE"]
# first bucket of each access-size histogram (the others follow it)
_SIZE_READ_HIST, _SIZE_WRITE_HIST = C["SIZE_READ_0_100"], C["SIZE_WRITE_0_100"]
_OPEN_START, _READ_START, _WRITE_START, _CLOSE_START = (
    F[f"{k}_START_TIMESTAMP"] for k in ("OPEN", "READ", "WRITE", "CLOSE")
)
_OPEN_END, _READ_END, _WRITE_END, _CLOSE_END = (
    F[f"{k}_END_TIMESTAMP"] for k in ("OPEN", "READ", "WRITE", "CLOSE")
)
_READ_TIME, _WRITE_TIME, _META_TIME = F["READ_TIME"], F["WRITE_TIME"], F["META_TIME"]
_MAX_READ_TIME, _MAX_WRITE_TIME = F["MAX_READ_TIME"], F["MAX_WRITE_TIME"]
_BUCKET_EDGES = np.asarray(BUCKET_EDGES)
# per direction: last-byte attribute, then the counters an access of it moves
_ACCESS = {
    READ: ("lbr", _SEQ_READS, _CONSEC_READS, _MAX_BYTE_READ, _BYTES_READ, _READS, _SIZE_READ_HIST),
    WRITE: (
        "lbw",
        _SEQ_WRITES,
        _CONSEC_WRITES,
        _MAX_BYTE_WRITTEN,
        _BYTES_WRITTEN,
        _WRITES,
        _SIZE_WRITE_HIST,
    ),
}
# per direction: the timestamps, slowest-access time and size, total time, end attribute
_TIMING = {
    READ: (_READ_START, _READ_END, _MAX_READ_TIME, _MAX_READ_TIME_SIZE, _READ_TIME, "read_end"),
    WRITE: (
        _WRITE_START,
        _WRITE_END,
        _MAX_WRITE_TIME,
        _MAX_WRITE_TIME_SIZE,
        _WRITE_TIME,
        "write_end",
    ),
}
_RESET_EVENT = pack_event(RESET, 0, 0.0, 0.0)  # a close: last bytes back to 0
_OPEN_EVENTS = _RESET_EVENT + pack_event(SEEK, 0, 0.0, 0.0)  # an open: and offset 0
_MAX_CUTS = 8  # resets and seeks up to which a batch is folded stretch by stretch


class PosixRecord(EventRecord):
    """Counters of one file, with the volatile state Darshan keeps beside them.

    Reads, writes, syncs, seeks and offset resets are queued in ``ev`` by the wrappers
    (four packed numbers each: kind, bytes, start, end) and folded into the counters in
    batches by :meth:`apply`, with exactly Darshan's per-operation rules.
    """

    __slots__ = ("c", "f", "lbr", "lbw", "last_io")
    __slots__ += ("meta_end", "read_end", "write_end", "sizes", "strides")

    def __init__(self, rec_id: int, slot: int, block_size: int) -> None:
        super().__init__(rec_id, slot)
        self.c = [0] * len(POSIX_COUNTERS)
        self.f = [0.0] * len(POSIX_FCOUNTERS)
        self.c[C["MEM_ALIGNMENT"]] = 8
        self.c[_FILE_ALIGNMENT] = block_size
        self.lbr = self.lbw = self.last_io = 0
        self.meta_end = self.read_end = self.write_end = 0.0
        self.sizes: dict[int, int] = {}
        self.strides: dict[int, int] = {}

    def meta(self, t1: float, t2: float) -> None:
        f = self.f
        f[_META_TIME] += t2 - (t1 if t1 > self.meta_end else self.meta_end)
        if t2 > self.meta_end:
            self.meta_end = t2

    def opened(self, t1: float, t2: float) -> None:
        self.ev += _OPEN_EVENTS
        self.c[_OPENS] += 1
        f = self.f
        if f[_OPEN_START] == 0 or f[_OPEN_START] > t1:
            f[_OPEN_START] = t1
        f[_OPEN_END] = t2
        self.meta(t1, t2)

    def closed(self, t1: float, t2: float) -> None:
        self.ev += _RESET_EVENT
        f = self.f
        if f[_CLOSE_START] == 0 or f[_CLOSE_START] > t1:
            f[_CLOSE_START] = t1
        f[_CLOSE_END] = t2
        self.meta(t1, t2)

    def apply(self, ops: Ops) -> None:
        """Fold a batch of queued operations into the counters (``POSIX_RECORD_READ`` /
        ``POSIX_RECORD_WRITE`` / fsync of ``darshan-posix.c``).

        A few opens, closes and seeks (offset resets and SEEK rows) cut the batch into
        stretches folded one after the other, as each is usually one run of back-to-back
        accesses (the closed form); a batch with many is folded in one vectorised pass
        (which ignores SEEK rows)."""
        cuts = np.flatnonzero(ops.kind >= RESET)  # RESET, FLUSH (never queued here), SEEK
        if not 0 < len(cuts) <= _MAX_CUTS:
            self._apply_part(ops)
            return
        start = 0
        for r in cuts.tolist():
            if r > start:
                self._apply_part(ops.part(start, r))
            if ops.kind[r] == RESET:
                self.lbr = self.lbw = 0
            start = r + 1
        if start < len(ops.kind):
            self._apply_part(ops.part(start, len(ops.kind)))

    def _apply_part(self, ops: Ops) -> None:
        kind, off, n, t1, t2 = ops
        k0, m0 = int(kind[0]), int(n[0])
        if (
            k0 <= WRITE
            and (kind == k0).all()
            and (n == m0).all()
            and (off[1:] == off[:-1] + m0).all()
        ):
            self._apply_run(k0, off, m0, n, t1, t2)
            return
        c, f = self.c, self.f
        io = kind <= WRITE
        strides = np.zeros(len(kind), dtype=np.int64)
        # sequential/consecutive/stride against the last byte of the previous access of the
        # same direction; an open or close (RESET) sets both last bytes back to 0
        seg = np.cumsum(kind == RESET)
        for k, (lb_attr, seq_i, con_i, mb_i, by_i, ops_i, hist_i) in _ACCESS.items():
            sel = np.flatnonzero(kind == k)
            if len(sel) == 0:
                if (kind == RESET).any():
                    setattr(self, lb_attr, 0)
                continue
            o, m = off[sel], n[sel]
            last = o + m - 1
            prev = np.concatenate(([getattr(self, lb_attr)], last[:-1]))
            # a RESET between two accesses makes the later one see a last byte of 0
            s_sel = seg[sel]
            after_reset = np.concatenate(([s_sel[0] > 0], s_sel[1:] != s_sel[:-1]))
            prev = np.where(after_reset, 0, prev)
            seq = o > prev
            c[seq_i] += int(seq.sum())
            c[con_i] += int((o == prev + 1).sum())
            strides[sel] = np.where(seq & (o > 0) & (prev != 0), o - prev - 1, 0)
            c[mb_i] = max(c[mb_i], int(last.max()))
            c[by_i] += int(m.sum())
            c[ops_i] += len(sel)
            hist = np.bincount(np.searchsorted(_BUCKET_EDGES, m, side="right"), minlength=10)
            for b in np.flatnonzero(hist):
                c[hist_i + b] += int(hist[b])
            tail_reset = seg[-1] > s_sel[-1]
            setattr(self, lb_attr, 0 if tail_reset else int(last[-1]))
        if io.any():
            track_values(self.sizes, n[io])
            track_values(self.strides, strides[io])
            fa = c[_FILE_ALIGNMENT]
            if fa > 0:
                c[_FILE_NOT_ALIGNED] += int((off[io] % fa != 0).sum())
            k_io = kind[io] + 1  # 1 read, 2 write, as Darshan's last_io_type
            seq_io = np.concatenate(([self.last_io], k_io))
            c[_RW_SWITCHES] += int(((seq_io[1:] != seq_io[:-1]) & (seq_io[:-1] != 0)).sum())
            self.last_io = int(k_io[-1])
        for k, (st, en, mt, ms, tt, end_attr) in _TIMING.items():
            sel = kind == k
            if k == WRITE:
                timed = sel | (kind == SYNC)
            else:
                timed = sel
            if sel.any():
                a, b = t1[sel], t2[sel]
                f[st] = first_start(f[st], a)
                f[en] = float(b[-1])
                el = b - a
                i = int(np.argmax(el))
                if f[mt] < el[i]:
                    f[mt], c[ms] = float(el[i]), int(n[sel][i])
            if timed.any():
                add, end = no_overlap_time(t1[timed], t2[timed], getattr(self, end_attr))
                f[tt] += add
                setattr(self, end_attr, end)

    def _apply_run(self, k, off, m, n, t1, t2) -> None:
        """:meth:`apply` for the common batch, a run of same-size, back-to-back accesses
        in one direction, in closed form: after the first access every access is
        sequential and consecutive with stride 0."""
        c, f = self.c, self.f
        count = len(off)
        lb_attr, seq_i, con_i, mb_i, by_i, ops_i, hist_i = _ACCESS[k]
        last, o0 = getattr(self, lb_attr), int(off[0])
        seq0 = o0 > last
        c[seq_i] += count - 1 + seq0
        c[con_i] += count - 1 + (o0 == last + 1)
        end = int(off[-1]) + m - 1
        setattr(self, lb_attr, end)
        c[mb_i] = max(c[mb_i], end)
        c[by_i] += count * m
        c[ops_i] += count
        c[hist_i + int(np.searchsorted(_BUCKET_EDGES, m, side="right"))] += count
        track_values(self.sizes, n)
        stride0 = o0 - last - 1 if seq0 and o0 > 0 and last != 0 else 0
        if stride0:
            track_values(self.strides, np.array([stride0]))
        track_values(self.strides, np.zeros(count - (1 if stride0 else 0), dtype=np.int64))
        fa = c[_FILE_ALIGNMENT]
        if fa > 0:
            c[_FILE_NOT_ALIGNED] += (
                (count if o0 % fa else 0) if m % fa == 0 else int((off % fa != 0).sum())
            )
        if self.last_io and self.last_io != k + 1:
            c[_RW_SWITCHES] += 1
        self.last_io = k + 1
        st, en, mt, ms, tt, end_attr = _TIMING[k]
        f[st] = first_start(f[st], t1)
        f[en] = float(t2[-1])
        el = t2 - t1
        i = int(np.argmax(el))
        if f[mt] < el[i]:
            f[mt], c[ms] = float(el[i]), m
        add, last_end = no_overlap_time(t1, t2, getattr(self, end_attr))
        f[tt] += add
        setattr(self, end_attr, last_end)

    def to_row(self, row) -> None:
        c = list(self.c)
        a = C["ACCESS1_ACCESS"]
        c[a : a + 4], c[a + 4 : a + 8] = top_four(self.sizes)
        s = C["STRIDE1_STRIDE"]
        c[s : s + 4], c[s + 4 : s + 8] = top_four(self.strides)
        row["id"] = self.rec_id
        row["counters"] = c
        row["fcounters"] = self.f


def _block_size(path: str) -> int:
    try:
        return os.statvfs(os.path.dirname(path) or ".").f_bsize
    except OSError:
        return 0


def clean_path(path) -> str | None:
    """The absolute, normalised path Darshan would name a record by (None for non-paths)."""
    try:
        p = os.fspath(path)
    except TypeError:
        return None
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    return os.path.abspath(p)


@TRACE_MODULES.register("posix")
class PosixModule(TraceModule):
    """Darshan's POSIX module for Python's ``os``-level file-descriptor calls."""

    darshan_name = "POSIX"

    def __init__(self, core) -> None:
        super().__init__(core)
        self.fds: dict[int, PosixRecord] = {}
        self.queues: dict[int, bytearray] = {}  # fd -> its record's queue: one lookup a call
        self._saved: dict[str, object] = {}

    def record_for(self, path) -> PosixRecord | None:
        p = clean_path(path)
        if p is None:
            return None
        return self.new_record(p, lambda rid, slot: PosixRecord(rid, slot, _block_size(p)))

    def reset_after_fork(self) -> None:
        self.fds.clear()
        self.queues.clear()

    def install(self) -> None:
        """Patch ``os`` and ``mmap``, one family of calls per step.

        Each wrapper is a closure with the real call and the tracer's state bound to
        locals, which keeps the per-call cost near a microsecond.
        """
        real = self._save_real_calls()
        self._patch_open_close(real)
        self._patch_reads_writes(real)
        self._patch_seek_stat_sync(real)
        self._patch_dup_rename(real)
        self._patch_mmap(real)

    _PATCHED = (
        "open read write pread pwrite readv writev lseek stat lstat fstat fsync "
        "fdatasync dup dup2 rename replace close"
    ).split()

    def _save_real_calls(self) -> dict:
        """The functions about to be wrapped, kept for the wrappers and :meth:`uninstall`."""
        for name in self._PATCHED:
            self._saved[name] = getattr(os, name)
        self._saved["mmap"] = mmap.mmap
        return dict(self._saved)

    def _bind(self, fd: int, rec: PosixRecord | None) -> None:
        """Point ``fd`` at ``rec`` (or at nothing: the number may be a copy C code closed
        behind our back)."""
        if rec is None:
            self.fds.pop(fd, None)
            self.queues.pop(fd, None)
        else:
            self.fds[fd], self.queues[fd] = rec, rec.ev

    def _patch_open_close(self, real: dict) -> None:
        """``os.open`` starts a record's open (its mode when it creates), ``os.close`` ends it."""
        fds, queues, t0, clock = self.fds, self.queues, self.core.t0, time.perf_counter
        dxt, record_for, bind = self.core.config.dxt, self.record_for, self._bind
        real_open, real_close = real["open"], real["close"]

        def traced_open(path, flags, mode=0o777, *, dir_fd=None):
            t1 = clock()
            fd = real_open(path, flags, mode, dir_fd=dir_fd)
            t2 = clock()
            rec = record_for(path) if dir_fd is None else None
            bind(fd, rec)
            if rec is not None:
                if dxt and rec.dxt is None:
                    rec.dxt = []
                if flags & os.O_CREAT:
                    rec.c[C["MODE"]] = mode
                rec.opened(t1 - t0, t2 - t0)
            return fd

        def traced_close(fd, /):
            t1 = clock()
            res = real_close(fd)
            t2 = clock()
            rec = fds.pop(fd, None)
            queues.pop(fd, None)
            if rec is not None:
                rec.closed(t1 - t0, t2 - t0)
            return res

        os.open, os.close = traced_open, traced_close

    def _patch_reads_writes(self, real: dict) -> None:
        """Data calls only queue an event on the fd's record (folded later, in batches):
        ``read``/``write`` at the record's offset, ``pread``/``pwrite`` at theirs (and,
        as in Darshan, moving the record's offset), ``readv``/``writev``."""
        queue_get, clock, pack = self.queues.get, time.perf_counter, pack_event
        real_read, real_write = real["read"], real["write"]
        real_pread, real_pwrite = real["pread"], real["pwrite"]

        def traced_read(fd, n, /):
            t1 = clock()
            data = real_read(fd, n)
            t2 = clock()
            q = queue_get(fd)
            if q is not None:
                q += pack(0, len(data), t1, t2)  # 0: READ, at the record's offset
            return data

        def traced_write(fd, data, /):
            t1 = clock()
            n = real_write(fd, data)
            t2 = clock()
            q = queue_get(fd)
            if q is not None:
                q += pack(1, n, t1, t2)  # 1: WRITE
            return n

        def traced_pread(fd, n, offset, /):
            t1 = clock()
            data = real_pread(fd, n, offset)
            t2 = clock()
            q = queue_get(fd)
            if q is not None:  # Darshan's pread moves the record's offset too
                q += pack_at(SEEK, offset, 0.0, 0.0, 0, len(data), t1, t2)
            return data

        def traced_pwrite(fd, data, offset, /):
            t1 = clock()
            n = real_pwrite(fd, data, offset)
            t2 = clock()
            q = queue_get(fd)
            if q is not None:
                q += pack_at(SEEK, offset, 0.0, 0.0, 1, n, t1, t2)
            return n

        def traced_vector(real_call, kind):
            def wrapper(fd, buffers, /):
                t1 = clock()
                n = real_call(fd, buffers)
                t2 = clock()
                q = queue_get(fd)
                if q is not None:
                    q += pack(kind, n, t1, t2)
                return n

            return wrapper

        os.read, os.write = traced_read, traced_write
        os.pread, os.pwrite = traced_pread, traced_pwrite
        os.readv = traced_vector(real["readv"], READ)
        os.writev = traced_vector(real["writev"], WRITE)

    def _patch_seek_stat_sync(self, real: dict) -> None:
        """``lseek`` (a seek event and POSIX_SEEKS), ``stat``/``lstat``/``fstat`` of regular
        files (POSIX_STATS), ``fsync``/``fdatasync`` (their counters and a sync event)."""
        fds, t0, clock, pack = self.fds, self.core.t0, time.perf_counter, pack_event
        record_for, fds_get = self.record_for, self.fds.get
        real_lseek, real_fstat = real["lseek"], real["fstat"]

        def traced_lseek(fd, pos, how, /):
            t1 = clock()
            res = real_lseek(fd, pos, how)
            t2 = clock()
            rec = fds_get(fd)
            if rec is not None:
                rec.ev += pack(SEEK, res, 0.0, 0.0)
                rec.c[_SEEKS] += 1
                rec.meta(t1 - t0, t2 - t0)
            return res

        def traced_stat(real_call):
            def wrapper(path, *args, **kwargs):
                t1 = clock()
                st = real_call(path, *args, **kwargs)
                t2 = clock()
                if stat_mod.S_ISREG(st.st_mode):
                    if isinstance(path, int):
                        rec = fds.get(path)
                    elif kwargs.get("dir_fd") is None:
                        rec = record_for(path)
                    else:
                        rec = None
                    if rec is not None:
                        rec.c[_STATS] += 1
                        rec.meta(t1 - t0, t2 - t0)
                return st

            return wrapper

        def traced_fstat(fd, /):
            t1 = clock()
            st = real_fstat(fd)
            t2 = clock()
            rec = fds_get(fd)
            if rec is not None and stat_mod.S_ISREG(st.st_mode):
                rec.c[_STATS] += 1
                rec.meta(t1 - t0, t2 - t0)
            return st

        def traced_sync(real_call, counter):
            def wrapper(fd, /):
                t1 = clock()
                res = real_call(fd)
                t2 = clock()
                rec = fds.get(fd if isinstance(fd, int) else fd.fileno())
                if rec is not None:
                    rec.c[counter] += 1
                    rec.ev += pack(SYNC, 0, t1, t2)
                return res

            return wrapper

        os.lseek, os.fstat = traced_lseek, traced_fstat
        os.stat, os.lstat = traced_stat(real["stat"]), traced_stat(real["lstat"])
        os.fsync = traced_sync(real["fsync"], _FSYNCS)
        os.fdatasync = traced_sync(real["fdatasync"], _FDSYNCS)

    def _patch_dup_rename(self, real: dict) -> None:
        """``dup``/``dup2`` point the new fd at the same record (POSIX_DUPS, and an open);
        ``rename``/``replace`` count RENAME_SOURCES/TARGETS and RENAMED_FROM."""
        t0, clock, record_for, bind = self.core.t0, time.perf_counter, self.record_for, self._bind
        fds_get = self.fds.get
        real_dup, real_dup2 = real["dup"], real["dup2"]

        def duped(fd, new, t1, t2):
            rec = fds_get(fd)
            bind(new, rec)
            if rec is not None:
                rec.c[_DUPS] += 1
                rec.c[_OPENS] += 1
                rec.meta(t1 - t0, t2 - t0)
            return new

        def traced_dup(fd, /):
            t1 = clock()
            new = real_dup(fd)
            return duped(fd, new, t1, clock())

        def traced_dup2(fd, fd2, inheritable=True):
            t1 = clock()
            new = real_dup2(fd, fd2, inheritable)
            return duped(fd, new, t1, clock())

        def traced_rename(real_call):
            def wrapper(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
                t1 = clock()
                res = real_call(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
                t2 = clock()
                src_path, dst_path = clean_path(src), clean_path(dst)
                # by_id is looked up per call: a fork's child starts a new one
                old = self.by_id.get(darshan_hash(src_path)) if src_path else None
                if old is not None and src_dir_fd is None and dst_dir_fd is None:
                    old.c[C["RENAME_SOURCES"]] += 1
                    old.meta(t1 - t0, t2 - t0)
                    new = record_for(dst_path)
                    if new is not None:
                        new.c[C["RENAME_TARGETS"]] += 1
                        if new.c[C["RENAMED_FROM"]] == 0:
                            new.c[C["RENAMED_FROM"]] = _signed(old.rec_id)
                return res

            return wrapper

        os.dup, os.dup2 = traced_dup, traced_dup2
        os.rename, os.replace = traced_rename(real["rename"]), traced_rename(real["replace"])

    def _patch_mmap(self, real: dict) -> None:
        """``mmap.mmap`` of a traced fd counts POSIX_MMAPS."""
        fds = self.fds

        class TracedMmap(real["mmap"]):
            def __new__(cls, fileno, *args, **kwargs):
                obj = super().__new__(cls, fileno, *args, **kwargs)
                rec = fds.get(fileno)
                if rec is not None:
                    rec.c[_MMAPS] += 1
                return obj

        mmap.mmap = TracedMmap

    def uninstall(self) -> None:
        for name, fn in self._saved.items():
            setattr(mmap if name == "mmap" else os, name, fn)
        self._saved.clear()


def _signed(u: int) -> int:
    """A 64-bit record id stored in an int64 counter, as C stores it."""
    return u - (1 << 64) if u >= 1 << 63 else u
