"""The ``stdio`` module: Python file objects from ``open()`` / ``io.open`` / ``Path.open``.

Darshan's STDIO module instruments the C buffered-stream calls (``fopen``, ``fread``,
``fwrite``, ``fseek``, ``fflush``, ``fclose``; ``darshan-stdio.c`` of Darshan 3.4).
Python's file objects are that layer for Python programs, so iosight counts each
``read``/``readinto``/``readline``/line of iteration as one read, each
``write``/``writelines`` as one write, ``seek`` as a seek, ``flush`` as a flush, with
Darshan's STDIO counters and timers.

iosight's reading: in text mode the byte counters count characters (the same for
ASCII text), because encoding each string again to count its bytes would cost more
than the call itself; the offset follows the bytes counted and is set by ``seek``.
"""

from __future__ import annotations

import builtins
import io
import time
import weakref

from iosight.trace._core import TRACE_MODULES, TraceModule
from iosight.trace._counters import first_start, no_overlap_time
from iosight.trace._events import FLUSH, READ, SEEK, WRITE, EventRecord, Ops, pack_at, pack_event
from iosight.trace._format import STDIO_COUNTERS, STDIO_FCOUNTERS
from iosight.trace._posix import clean_path

C = {n: i for i, n in enumerate(STDIO_COUNTERS)}
F = {n: i for i, n in enumerate(STDIO_FCOUNTERS)}
_OPENS, _FDOPENS, _READS, _WRITES = C["OPENS"], C["FDOPENS"], C["READS"], C["WRITES"]
_SEEKS, _FLUSHES, _BW, _BR = C["SEEKS"], C["FLUSHES"], C["BYTES_WRITTEN"], C["BYTES_READ"]
_MBR, _MBW = C["MAX_BYTE_READ"], C["MAX_BYTE_WRITTEN"]
_MT, _WT, _RT = F["META_TIME"], F["WRITE_TIME"], F["READ_TIME"]
_OS, _CS, _WS, _RS = (F[f"{k}_START_TIMESTAMP"] for k in ("OPEN", "CLOSE", "WRITE", "READ"))
_OE, _CE, _WE, _RE = (F[f"{k}_END_TIMESTAMP"] for k in ("OPEN", "CLOSE", "WRITE", "READ"))


class StdioRecord(EventRecord):
    """STDIO counters of one file, plus the last-end times (the fold keeps the offset)."""

    __slots__ = ("c", "f", "meta_end", "read_end", "write_end")

    def __init__(self, rec_id: int, slot: int) -> None:
        super().__init__(rec_id, slot)
        self.c = [0] * len(STDIO_COUNTERS)
        self.f = [0.0] * len(STDIO_FCOUNTERS)
        self.meta_end = self.read_end = self.write_end = 0.0

    def meta(self, t1: float, t2: float) -> None:
        self.f[_MT] += t2 - (t1 if t1 > self.meta_end else self.meta_end)
        if t2 > self.meta_end:
            self.meta_end = t2

    def apply(self, ops: Ops) -> None:
        """Fold queued reads, writes and flushes in (``STDIO_RECORD_READ``/``_WRITE``)."""
        kind, off, n, t1, t2 = ops
        c, f = self.c, self.f
        for sel, mb, by, st, en, tt, end_attr in (
            (kind == READ, _MBR, _BR, _RS, _RE, _RT, "read_end"),
            ((kind == WRITE) | (kind == FLUSH), _MBW, _BW, _WS, _WE, _WT, "write_end"),
        ):
            if not sel.any():
                continue
            c[mb] = max(c[mb], int((off[sel] + n[sel] - 1).max()))
            c[by] += int(n[sel].sum())
            f[st] = first_start(f[st], t1[sel])
            f[en] = float(t2[sel][-1])
            add, end = no_overlap_time(t1[sel], t2[sel], getattr(self, end_attr))
            f[tt] += add
            setattr(self, end_attr, end)
        c[_READS] += int((kind == READ).sum())
        c[_WRITES] += int((kind == WRITE).sum())
        c[_FLUSHES] += int((kind == FLUSH).sum())

    def to_row(self, row) -> None:
        row["id"] = self.rec_id
        row["counters"] = self.c
        row["fcounters"] = self.f


_clock = time.perf_counter
_pack, _pack_at = pack_event, pack_at


class _Forward:
    """An attribute of the wrapped file object, read, set and deleted there."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        return self if obj is None else getattr(obj._f, self.name)

    def __set__(self, obj, value) -> None:
        setattr(obj._f, self.name, value)

    def __delete__(self, obj) -> None:
        delattr(obj._f, self.name)


class TracedFile:
    """A file object that counts its calls into a :class:`StdioRecord`; every other
    attribute of Python's file classes (``name``, ``mode``, ``fileno``, ``buffer``...)
    is the wrapped object's, and attributes the program adds live on the proxy.

    The proxy defines no ``__getattr__``: a class with one makes every attribute lookup
    on its instances go through a slow hook, the method lookup of each ``f.write`` too.
    """

    # _cio: (offset, start time) while C code writes through a duplicate of the descriptor
    __slots__ = ("_f", "_rec", "_t0", "_cio", "__weakref__", "__dict__")

    def __init__(self, f, rec: StdioRecord, t0: float) -> None:
        self._f, self._rec, self._t0, self._cio = f, rec, t0, None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self):
        return self

    def __next__(self):
        t1 = _clock()
        line = next(self._f)
        t2 = _clock()
        self._rec.ev += _pack(READ, len(line), t1, t2)
        return line

    def __repr__(self) -> str:
        return repr(self._f)

    def read(self, size=-1, /):
        t1 = _clock()
        data = self._f.read(size)
        t2 = _clock()
        self._rec.ev += _pack(READ, len(data), t1, t2)
        return data

    def read1(self, size=-1, /):
        t1 = _clock()
        data = self._f.read1(size)
        t2 = _clock()
        self._rec.ev += _pack(READ, len(data), t1, t2)
        return data

    def readinto(self, buffer, /):
        t1 = _clock()
        n = self._f.readinto(buffer)
        t2 = _clock()
        k = n or 0  # None: a non-blocking stream had nothing; hand None back unchanged
        self._rec.ev += _pack(READ, k, t1, t2)
        return n

    def readinto1(self, buffer, /):
        t1 = _clock()
        n = self._f.readinto1(buffer)
        t2 = _clock()
        self._rec.ev += _pack(READ, n or 0, t1, t2)
        return n

    def readall(self):
        t1 = _clock()
        data = self._f.readall()
        t2 = _clock()
        self._rec.ev += _pack(READ, len(data or b""), t1, t2)
        return data

    def readline(self, size=-1, /):
        t1 = _clock()
        line = self._f.readline(size)
        t2 = _clock()
        self._rec.ev += _pack(READ, len(line), t1, t2)
        return line

    def readlines(self, hint=-1, /):
        t1 = _clock()
        lines = self._f.readlines(hint)
        t2 = _clock()
        k = sum(map(len, lines))
        self._rec.ev += _pack(READ, k, t1, t2)
        return lines

    def write(self, data, /):
        t1 = _clock()
        n = self._f.write(data)
        t2 = _clock()
        k = n if n is not None else len(data)
        self._rec.ev += _pack(WRITE, k, t1, t2)
        return n

    def writelines(self, lines, /) -> None:
        lines = list(lines)
        t1 = _clock()
        self._f.writelines(lines)
        t2 = _clock()
        k = sum(map(len, lines))
        self._rec.ev += _pack(WRITE, k, t1, t2)

    def seek(self, offset, whence=0, /):
        t1 = _clock()
        pos = self._f.seek(offset, whence)
        t2 = _clock()
        rec = self._rec
        if self._cio is not None:  # numpy's tofile wrote through C stdio, now done
            start, t_dup = self._cio
            self._cio = None
            if pos > start:  # its seek to where its stream ended is not the program's
                rec.ev += _pack_at(SEEK, start, 0.0, 0.0, WRITE, pos - start, t_dup, t1)
                return pos
        rec.ev += _pack(SEEK, pos, 0.0, 0.0)
        rec.c[_SEEKS] += 1
        rec.meta(t1 - self._t0, t2 - self._t0)
        return pos

    def flush(self) -> None:
        t1 = _clock()
        self._f.flush()
        t2 = _clock()
        # Darshan records fflush as a zero-byte write counted in STDIO_FLUSHES
        self._rec.ev += _pack(FLUSH, 0, t1, t2)

    def close(self) -> None:
        self._cio = None
        if self._f.closed:
            return
        t1 = _clock()
        self._f.close()
        t2 = _clock()
        rec, a, b = self._rec, t1 - self._t0, t2 - self._t0
        if rec.f[_CS] == 0 or rec.f[_CS] > a:
            rec.f[_CS] = a
        rec.f[_CE] = b
        rec.meta(a, b)


for _name in sorted(
    {n for c in (io.TextIOWrapper, io.BufferedRandom, io.FileIO) for n in dir(c)}
    - set(dir(TracedFile))
):
    if not _name.startswith("__"):
        setattr(TracedFile, _name, _Forward(_name))


class TracedText(TracedFile):
    __slots__ = ()


class TracedBuffered(TracedFile):
    __slots__ = ()


class TracedRaw(TracedFile):
    __slots__ = ()


io.IOBase.register(TracedFile)
io.TextIOBase.register(TracedText)
io.BufferedIOBase.register(TracedBuffered)
io.RawIOBase.register(TracedRaw)


def _proxy_class(f) -> type[TracedFile]:
    if isinstance(f, io.TextIOBase):
        return TracedText
    if isinstance(f, io.BufferedIOBase):
        return TracedBuffered
    return TracedRaw


@TRACE_MODULES.register("stdio")
class StdioModule(TraceModule):
    """Darshan's STDIO module for Python file objects."""

    darshan_name = "STDIO"

    def __init__(self, core) -> None:
        super().__init__(core)
        self._saved: dict[str, object] = {}
        # descriptor -> open traced file, kept only for modules that ask (numpy's tofile)
        self.files: weakref.WeakValueDictionary[int, TracedFile] | None = None

    def install(self) -> None:
        self._saved = {"builtins": builtins.open, "io": io.open}
        real_open = self._saved["io"]
        t0 = self.core.t0
        posix = self.core.modules.get("posix")

        def traced_open(file, mode="r", *args, **kwargs):
            t1 = _clock()
            f = real_open(file, mode, *args, **kwargs)
            t2 = _clock()
            if isinstance(file, int):
                prec = posix.fds.get(file) if posix is not None else None
                rec = self.by_id.get(prec.rec_id) if prec is not None else None
                if rec is None and prec is not None:
                    name = self.core.names[prec.rec_id]
                    rec = self.new_record(name, StdioRecord)
                counter = _FDOPENS
            else:
                path = clean_path(file)
                rec = self.new_record(path, StdioRecord) if path is not None else None
                counter = _OPENS
            if rec is None:
                return f
            rec.c[counter] += 1
            rec.ev += _pack(SEEK, f.tell() if "a" in mode else 0, 0.0, 0.0)
            a, b = t1 - t0, t2 - t0
            if rec.f[_OS] == 0 or rec.f[_OS] > a:
                rec.f[_OS] = a
            rec.f[_OE] = b
            rec.meta(a, b)
            proxy = _proxy_class(f)(f, rec, t0)
            if self.files is not None:
                self.files[f.fileno()] = proxy
            return proxy

        traced_open.__doc__ = real_open.__doc__
        builtins.open = traced_open
        io.open = traced_open

    def uninstall(self) -> None:
        if self._saved:
            builtins.open = self._saved["builtins"]
            io.open = self._saved["io"]
            self._saved = {}
