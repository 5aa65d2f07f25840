"""The ``iosight perfmodel`` commands end to end (small inputs)."""

from __future__ import annotations

from typer.testing import CliRunner

from iosight.cli import app

runner = CliRunner()


def test_platform_show_and_features():
    res = runner.invoke(app, ["perfmodel", "platform", "show", "cetus", "--format", "csv"])
    assert res.exit_code == 0 and "NSD server,48" in res.output
    res = runner.invoke(
        app,
        [
            "perfmodel",
            "features",
            "titan",
            "-n",
            "256",
            "-m",
            "8",
            "--size",
            "1GiB",
            "--stripes",
            "4",
            "--format",
            "csv",
        ],
    )
    assert res.exit_code == 0
    assert len(res.output.strip().splitlines()) == 31  # header + 30 features
    bad = runner.invoke(
        app, ["perfmodel", "features", "titan", "-n", "0", "-m", "8", "--size", "1GiB"]
    )
    assert bad.exit_code == 1 and "nodes" in bad.output
