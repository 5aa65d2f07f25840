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


def test_hosts_accepted_are_printed_and_extra_names_added(warehouse, started):
    res = CliRunner().invoke(app, ["serve", "-w", str(warehouse.path), "--allowed-host",
                                   "Box.Example.org", "--allowed-host", "::1"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "host names accepted: 127.0.0.1, localhost, [::1], box.example.org (" in res.output


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--allowed-host", "*", "not a host name or IP address: '*'"),
        ("--allowed-host", "evil.example.com/x", "not a host name"),
        ("--memory-limit", "lots", "cannot serve with the memory limit 'lots'"),
        ("--query-timeout", "0", "the query timeout must be above 0 s"),
    ],
)
def test_bad_options_are_one_line_before_starting(warehouse, started, option, value, says):
    res = CliRunner().invoke(app, ["serve", "-w", str(warehouse.path), option, value])
    assert res.exit_code == 1 and says in res.output, res.output
    assert "Traceback" not in res.output and started == []
