"""Every registered trace module honours the module/core contract."""

from __future__ import annotations

import builtins
import io
import mmap
import os

import pytest

from iosight.trace import TRACE_MODULES, ProcessInfo, TraceConfig, TraceCore
from iosight.trace._format import record_dtype


@pytest.mark.parametrize("name", TRACE_MODULES.names())
def test_module_contract(name, tmp_path):
    before = (os.open, os.read, os.write, os.close, os.stat, mmap.mmap, builtins.open, io.open)
    core = TraceCore(TraceConfig(log_dir=tmp_path / "logs", modules=(name,)), ProcessInfo(0, 1, 1))
    mod = core.modules[name]
    assert mod.darshan_name in ("POSIX", "STDIO")
    core.start()
    try:
        path = tmp_path / "c.bin"
        with open(path, "wb") as fh:
            fh.write(b"abc")
        fd = os.open(path, os.O_RDONLY)
        os.read(fd, 3)
        os.close(fd)
    finally:
        content = core.stop()
    after = (os.open, os.read, os.write, os.close, os.stat, mmap.mmap, builtins.open, io.open)
    assert before == after  # uninstall puts every patched function back
    recs = content.records[mod.darshan_name]
    assert recs.dtype == record_dtype(mod.darshan_name) and len(recs) == 1
    assert content.names[int(recs["id"][0])] == str(path)
    assert (recs["rank"] == 0).all()
