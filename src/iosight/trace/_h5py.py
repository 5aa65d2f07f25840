"""The ``h5py`` module: HDF5 files and datasets as Darshan's H5F and H5D records.

Darshan's HDF5 module (``darshan-hdf5.c``) wraps ``H5Fcreate/H5Fopen/H5Fflush/
H5Fclose`` into one H5F record per file and ``H5Dcreate/H5Dopen/H5Oopen/H5Dread/
H5Dwrite/H5Dflush`` into one H5D record per dataset. h5py calls the HDF5 library it
bundles from compiled code, so this module wraps h5py's own Python API instead, and
only once the traced program imports h5py (an import hook patches it then):
``File`` (open, ``flush``, ``close``), ``Group.__getitem__`` and ``create_dataset``
(dataset opens), ``Dataset.__getitem__``/``__setitem__``/``read_direct``/
``write_direct`` (reads and writes) and ``Dataset.flush``.

iosight's readings:

- A dataset record is named ``<file path>:<dataset path>`` (``/runs/a.h5:/grp/temp``),
  which is Darshan's name for datasets opened at the file's root; its
  ``file_rec_id`` is the H5F record's id.
- One read or write per h5py call, of ``npoints x datatype size`` bytes, where the
  points are the file-space selection h5py builds for the call's arguments (a whole
  dataset, e.g. ``dset[...]`` or ``read_direct`` without a selection, is H5S_ALL and
  counts no selection type, as in Darshan); regular hyperslabs record their lengths
  (count x block) and strides per dimension in Darshan's order (the last of the five
  dimension slots holds the first dimension); field-name arguments do not change the
  selection. ``create_dataset(..., data=...)`` is an open and a write of the whole
  dataset over the same interval, as h5py does both in one call.
- Datasets are closed by h5py when their last Python reference goes or their file is
  closed, which h5py does without ``H5Dclose`` (so Darshan would not see it either):
  H5D close timestamps stay 0. Files given to h5py as Python file objects are not
  HDF5 files on a path and are left to the STDIO module; the HDF5 library's own POSIX
  calls happen in C and are not seen.
- Records of a file or dataset every rank of a job has are reduced to one rank -1
  record when the ranks' logs are merged, with ``darshan-hdf5.c``'s reduction rules
  (:mod:`iosight.trace._merge`).
"""

from __future__ import annotations

import importlib.abc
import os
import sys
import threading
import time

from iosight.trace._core import TRACE_MODULES, TraceModule
from iosight.trace._counters import BUCKET_EDGES, COMMON_VAL_MAX, update_common_vectors
from iosight.trace._format import (
    H5D_COUNTERS,
    H5D_FCOUNTERS,
    H5D_MAX_NDIMS,
    H5F_FCOUNTERS,
    darshan_hash,
)
from iosight.trace._posix import clean_path

F = {n: i for i, n in enumerate(H5F_FCOUNTERS)}
D = {n: i for i, n in enumerate(H5D_COUNTERS)}
DF = {n: i for i, n in enumerate(H5D_FCOUNTERS)}
_READ, _WRITE = 1, 2  # Darshan's io types, for RW_SWITCHES
_ALL, _POINTS, _REGULAR, _IRREGULAR = range(4)
_NVALS = 1 + 2 * H5D_MAX_NDIMS  # access size, lengths D1..D5, strides D1..D5


def _no_overlap(f: list[float], i: int, t1: float, t2: float, last_end: float) -> float:
    """``DARSHAN_TIMER_INC_NO_OVERLAP`` for one operation; returns the new last end."""
    f[i] += t2 - (t1 if t1 > last_end else last_end)
    return t2 if t2 > last_end else last_end


def _first_last(f: list[float], start: int, end: int, t1: float, t2: float) -> None:
    if f[start] == 0 or f[start] > t1:
        f[start] = t1
    f[end] = t2


class H5FRecord:
    """``darshan_hdf5_file``: opens, flushes, open/close timestamps and metadata time."""

    __slots__ = ("rec_id", "slot", "ev", "c", "f", "meta_end")

    def __init__(self, rec_id: int, slot: int) -> None:
        self.rec_id, self.slot, self.ev = rec_id, slot, b""  # nothing queued: h5py is slow
        self.c, self.f, self.meta_end = [0, 0, 0], [0.0] * len(H5F_FCOUNTERS), 0.0

    def meta(self, t1: float, t2: float, what: str = "") -> None:
        """Metadata time of an open, flush or close; ``what`` ``"OPEN"``/``"CLOSE"`` also
        sets that call's first start and last end timestamps."""
        if what:
            _first_last(self.f, F[f"{what}_START_TIMESTAMP"], F[f"{what}_END_TIMESTAMP"], t1, t2)
        self.meta_end = _no_overlap(self.f, F["META_TIME"], t1, t2, self.meta_end)

    def to_row(self, row) -> None:
        row["id"], row["counters"], row["fcounters"] = self.rec_id, self.c, self.f


class H5DRecord:
    """``darshan_hdf5_dataset``, updated operation by operation as ``H5D_RECORD_*`` do."""

    __slots__ = ("rec_id", "slot", "ev", "c", "f", "file_rec_id", "last_io")
    __slots__ += ("read_end", "write_end", "meta_end", "seen", "av", "ac")

    def __init__(self, rec_id: int, slot: int) -> None:
        self.rec_id, self.slot, self.ev = rec_id, slot, b""
        self.c, self.f = [0] * len(H5D_COUNTERS), [0.0] * len(H5D_FCOUNTERS)
        self.file_rec_id = self.last_io = 0
        self.read_end = self.write_end = self.meta_end = 0.0
        self.seen: dict[tuple[int, ...], int] = {}  # first 32 distinct access vectors
        self.av, self.ac = [(0,) * _NVALS] * 4, [0] * 4

    def opened(self, t1: float, t2: float) -> None:
        self.c[D["OPENS"]] += 1
        _first_last(self.f, DF["OPEN_START_TIMESTAMP"], DF["OPEN_END_TIMESTAMP"], t1, t2)
        self.meta_end = _no_overlap(self.f, DF["META_TIME"], t1, t2, self.meta_end)

    def describe(self, dset, file_rec_id: int) -> None:
        """The dataspace, datatype and chunking facts ``H5D_RECORD_OPEN`` records."""
        c = self.c
        shape = dset.shape or ()
        c[D["DATASPACE_NDIMS"]] = len(shape)
        c[D["DATASPACE_NPOINTS"]] = int(dset.size or 0)
        c[D["DATATYPE_SIZE"]] = dset.id.get_type().get_size()
        chunks = dset.chunks or ()
        for i, n in enumerate(reversed(chunks[-H5D_MAX_NDIMS:])):  # D1 is the last dim
            c[D["CHUNK_SIZE_D1"] + i] = n
        self.file_rec_id = file_rec_id

    def io(self, kind: int, sel, t1: float, t2: float) -> None:
        """One ``H5Dread`` (``kind`` 1) or ``H5Dwrite`` (2) of selection ``sel``:
        (npoints, selection type, lengths, strides)."""
        c, f = self.c, self.f
        npoints, sel_type, lengths, strides = sel
        d = "READ" if kind == _READ else "WRITE"
        c[D[f"{d}S"]] += 1
        if self.last_io and self.last_io != kind:
            c[D["RW_SWITCHES"]] += 1
        self.last_io = kind
        if sel_type == _POINTS:
            c[D["POINT_SELECTS"]] += 1
        elif sel_type == _REGULAR:
            c[D["REGULAR_HYPERSLAB_SELECTS"]] += 1
        elif sel_type == _IRREGULAR:
            c[D["IRREGULAR_HYPERSLAB_SELECTS"]] += 1
        size = npoints * c[D["DATATYPE_SIZE"]]
        c[D["BYTES_READ" if kind == _READ else "BYTES_WRITTEN"]] += size
        bucket = sum(size >= e for e in BUCKET_EDGES)
        c[D[f"SIZE_{d}_AGG_0_100"] + bucket] += 1
        vec = (size, *lengths, *strides)
        if vec in self.seen or len(self.seen) < COMMON_VAL_MAX:
            self.seen[vec] = self.seen.get(vec, 0) + 1
            update_common_vectors(self.av, self.ac, vec, self.seen[vec])
        _first_last(f, DF[f"{d}_START_TIMESTAMP"], DF[f"{d}_END_TIMESTAMP"], t1, t2)
        if f[DF[f"MAX_{d}_TIME"]] < t2 - t1:
            f[DF[f"MAX_{d}_TIME"]] = t2 - t1
            c[D[f"MAX_{d}_TIME_SIZE"]] = size
        if kind == _READ:
            self.read_end = _no_overlap(f, DF["READ_TIME"], t1, t2, self.read_end)
        else:
            self.write_end = _no_overlap(f, DF["WRITE_TIME"], t1, t2, self.write_end)

    def flushed(self, t1: float, t2: float) -> None:
        self.c[D["FLUSHES"]] += 1
        self.meta_end = _no_overlap(self.f, DF["META_TIME"], t1, t2, self.meta_end)

    def to_row(self, row) -> None:
        c = list(self.c)
        base = D["ACCESS1_ACCESS"]
        for k in range(4):
            c[base + k * _NVALS : base + (k + 1) * _NVALS] = self.av[k]
            c[D["ACCESS1_COUNT"] + k] = self.ac[k]
        row["id"], row["file_rec_id"] = self.rec_id, self.file_rec_id
        row["counters"], row["fcounters"] = c, self.f


def selection(dset, args) -> tuple[int, int, list[int], list[int]]:
    """(npoints, selection type, lengths D1..D5, strides D1..D5) of the file-space
    selection h5py makes for ``dset[args]`` (``args`` None: the whole dataset)."""
    zeros = [0] * H5D_MAX_NDIMS
    shape = dset.shape
    if args is None or not shape:  # whole dataset, scalar or empty dataspace
        return int(dset.size or 0), _ALL, zeros, zeros
    from h5py import h5s
    from h5py._hl import selections

    args = args if isinstance(args, tuple) else (args,)
    sid = selections.select(shape, tuple(a for a in args if not isinstance(a, str)), dset).id
    npoints, kind = int(sid.get_select_npoints()), sid.get_select_type()
    if kind == h5s.SEL_POINTS:
        return npoints, _POINTS, zeros, zeros
    if kind != h5s.SEL_HYPERSLABS:
        return npoints, _ALL, zeros, zeros
    if not sid.is_regular_hyperslab():
        return npoints, _IRREGULAR, zeros, zeros
    _, stride, count, block = sid.get_regular_hyperslab()
    pad = [0] * max(H5D_MAX_NDIMS - len(stride), 0)
    lengths = ([c * b for c, b in zip(count, block, strict=True)] + pad)[:H5D_MAX_NDIMS]
    strides = (list(stride) + pad)[:H5D_MAX_NDIMS]
    # darshan-hdf5.c: vals[1 + i] = count[MAX_NDIMS - i - 1] * block[MAX_NDIMS - i - 1]
    return npoints, _REGULAR, lengths[::-1], strides[::-1]


@TRACE_MODULES.register("h5py")
class H5FModule(TraceModule):
    """Darshan's H5F module for h5py files; installs the h5py hooks for H5D as well."""

    darshan_name = "H5F"

    def __init__(self, core) -> None:
        super().__init__(core)
        self.heatmap = None  # Darshan keeps heatmaps for POSIX, MPI-IO and STDIO only
        self._saved: list[tuple[type, str, object]] = []
        self._finder: _AfterImport | None = None
        self._busy = threading.local()  # h5py calls itself (fields, __array__): count once

    def install(self) -> None:
        if sys.modules.get("h5py") is not None:
            self._patch()
        else:
            self._finder = _AfterImport("h5py", self._patch)
            sys.meta_path.insert(0, self._finder)

    def uninstall(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        for cls, name, fn in reversed(self._saved):
            setattr(cls, name, fn)
        self._saved.clear()

    def _dataset_record(self, dset) -> H5DRecord | None:
        """The H5D record of ``dset`` (made, and its dataset described, the first time)."""
        rec = getattr(dset, "_iosight_rec", None)
        if rec is None:
            name, fpath = dset.name, clean_path(dset.file.filename)
            if name is None or fpath is None:  # an anonymous dataset
                return None
            rec = self.core.modules["h5d"].new_record(f"{fpath}:{name}", H5DRecord)
            if rec is None:
                return None
            if not rec.c[D["DATATYPE_SIZE"]]:
                rec.describe(dset, darshan_hash(fpath))
            dset._iosight_rec = rec
        return rec

    def _patch(self) -> None:
        """Wrap h5py's file and dataset entry points (the real ones kept to restore)."""
        from h5py._hl.dataset import Dataset
        from h5py._hl.files import File
        from h5py._hl.group import Group

        hooks = _Hooks(self)

        def patch(cls, name, make):
            real = getattr(cls, name)
            self._saved.append((cls, name, real))
            wrapper = make(real)
            wrapper.__doc__, wrapper.__name__ = real.__doc__, real.__name__
            setattr(cls, name, wrapper)

        def read_sel(a, k):
            return k.get("source_sel", a[1] if len(a) > 1 else None)

        def write_sel(a, k):
            return k.get("dest_sel", a[2] if len(a) > 2 else None)

        patch(File, "__init__", hooks.file_init)
        patch(File, "close", hooks.file_close)
        patch(File, "flush", hooks.file_flush)
        patch(Group, "__getitem__", lambda real: hooks.opener(real, False))
        patch(Group, "create_dataset", lambda real: hooks.opener(real, True))
        patch(Dataset, "__getitem__", lambda real: hooks.transfer(real, _READ, lambda a, k: a[0]))
        patch(Dataset, "__setitem__", lambda real: hooks.transfer(real, _WRITE, lambda a, k: a[0]))
        patch(Dataset, "read_direct", lambda real: hooks.transfer(real, _READ, read_sel))
        patch(Dataset, "write_direct", lambda real: hooks.transfer(real, _WRITE, write_sel))
        patch(Dataset, "flush", hooks.dataset_flush)


class _Hooks:
    """The wrappers of h5py's methods for ``module``: each takes the real method and
    returns one that calls it and records what it did (times from ``module``'s t0)."""

    def __init__(self, module: H5FModule) -> None:
        self.module, self.clock, self.busy = module, time.perf_counter, module._busy
        self.t0 = module.core.t0

    def file_init(self, real):
        hooks = self

        def __init__(self, name, *args, **kwargs):
            t1 = hooks.clock()
            real(self, name, *args, **kwargs)
            t2 = hooks.clock()
            if not isinstance(name, (str, bytes, os.PathLike)):
                return  # an existing FileID or a Python file object: not an open of a path
            rec = hooks.module.new_record(clean_path(self.filename), H5FRecord)
            if rec is not None:
                rec.c[0] += 1  # H5F_OPENS; H5F_USE_MPIIO stays 0 (no MPI-IO driver)
                rec.meta(t1 - hooks.t0, t2 - hooks.t0, "OPEN")
                self._iosight_rec = rec

        return __init__

    def file_close(self, real):
        hooks = self

        def close(self):
            rec = getattr(self, "_iosight_rec", None) if self.id.valid else None
            t1 = hooks.clock()
            real(self)
            t2 = hooks.clock()
            if rec is not None:
                rec.meta(t1 - hooks.t0, t2 - hooks.t0, "CLOSE")

        return close

    def file_flush(self, real):
        hooks = self

        def flush(self):
            t1 = hooks.clock()
            real(self)
            t2 = hooks.clock()
            rec = getattr(self, "_iosight_rec", None)
            if rec is not None:
                rec.c[1] += 1  # H5F_FLUSHES
                rec.meta(t1 - hooks.t0, t2 - hooks.t0)

        return flush

    def outermost(self, real, obj, args, kwargs):
        """(result, start, end) of ``real``; start is None inside another wrapped call
        (h5py calling itself: a field read, ``__array__``), which counts it already."""
        if getattr(self.busy, "on", False):
            return real(obj, *args, **kwargs), None, None
        self.busy.on = True
        try:
            t1 = self.clock()
            out = real(obj, *args, **kwargs)
            return out, t1 - self.t0, self.clock() - self.t0
        finally:
            self.busy.on = False

    def opener(self, real, writes_data: bool):
        """A Group method that opens or creates a dataset (``writes_data``: with data)."""
        from h5py._hl.dataset import Dataset

        hooks = self

        def wrapper(self, *args, **kwargs):
            obj, t1, t2 = hooks.outermost(real, self, args, kwargs)
            if t1 is None or not isinstance(obj, Dataset):
                return obj
            rec = hooks.module._dataset_record(obj)
            if rec is not None:
                rec.opened(t1, t2)
                data = kwargs.get("data", args[3] if len(args) > 3 else None)
                if writes_data and data is not None:
                    rec.io(_WRITE, selection(obj, None), t1, t2)
            return obj

        return wrapper

    def transfer(self, real, kind, where):
        """A Dataset read or write; ``where(args, kwargs)`` gives the file selection."""
        hooks = self

        def wrapper(self, *args, **kwargs):
            out, t1, t2 = hooks.outermost(real, self, args, kwargs)
            rec = hooks.module._dataset_record(self) if t1 is not None else None
            if rec is not None:
                try:
                    sel = selection(self, where(args, kwargs))
                except Exception:  # an argument form h5py resolves itself (region refs)
                    size = getattr(out, "size", 0) if kind == _READ else 0
                    sel = (int(size), _ALL, [0] * H5D_MAX_NDIMS, [0] * H5D_MAX_NDIMS)
                rec.io(kind, sel, t1, t2)
            return out

        return wrapper

    def dataset_flush(self, real):
        hooks = self

        def flush(self):
            t1 = hooks.clock()
            real(self)
            t2 = hooks.clock()
            rec = hooks.module._dataset_record(self)
            if rec is not None:
                rec.flushed(t1 - hooks.t0, t2 - hooks.t0)

        return flush


class H5DModule(TraceModule):
    """Darshan's H5D records; the ``h5py`` module's hooks fill them."""

    darshan_name = "H5D"

    def __init__(self, core) -> None:
        super().__init__(core)
        self.heatmap = None

    def install(self) -> None:
        """Nothing to patch: :class:`H5FModule` installs the h5py hooks."""

    def uninstall(self) -> None:
        """Nothing to put back."""


H5FModule.companions = (H5DModule,)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then()`` once the package ``name`` has been imported by the program."""

    def __init__(self, name: str, then) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        for finder in sys.meta_path:  # the finder that would have found it without us
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module, then = spec.loader.exec_module, self.then

        def exec_then_patch(module):
            exec_module(module)
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
            then()

        spec.loader.exec_module = exec_then_patch
        return spec
