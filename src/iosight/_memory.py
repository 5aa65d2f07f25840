"""Memory of the loops that run for months (follow mode, ``iosight live``): Arrow's
buffers, and the pages glibc's malloc holds free, go back to the system, so the process
does not grow batch by batch.

The pyarrow wheels allocate Arrow's buffers with mimalloc by default, which keeps the
pages a thread freed for that thread's later allocations and hands them back to the
system lazily; Arrow's reader and writer threads (Parquet in and out, a batch's pandas
conversions) free buffers of all sizes, and what they keep grows with the batches.
Through the replayed Summit 2021 year (``benchmarks/replay.py``, ``replay_memory.py``;
``docs/follow.md``, "Memory over the year") the process grew batch after batch, nearly
all of it in mimalloc's region, while Arrow held no live buffer after a batch
(``pyarrow.total_allocated_bytes()`` 0); with the system allocator (glibc's malloc,
which maps large blocks and unmaps them when freed) that growth went, at the same CPU
time. What was left was glibc's malloc keeping freed pages: its main heap, which follow
trims after each batch (:func:`release_free_memory`), and the free tops of its thread
arenas, which ``malloc_trim`` leaves alone and which follow keeps small by fixing glibc's
thresholds (:func:`fixed_malloc_thresholds`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Arrow's own setting of its default pool: when set, the person chose; left alone
POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def system_pool_at_start() -> bool:
    """Make the system allocator Arrow's default pool for the whole process, its C++
    code included, if pyarrow is not imported yet and no pool was chosen: True when it
    did. :func:`system_arrow_pool` changes the pool of pyarrow's Python calls only; the
    Parquet writer and other C++ code take Arrow's own default, which is read once, at
    import, from :data:`POOL_VARIABLE` (``docs/follow.md``, "Memory over the year")."""
    if os.environ.get(POOL_VARIABLE) or "pyarrow" in sys.modules:
        return False
    os.environ[POOL_VARIABLE] = "system"
    return True


class _Switch:
    """The process's default pool while loops run (two follows in two threads: the
    pool the first found is back when the last ends)."""

    lock = threading.Lock()
    running = 0
    saved = None


@contextmanager
def system_arrow_pool() -> Iterator[None]:
    """Within the block Arrow allocates from the system allocator (the caller's default
    pool is back after it), unless :data:`POOL_VARIABLE` chose a pool for the process.
    Buffers made before keep the pool they came from, so switching is safe."""
    import pyarrow as pa

    if os.environ.get(POOL_VARIABLE):
        yield
        return
    with _Switch.lock:
        if not _Switch.running:
            _Switch.saved = pa.default_memory_pool()
            pa.set_memory_pool(pa.system_memory_pool())
        _Switch.running += 1
    try:
        yield
    finally:
        with _Switch.lock:
            _Switch.running -= 1
            if not _Switch.running:
                pa.set_memory_pool(_Switch.saved)


#: glibc's ``mallopt`` parameters (``malloc.h``): the trim and the mmap threshold
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: the environment variables by which a person sets them instead (then left alone)
THRESHOLD_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")
#: bytes, both thresholds: glibc's own starting value, kept rather than raised
MALLOC_THRESHOLD = 128 << 10


@functools.cache
def _libc(name: str) -> ctypes._CFuncPtr | None:
    """The C library's function ``name`` (glibc's ``malloc_trim``, ``mallopt``), or None
    where the C library has none (musl, macOS)."""
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def fixed_malloc_thresholds() -> bool:
    """Fix glibc's mmap and trim thresholds at :data:`MALLOC_THRESHOLD` for the process
    (``mallopt``); True when it did, False where a :data:`THRESHOLD_VARIABLES` variable
    chose them or there is no glibc.

    glibc raises both thresholds (up to 32 MiB and 64 MiB) each time a large mapped
    block is freed, and from then on serves blocks that large from its arenas and keeps
    their free tops; ``malloc_trim`` trims the main heap but not the tops of the arenas
    of other threads (glibc 2.36). Over the replayed Summit year with forecasts those
    arenas grew from 8 to 44 MB; with the thresholds fixed they stayed at 14-15 MB and
    the process kept 292 / 297 / 303 MB at the first, middle and last quarter, against
    298 / 310 / 353 (``benchmarks/replay_memory.py --variants follow,thresholds``;
    ``docs/follow.md``, "Memory over the year"). Called when follow or ``iosight live``
    starts; large blocks are then mapped and unmapped each time, at no measured CPU."""
    mallopt = _libc("mallopt")
    if mallopt is None or any(os.environ.get(v) for v in THRESHOLD_VARIABLES):
        return False
    return all([mallopt(_M_MMAP_THRESHOLD, MALLOC_THRESHOLD) == 1,
                mallopt(_M_TRIM_THRESHOLD, MALLOC_THRESHOLD) == 1])  # fmt: skip


def release_free_memory() -> bool:
    """Give the pages glibc's malloc holds free back to the system (``malloc_trim(0)``:
    every arena, and free pages inside the heap, not only its top, since glibc 2.8); True
    when it gave some, False elsewhere (no glibc).

    Arrow's default pool gives back its unused pages first, where pyarrow is imported.

    Called after each follow batch, each ``insights`` batch and each ``timeline build``
    chunk: their Parquet, DuckDB and pandas work frees blocks of every size, and glibc
    keeps what it cannot give back at the top of its heap (and, once a large block was
    freed, serves blocks up to that size from the heap rather than mapping them: its
    dynamic mmap threshold); over the replayed Summit year the main heap grew by 12 MB,
    bytes in use by under 1 (``docs/follow.md``, "Memory over the year"). Between chunks
    of a million jobs' ``timeline build`` the process held 322-413 MB with it alone,
    251-253 MB with it and :func:`lean_allocators`, and with neither 515 MB after the
    first chunk and 670 MB after the sixth (docs/warehouse.md, "Files of narrow key
    ranges"). A few milliseconds a call."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    trim = _libc("malloc_trim")
    return bool(trim(0)) if trim is not None else False


def lean_allocators() -> None:
    """What a command that streams a whole warehouse in chunks (``timeline build``,
    ``insights``) calls before pyarrow's import: Arrow's C++ code and Python calls
    allocate from the system allocator (:func:`system_pool_at_start`) with glibc's
    thresholds fixed (:func:`fixed_malloc_thresholds`), so what a chunk freed can go
    back to the system (``timeline build`` of a million jobs, with
    :func:`release_free_memory` after each chunk: 251–253 MB between chunks against
    303–323 MB with Arrow's mimalloc pool; docs/warehouse.md, "Files of narrow key
    ranges"; ``insights`` of 10,000 jobs: 474 MB at peak against 510)."""
    system_pool_at_start()
    fixed_malloc_thresholds()
