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
    monkeypatch.setattr(memory, "_libc", lambda name: None)  # musl, macOS: nothing to do
    assert not release_free_memory()


MAPPED = """
import ctypes, sys
from iosight._memory import fixed_malloc_thresholds
class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena ordblks smblks hblks hblkhd usmblks "
                                               "fsmblks uordblks fordblks keepcost").split()]
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
libc.mallinfo2.restype = Info
fixed = fixed_malloc_thresholds() if sys.argv[1] == "fixed" else False
libc.free(libc.malloc(4 << 20))  # a large mapped block freed: glibc raises its thresholds
before = libc.mallinfo2().hblks
block = libc.malloc(1 << 20)  # mapped again only while the threshold stays fixed
print(fixed, libc.mallinfo2().hblks - before)
"""


@pytest.mark.parametrize(
    ("mode", "expected"), [("fixed", ["True", "1"]), ("glibc", ["False", "0"])]
)
def test_fixed_thresholds_keep_large_blocks_out_of_the_arenas(mode, expected, monkeypatch):
    # glibc's dynamic threshold serves a 1 MiB block from the heap once a 4 MiB block was
    # freed; fixed, it maps (and on free unmaps) it: what the arenas kept over the year
    if sys.platform != "linux" or os.confstr("CS_GNU_LIBC_VERSION") is None:
        pytest.skip("mallopt is glibc's")
    chosen = ("MALLOC_", "GLIBC_", "LD_PRELOAD")  # a person's allocator settings
    env = {k: v for k, v in child_env().items() if not k.startswith(chosen)}
    out = subprocess.run([sys.executable, "-c", MAPPED, mode], capture_output=True, text=True,
                         check=True, env=env).stdout.split()  # fmt: skip
    assert out == expected, sorted(k for k in os.environ if "MALLOC" in k or "GLIBC" in k)
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")  # a person's choice is kept
    assert not memory.fixed_malloc_thresholds()
