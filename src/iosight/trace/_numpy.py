"""The ``numpy`` module: numpy's file functions whose data bypasses Python-level I/O.

``numpy.fromfile`` and ``ndarray.tofile`` hand the file to C stdio (``fdopen`` of a
duplicated descriptor, then ``fread``/``fwrite``/``fscanf``/``fprintf``), so the data
they move never passes through the Python file object the ``stdio`` module watches.
Darshan's log format has no numpy record type (PyDarshan could not read one), and
Darshan itself would see these calls as C stdio, so this module records them in the
file's STDIO record (Snyder et al., 2016, §III-A: a module captures one layer and records
it in the format of that layer).

iosight's reading:

- ``numpy.fromfile`` is wrapped: a path is opened through ``open()`` (as numpy does,
  so the open and close are the STDIO module's), the real function reads from the
  underlying file object, and the call is one STDIO read of the bytes it consumed
  (``ndarray.nbytes`` in binary mode; the stream advance in text mode) at the offset
  where it began, timed around the call. The flush, seeks and descriptor duplication
  numpy makes on the way are not the program's and are not counted.
- ``ndarray.tofile`` cannot be wrapped (the ndarray type is immutable). numpy
  duplicates the file object's descriptor with ``os.dup``, writes through C stdio and
  then seeks the file object to where its stream ended; this module watches ``os.dup``
  on descriptors of traced files, and the STDIO module then records the seek's advance
  as one write starting where the descriptor was duplicated, timed from the ``os.dup``
  to the seek; numpy's flush before it is counted as a flush. A program that itself
  duplicates a traced, writable file's descriptor and then seeks the file forward
  would have that advance counted as a write.
- ``numpy.save``/``numpy.load``/``numpy.savetxt``/``numpy.loadtxt`` on traced files use
  the file object's ``read``/``write`` (numpy only takes its C path for plain
  ``io.FileIO``/``Buffered*`` objects), so the STDIO module counts them already and
  nothing is counted twice. ``numpy.memmap`` opens, seeks and maps through ``open()``
  and ``mmap``; its loads and stores are memory accesses no tracer sees (Darshan
  counts mappings, not mapped accesses).
"""

from __future__ import annotations

import builtins
import os
import time

from iosight.trace._core import TRACE_MODULES, TraceModule
from iosight.trace._events import READ, SEEK, pack_at
from iosight.trace._stdio import TracedFile


@TRACE_MODULES.register("numpy")
class NumpyModule(TraceModule):
    """numpy's C-stdio file functions, recorded in the STDIO module's records."""

    darshan_name = ""  # records into STDIO
    requires = ("stdio",)

    def __init__(self, core) -> None:
        super().__init__(core)
        self._saved: dict[str, object] = {}

    def install(self) -> None:
        import weakref

        import numpy as np

        stdio = self.core.modules["stdio"]
        files = stdio.files = weakref.WeakValueDictionary()
        real_fromfile, real_dup = np.fromfile, os.dup
        self._saved = {"fromfile": real_fromfile, "dup": real_dup}
        clock = time.perf_counter

        def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None):
            own = isinstance(file, (str, bytes, os.PathLike))
            f = builtins.open(os.fspath(file), "rb") if own else file
            try:
                if not isinstance(f, TracedFile):
                    return real_fromfile(f, dtype, count, sep, offset, like=like)
                raw, rec = f._f, f._rec
                pos0 = raw.tell()
                t1 = clock()
                arr = real_fromfile(raw, dtype, count, sep, offset, like=like)
                t2 = clock()
                end = raw.tell()
                n = arr.nbytes if sep == "" else end - pos0
                rec.ev += pack_at(SEEK, end - n, 0.0, 0.0, READ, n, t1, t2)
                return arr
            finally:
                if own:
                    f.close()

        def dup(fd, /):
            new = real_dup(fd)
            f = files.get(fd)
            if f is not None and not f._f.closed and f._f.writable():
                f._cio = (f._f.tell(), clock())  # C code may now write through the copy
            return new

        fromfile.__doc__ = real_fromfile.__doc__
        np.fromfile = fromfile
        os.dup = dup

    def uninstall(self) -> None:
        if self._saved:
            import numpy as np

            np.fromfile = self._saved["fromfile"]
            os.dup = self._saved["dup"]
            self._saved = {}
            self.core.modules["stdio"].files = None
