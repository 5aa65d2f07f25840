"""Arrow's pool while long-running loops run (``iosight._memory``): the system allocator,
and the caller's pool back after the last loop ends, whatever order loops end in."""

from __future__ import annotations

import pyarrow as pa

from iosight._memory import system_arrow_pool


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
