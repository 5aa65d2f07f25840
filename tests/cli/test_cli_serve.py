"""``iosight serve``: the port is checked before anything starts."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import iosight.serve
from iosight.cli import app


@pytest.fixture
def started(monkeypatch):
    calls = []
    monkeypatch.setattr(iosight.serve, "run", lambda app, **kw: calls.append(kw))
    return calls


@pytest.mark.parametrize("port", ["0", "65536", "70000", "-1"])
def test_port_out_of_range_is_refused_before_starting(warehouse, started, port):
    res = CliRunner().invoke(app, ["serve", "-w", str(warehouse.path), "--port", port])
    assert res.exit_code == 2 and "Invalid value for '--port'" in res.output, res.output
    assert started == []


def test_port_in_range_starts(warehouse, started):
    res = CliRunner().invoke(app, ["serve", "-w", str(warehouse.path), "--port", "65535"])
    assert res.exit_code == 0, res.output
    assert started == [{"host": "127.0.0.1", "port": 65535}]
