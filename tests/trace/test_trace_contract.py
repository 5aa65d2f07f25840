"""Every registered trace module honours the module/core contract."""

from __future__ import annotations

import builtins
import io
import mmap
import os
import sys

import numpy as np
import pytest

from iosight.trace import TRACE_MODULES, ProcessInfo, TraceConfig, TraceCore
from iosight.trace._format import record_dtype


def _patchable():
    out = (os.open, os.read, os.write, os.close, os.stat, os.dup, mmap.mmap, builtins.open)
    out += (io.open, np.fromfile, *sys.meta_path)
    if sys.modules.get("h5py") is not None:
        import h5py

        out += (h5py.File.__init__, h5py.File.close, h5py.Dataset.__getitem__)
        out += (h5py.Dataset.__setitem__, h5py.Group.__getitem__, h5py.Group.create_dataset)
    return out


def _workload(layer: str, path) -> None:
    """A little I/O that the module recording ``layer`` sees, on ``path``."""
    if layer == "H5F":
        import h5py

        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(3))
        return
    with open(path, "wb") as fh:
        fh.write(b"abc")
    fd = os.open(path, os.O_RDONLY)
    os.read(fd, 3)
    os.close(fd)


@pytest.mark.parametrize("name", TRACE_MODULES.names())
def test_module_contract(name, tmp_path):
    if name == "h5py":
        pytest.importorskip("h5py")
    before = _patchable()
    modules = (*TRACE_MODULES.get(name).requires, name)
    core = TraceCore(TraceConfig(log_dir=tmp_path / "logs", modules=modules), ProcessInfo(0, 1, 1))
    mod = core.modules[name]
    # a module owns one Darshan record type, or records into the modules it requires
    mod = mod if mod.darshan_name else core.modules[mod.requires[0]]
    assert mod.darshan_name in ("POSIX", "STDIO", "H5F")
    path = tmp_path / "c.bin"
    core.start()
    try:
        _workload(mod.darshan_name, path)
    finally:
        content = core.stop()
    assert before == _patchable()  # uninstall puts every patched function back
    recs = content.records[mod.darshan_name]
    assert recs.dtype == record_dtype(mod.darshan_name) and len(recs) == 1
    assert content.names[int(recs["id"][0])] == str(path)
    assert (recs["rank"] == 0).all()


def test_a_module_needs_the_modules_it_records_into(tmp_path):
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match="'numpy' trace module records into 'stdio'"):
        TraceCore(TraceConfig(log_dir=tmp_path, modules=("posix", "numpy")), ProcessInfo(0, 1, 1))
