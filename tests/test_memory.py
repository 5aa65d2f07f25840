"""Arrow's pool while long-running loops run (``iosight._memory``): the system allocator,
and the caller's pool back after the last loop ends, whatever order loops end in."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

import iosight._memory as memory
from iosight._memory import release_free_memory, system_arrow_pool, system_pool_at_start
from tests_support import child_env


def test_overlapping_loops_give_back_the_pool_the_first_found(monkeypatch):
    # two follows in two threads: the first ends while the second still runs
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    before = pa.default_memory_pool().backend_name
    first, second = system_arrow_pool(), system_arrow_pool()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert pa.default_memory_pool().backend_name == "system"  # the second still runs
    second.__exit__(None, None, None)
    assert pa.default_memory_pool().backend_name == before


WRITE = """
import io, os
from iosight._memory import system_pool_at_start
chose = system_pool_at_start()
import pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({"a": list(range(200_000))}), io.BytesIO())
print(chose, os.environ["ARROW_DEFAULT_MEMORY_POOL"], pa.mimalloc_memory_pool().max_memory())
"""


def test_the_pool_chosen_at_start_reaches_the_parquet_writer(monkeypatch):
    # the Parquet writer takes Arrow's C++ default pool, which set_memory_pool leaves alone
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    out = subprocess.run([sys.executable, "-c", WRITE], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert out == ["True", "system", "0"]  # mimalloc never allocated
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    out = subprocess.run([sys.executable, "-c", WRITE], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    assert out == ["False", "jemalloc", "0"]  # the person's choice stays


def test_too_late_once_pyarrow_is_imported(monkeypatch):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert not system_pool_at_start()  # pyarrow is imported here: Arrow read its pool
    assert "ARROW_DEFAULT_MEMORY_POOL" not in os.environ


FREE = """
import ctypes
from iosight._memory import release_free_memory
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
blocks = [libc.malloc(64 << 10) for _ in range(500)]  # under the mmap threshold: the heap
guard = libc.malloc(64)  # in use above them: free() alone cannot trim the heap's top
for block in blocks:
    libc.free(block)
print(release_free_memory())
"""


def test_free_heap_pages_go_back_to_the_system(monkeypatch):
    # 32 MB freed below a block in use stay in glibc's heap until malloc_trim
    if sys.platform != "linux" or os.confstr("CS_GNU_LIBC_VERSION") is None:
        pytest.skip("malloc_trim is glibc's")
    out = subprocess.run([sys.executable, "-c", FREE], capture_output=True, text=True,
                         check=True, env=child_env()).stdout.split()  # fmt: skip
    assert out == ["True"]
    monkeypatch.setattr(memory, "_malloc_trim", lambda: None)  # musl, macOS: nothing to do
    assert not release_free_memory()
