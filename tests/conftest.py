"""Shared fixtures: where the real data lives, and fresh warehouses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests_support import SHARED


def shared_path(*parts: str) -> Path:
    """A path under ../shared, skipping the test when it is absent (a fresh clone)."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} not present (../shared is only beside CI and dev checkouts)")
    return p


@pytest.fixture
def shared():
    return shared_path


@pytest.fixture
def warehouse(tmp_path):
    from iosight.warehouse import Warehouse

    return Warehouse(tmp_path / "wh", create=True)
