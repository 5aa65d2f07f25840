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


MILLION_SEGMENTS = 1_000_000


@pytest.fixture(scope="session")
def million_segment_log(tmp_path_factory):
    """A 1,024-rank job log of 1,000,448 DXT segments made with iosight's tracer (one
    process traced for real, replicated as every rank: synthetic repetition); ~2 s."""
    from iosight.trace import dxt_heavy_log

    return dxt_heavy_log(tmp_path_factory.mktemp("dxt") / "million.darshan", MILLION_SEGMENTS)

