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
from bisect import bisect_right

from iosight.trace._core import TRACE_MODULES, TraceModule
from iosight.trace._counters import BUCKET_EDGES, top_four
from iosight.trace._format import POSIX_COUNTERS, POSIX_FCOUNTERS

C = {n: i for i, n in enumerate(POSIX_COUNTERS)}
F = {n: i for i, n in enumerate(POSIX_FCOUNTERS)}
_OPENS, _DUPS, _READS, _WRITES = (C[k] for k in "OPENS DUPS READS WRITES".split())
_SEEKS, _STATS, _MMAPS, _FSYNCS, _FDSYNCS = (
    C[k] for k in "SEEKS STATS MMAPS FSYNCS FDSYNCS".split()
)
_BR, _BW, _MBR, _MBW = (
    C["BYTES_READ"],
    C["BYTES_WRITTEN"],
    C["MAX_BYTE_READ"],
    C["MAX_BYTE_WRITTEN"],
)
_CR, _CW, _SR, _SW = C["CONSEC_READS"], C["CONSEC_WRITES"], C["SEQ_READS"], C["SEQ_WRITES"]
_RWS, _FNA, _FA = C["RW_SWITCHES"], C["FILE_NOT_ALIGNED"], C["FILE_ALIGNMENT"]
_MRTS, _MWTS = C["MAX_READ_TIME_SIZE"], C["MAX_WRITE_TIME_SIZE"]
_HR, _HW = C["SIZE_READ_0_100"], C["SIZE_WRITE_0_100"]
_OS, _RS, _WS, _CS = (F[f"{k}_START_TIMESTAMP"] for k in ("OPEN", "READ", "WRITE", "CLOSE"))
_OE, _RE, _WE, _CE = (F[f"{k}_END_TIMESTAMP"] for k in ("OPEN", "READ", "WRITE", "CLOSE"))
_RT, _WT, _MT = F["READ_TIME"], F["WRITE_TIME"], F["META_TIME"]
_MRT, _MWT = F["MAX_READ_TIME"], F["MAX_WRITE_TIME"]
_READ, _WRITE = 1, 2
_EDGES = BUCKET_EDGES


class PosixRecord:
    """Counters of one file, with the volatile state Darshan keeps beside them."""

    __slots__ = ("rec_id", "slot", "c", "f", "offset", "lbr", "lbw", "last_io")
    __slots__ += ("meta_end", "read_end", "write_end", "sizes", "strides", "dxt")

    def __init__(self, rec_id: int, slot: int, block_size: int) -> None:
        self.rec_id, self.slot = rec_id, slot
        self.c = [0] * len(POSIX_COUNTERS)
        self.f = [0.0] * len(POSIX_FCOUNTERS)
        self.c[C["MEM_ALIGNMENT"]] = 8
        self.c[_FA] = block_size
        self.offset = self.lbr = self.lbw = self.last_io = 0
        self.meta_end = self.read_end = self.write_end = 0.0
        self.sizes: dict[int, int] = {}
        self.strides: dict[int, int] = {}
        self.dxt: list | None = None

    def meta(self, t1: float, t2: float) -> None:
        f = self.f
        f[_MT] += t2 - (t1 if t1 > self.meta_end else self.meta_end)
        if t2 > self.meta_end:
            self.meta_end = t2

    def opened(self, t1: float, t2: float) -> None:
        self.offset = self.lbr = self.lbw = 0
        self.c[_OPENS] += 1
        f = self.f
        if f[_OS] == 0 or f[_OS] > t1:
            f[_OS] = t1
        f[_OE] = t2
        self.meta(t1, t2)

    def closed(self, t1: float, t2: float) -> None:
        self.lbr = self.lbw = 0
        f = self.f
        if f[_CS] == 0 or f[_CS] > t1:
            f[_CS] = t1
        f[_CE] = t2
        self.meta(t1, t2)

    def read(self, n: int, off: int, t1: float, t2: float) -> None:
        c, f, last = self.c, self.f, self.lbr
        if off > last:
            c[_SR] += 1
            stride = off - last - 1 if off > 0 and last != 0 else 0
        else:
            stride = 0
        if off == last + 1:
            c[_CR] += 1
        end = off + n - 1
        self.lbr = end
        self.offset = off + n
        if c[_MBR] < end:
            c[_MBR] = end
        c[_BR] += n
        c[_READS] += 1
        c[_HR + bisect_right(_EDGES, n)] += 1
        sizes = self.sizes
        if n in sizes:
            sizes[n] += 1
        elif len(sizes) < 32:
            sizes[n] = 1
        strides = self.strides
        if stride in strides:
            strides[stride] += 1
        elif len(strides) < 32:
            strides[stride] = 1
        if c[_FA] > 0 and off % c[_FA]:
            c[_FNA] += 1
        if self.last_io == _WRITE:
            c[_RWS] += 1
        self.last_io = _READ
        if f[_RS] == 0 or f[_RS] > t1:
            f[_RS] = t1
        f[_RE] = t2
        el = t2 - t1
        if f[_MRT] < el:
            f[_MRT] = el
            c[_MRTS] = n
        f[_RT] += t2 - (t1 if t1 > self.read_end else self.read_end)
        if t2 > self.read_end:
            self.read_end = t2
        if self.dxt is not None:
            self.dxt.append((0, off, n, t1, t2))

    def write(self, n: int, off: int, t1: float, t2: float) -> None:
        c, f, last = self.c, self.f, self.lbw
        if off > last:
            c[_SW] += 1
            stride = off - last - 1 if off > 0 and last != 0 else 0
        else:
            stride = 0
        if off == last + 1:
            c[_CW] += 1
        end = off + n - 1
        self.lbw = end
        self.offset = off + n
        if c[_MBW] < end:
            c[_MBW] = end
        c[_BW] += n
        c[_WRITES] += 1
        c[_HW + bisect_right(_EDGES, n)] += 1
        sizes = self.sizes
        if n in sizes:
            sizes[n] += 1
        elif len(sizes) < 32:
            sizes[n] = 1
        strides = self.strides
        if stride in strides:
            strides[stride] += 1
        elif len(strides) < 32:
            strides[stride] = 1
        if c[_FA] > 0 and off % c[_FA]:
            c[_FNA] += 1
        if self.last_io == _READ:
            c[_RWS] += 1
        self.last_io = _WRITE
        if f[_WS] == 0 or f[_WS] > t1:
            f[_WS] = t1
        f[_WE] = t2
        el = t2 - t1
        if f[_MWT] < el:
            f[_MWT] = el
            c[_MWTS] = n
        f[_WT] += t2 - (t1 if t1 > self.write_end else self.write_end)
        if t2 > self.write_end:
            self.write_end = t2
        if self.dxt is not None:
            self.dxt.append((1, off, n, t1, t2))

    def synced(self, t1: float, t2: float) -> None:
        self.f[_WT] += t2 - (t1 if t1 > self.write_end else self.write_end)
        if t2 > self.write_end:
            self.write_end = t2

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
        self._saved: dict[str, object] = {}

    def record_for(self, path) -> PosixRecord | None:
        p = clean_path(path)
        if p is None:
            return None
        return self.new_record(p, lambda rid, slot: PosixRecord(rid, slot, _block_size(p)))

    def reset_after_fork(self) -> None:
        self.fds.clear()

    def install(self) -> None:  # noqa: C901 - one closure per wrapped call keeps them fast
        core, fds, t0 = self.core, self.fds, self.core.t0
        clock = time.perf_counter
        dxt = core.config.dxt
        saved = self._saved
        for name in (
            "open read write pread pwrite readv writev lseek stat lstat fstat fsync "
            "fdatasync dup dup2 rename replace close"
        ).split():
            saved[name] = getattr(os, name)
        saved["mmap"] = mmap.mmap
        r = dict(saved)
        record_for = self.record_for

        def _open(path, flags, mode=0o777, *, dir_fd=None):
            t1 = clock()
            fd = r["open"](path, flags, mode, dir_fd=dir_fd)
            t2 = clock()
            rec = record_for(path) if dir_fd is None else None
            if rec is not None:
                if dxt and rec.dxt is None:
                    rec.dxt = []
                if flags & os.O_CREAT:
                    rec.c[C["MODE"]] = mode
                rec.opened(t1 - t0, t2 - t0)
                fds[fd] = rec
            return fd

        def _read(fd, n, /):
            t1 = clock()
            data = r["read"](fd, n)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.read(len(data), rec.offset, t1 - t0, t2 - t0)
            return data

        def _write(fd, data, /):
            t1 = clock()
            n = r["write"](fd, data)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.write(n, rec.offset, t1 - t0, t2 - t0)
            return n

        def _pread(fd, n, offset, /):
            t1 = clock()
            data = r["pread"](fd, n, offset)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.read(len(data), offset, t1 - t0, t2 - t0)
            return data

        def _pwrite(fd, data, offset, /):
            t1 = clock()
            n = r["pwrite"](fd, data, offset)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.write(n, offset, t1 - t0, t2 - t0)
            return n

        def _readv(fd, buffers, /):
            t1 = clock()
            n = r["readv"](fd, buffers)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.read(n, rec.offset, t1 - t0, t2 - t0)
            return n

        def _writev(fd, buffers, /):
            t1 = clock()
            n = r["writev"](fd, buffers)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.write(n, rec.offset, t1 - t0, t2 - t0)
            return n

        def _lseek(fd, pos, how, /):
            t1 = clock()
            res = r["lseek"](fd, pos, how)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.offset = res
                rec.c[_SEEKS] += 1
                rec.meta(t1 - t0, t2 - t0)
            return res

        def _stat_path(real):
            def wrapper(path, *args, **kwargs):
                t1 = clock()
                st = real(path, *args, **kwargs)
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

        def _fstat(fd, /):
            t1 = clock()
            st = r["fstat"](fd)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None and stat_mod.S_ISREG(st.st_mode):
                rec.c[_STATS] += 1
                rec.meta(t1 - t0, t2 - t0)
            return st

        def _sync(real, counter):
            def wrapper(fd, /):
                t1 = clock()
                res = real(fd)
                t2 = clock()
                rec = fds.get(fd if isinstance(fd, int) else fd.fileno())
                if rec is not None:
                    rec.c[counter] += 1
                    rec.synced(t1 - t0, t2 - t0)
                return res

            return wrapper

        def _dup(fd, /):
            t1 = clock()
            new = r["dup"](fd)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.c[_DUPS] += 1
                rec.c[_OPENS] += 1
                rec.meta(t1 - t0, t2 - t0)
                fds[new] = rec
            return new

        def _dup2(fd, fd2, inheritable=True):
            t1 = clock()
            new = r["dup2"](fd, fd2, inheritable)
            t2 = clock()
            rec = fds.get(fd)
            if rec is not None:
                rec.c[_DUPS] += 1
                rec.c[_OPENS] += 1
                rec.meta(t1 - t0, t2 - t0)
                fds[new] = rec
            return new

        def _rename(real):
            def wrapper(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
                t1 = clock()
                res = real(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
                t2 = clock()
                ps, pd = clean_path(src), clean_path(dst)
                old = self.by_id.get(_rid(ps)) if ps else None
                if old is not None and src_dir_fd is None and dst_dir_fd is None:
                    old.c[C["RENAME_SOURCES"]] += 1
                    old.meta(t1 - t0, t2 - t0)
                    new = record_for(pd)
                    if new is not None:
                        new.c[C["RENAME_TARGETS"]] += 1
                        if new.c[C["RENAMED_FROM"]] == 0:
                            new.c[C["RENAMED_FROM"]] = _signed(old.rec_id)
                return res

            return wrapper

        def _close(fd, /):
            t1 = clock()
            res = r["close"](fd)
            t2 = clock()
            rec = fds.pop(fd, None)
            if rec is not None:
                rec.closed(t1 - t0, t2 - t0)
            return res

        class _TracedMmap(r["mmap"]):
            def __new__(cls, fileno, *args, **kwargs):
                obj = super().__new__(cls, fileno, *args, **kwargs)
                rec = fds.get(fileno)
                if rec is not None:
                    rec.c[_MMAPS] += 1
                return obj

        os.open, os.read, os.write = _open, _read, _write
        os.pread, os.pwrite, os.readv, os.writev = _pread, _pwrite, _readv, _writev
        os.lseek, os.fstat, os.close = _lseek, _fstat, _close
        os.stat, os.lstat = _stat_path(r["stat"]), _stat_path(r["lstat"])
        os.fsync, os.fdatasync = _sync(r["fsync"], _FSYNCS), _sync(r["fdatasync"], _FDSYNCS)
        os.dup, os.dup2 = _dup, _dup2
        os.rename, os.replace = _rename(r["rename"]), _rename(r["replace"])
        mmap.mmap = _TracedMmap

    def uninstall(self) -> None:
        for name, fn in self._saved.items():
            setattr(mmap if name == "mmap" else os, name, fn)
        self._saved.clear()


def _rid(path: str) -> int:
    from iosight.trace._format import darshan_hash

    return darshan_hash(path)


def _signed(u: int) -> int:
    """A 64-bit record id stored in an int64 counter, as C stores it."""
    return u - (1 << 64) if u >= 1 << 63 else u
