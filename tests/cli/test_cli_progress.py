"""Progress: a plain line every so often when piped, an ETA that does not swing."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys

from iosight.cli import _common
from iosight.cli._common import Eta, RichProgress
from iosight.data import example_logs
from iosight.warehouse import Warehouse


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_piped_progress_prints_at_most_every_ten_seconds(monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(_common.err_console, "print", lambda text, **kw: lines.append(text))
    clock = FakeClock()
    p = RichProgress(fields=("failed",), clock=clock, terminal=False, every=10)
    p.start(100, "ingest")
    for i in range(100):
        clock.t += 0.5  # 2 items/s: one line per 20 items
        p.advance(1, failed=i // 50)
    p.finish()
    assert len(lines) == 5 + 1  # at 10, 20, 30, 40, 50 s, and the final line
    assert lines[0] == "ingest: 20/100 (20%), 2/s, ETA 40 s, failed: 0"
    assert lines[-1] == "ingest: 100/100 (100%) in 50 s, 2/s, failed: 1"


def test_eta_is_smoothed_over_the_whole_run():
    clock = FakeClock()
    eta = Eta(100, clock)
    for _ in range(50):  # 50 fast items, then one that takes 60 s
        clock.t += 0.1
        eta.advance()
    before = eta.seconds_left()
    clock.t += 60
    eta.advance()
    after = eta.seconds_left()
    assert round(before, 6) == 5.0  # 50 items left at 10/s
    # the mean rate drops from 10/s to 51/65 s: the ETA grows with the evidence, not by
    # the 49 x 60 s a last-item rate would claim
    assert 55 < after < 65


def test_ingest_to_a_file_logs_progress_per_log_before_the_summary(tmp_path):
    logs = [str(p) for p in example_logs()]
    env = {**os.environ, "IOSIGHT_PROGRESS_SECONDS": "0"}
    out = subprocess.run(
        [sys.executable, "-m", "iosight", "ingest", *logs, "-w", str(tmp_path / "wh")]
        + ["--workers", "1", "--batch-size", "64"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    ).stdout
    lines = out.splitlines()
    progress = [line for line in lines if line.startswith("ingest: ")]
    done = [tuple(map(int, re.match(r"ingest: (\d+)/(\d+)", x).groups())) for x in progress]
    n = done[-1][1]  # the new logs (the example set holds a few duplicates)
    assert n == Warehouse(tmp_path / "wh").table("jobs").num_rows  # one job per new log
    assert done[-1][0] == n and "(100%) in " in progress[-1]
    # one batch holds every log, yet progress moves per log (workers' heartbeats)
    assert len(done) >= n // 2, out
    assert all(0 < b[0] - a[0] < n for a, b in itertools.pairwise(done[:-1])), out
    summary = next(i for i, line in enumerate(lines) if "sources:" in line)
    assert lines.index(progress[0]) < summary
