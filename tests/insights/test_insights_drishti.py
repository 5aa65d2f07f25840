"""Against the anchor: Drishti 0.8 on the tracer-made logs fires the same codes as iosight,
except where iosight differs on purpose (docs/insights.md, "Agreement with Drishti")."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("drishti")

# M01: single-process jobs; M06/M07: jobs without MPI-IO reads/writes; P09/P10: redundancy
DELIBERATE = {"M01", "M06", "M07", "P09", "P10"}


def drishti_codes(log: Path, out: Path) -> set[str]:
    exe = Path(sys.executable).with_name("drishti")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "drishti.reporter"]
    p = subprocess.run(
        [*cmd, "--csv", "--export_dir", str(out), str(log)],
        capture_output=True,
        text=True,
        cwd=out,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-500:]
    (found,) = out.glob("*.csv")
    with open(found, newline="") as fh:
        header, values = list(csv.reader(fh))[:2]
    return {h for h, v in zip(header, values, strict=True) if v == "True"}


@pytest.mark.slow
def test_drishti_and_iosight_fire_the_same_codes(traced, tmp_path):
    from iosight.insights import compute_insights, job_insights

    wh, keys = traced
    compute_insights(wh)
    for name, key in keys.items():
        log = wh.sql("select source_path from jobs where job_key = ?", [key])["source_path"][0]
        out = tmp_path / name
        out.mkdir()
        theirs = drishti_codes(Path(log), out) - DELIBERATE
        ours = set(job_insights(wh, key).findings["code"]) - DELIBERATE
        assert ours == theirs, name
