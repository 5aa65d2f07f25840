"""Shared fixtures: where the real data lives, and fresh warehouses."""

from __future__ import annotations

import pytest

from tests_support import shared_path


@pytest.fixture
def shared():
    return shared_path


@pytest.fixture
def warehouse(tmp_path):
    from iosight.warehouse import Warehouse

    return Warehouse(tmp_path / "wh", create=True)


@pytest.fixture(scope="session")
def example_warehouse(tmp_path_factory):
    """PyDarshan's example logs (real, 2017-2023: POSIX, MPI-IO, STDIO, H5, DXT,
    HEATMAP, ...) ingested once per test worker (a session under pytest-xdist is one
    worker's). READ-ONLY: the tests that share it must not write it (copy it with
    :func:`shutil.copytree` first); the session fails at its end if one did."""
    from iosight.data import example_logs
    from iosight.warehouse import Warehouse, ingest

    wh = Warehouse(tmp_path_factory.mktemp("examples") / "wh", create=True)
    assert ingest(example_logs(), wh, workers=1).ok
    before = _files_of(wh.path)
    yield wh
    assert _files_of(wh.path) == before, "a test wrote the shared example_warehouse"


def _files_of(folder) -> list[tuple[str, int, int]]:
    """Every file under ``folder`` (path, size, mtime) but the lock, which opening touches."""
    return sorted(
        (str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file() and p.name != "_lock"
    )


MILLION_SEGMENTS = 1_000_000


@pytest.fixture(scope="session")
def million_segment_log(tmp_path_factory):
    """A 1,024-rank job log of 1,000,448 DXT segments made with iosight's tracer (one
    process traced for real, replicated as every rank: synthetic repetition); ~2 s."""
    from iosight.trace import dxt_heavy_log

    return dxt_heavy_log(tmp_path_factory.mktemp("dxt") / "million.darshan", MILLION_SEGMENTS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the README's run-through first, then the other tests marked slow.

    With ``-n auto --dist loadfile`` the longest files then start at once on separate
    workers instead of ending the run on one of them (longest-first scheduling); the
    README's run-through alone takes about three minutes on 2 cores.
    """
    items.sort(
        key=lambda item: (
            item.path.name != "test_readme.py",
            item.get_closest_marker("slow") is None,
        )
    )
