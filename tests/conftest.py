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
