"""``iosight schedule``: start, simulate, emulate."""

from __future__ import annotations

import pytest

from iosight.warehouse import Warehouse
from tests_support import cli

PATTERN = "111" + "0" * 21
WINDOW = ["--min-time", "850", "--max-time", "4250"]


def test_start_from_a_pattern():
    res = cli("schedule", "start", "--pattern", PATTERN, WINDOW, "--policy", "MRT")
    assert res.exit_code == 0, res.output
    assert "start after 900 s: option 3, estimated run time 900 s" in res.output
    res = cli("schedule", "start", "--pattern", PATTERN, WINDOW, "--alpha", "0.5", "-f", "csv")
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert lines[0] == "option,delay_s,run_time_s,total_time_s,score,chosen"
    assert lines[1] == "0,0.0,1800.0,1800.0,900.0,True"
    assert len(lines) == 25


@pytest.mark.parametrize(
    "extra",
    [
        ["--pattern", "01x", "--alpha", "0.5"],
        ["--pattern", "01", "--policy", "FAST"],
        ["--pattern", "01", "--model", "m", "--alpha", "0.5"],
        ["--alpha", "0.5"],
        ["--pattern", "01", "--policy", "MDT", "--bin", "1e-300"],
        ["--pattern", "01", "--policy", "MDT", "--options", "100000000"],
    ],
)
def test_start_errors_are_one_line(extra):
    res = cli("schedule", "start", WINDOW, extra)
    assert res.exit_code == 1
    assert "error:" in res.output and "Traceback" not in res.output


def test_simulate_a_series_file_with_report(tmp_path):
    (tmp_path / "s.txt").write_text("0" * 50 + "11" + "0" * 60 + "1" + "0" * 40)
    res = cli(
        "schedule", "simulate", "--series", tmp_path / "s.txt", "--app", "dlio:850:4250",
        "--policy", "MDT", "--policy", "MRT", "-f", "csv", "--out", tmp_path / "r",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [line.split(",") for line in res.output.splitlines() if line.startswith("dlio")]
    assert [r[1] for r in rows] == ["MDT", "MRT"]
    # windows: starts 27..51 around the pair (25) + 89..112 around the single burst (24)
    assert rows[0][2] == "49"
    assert (tmp_path / "r" / "index.html").exists()
    bad = cli("schedule simulate --series", tmp_path / "no.txt")
    assert bad.exit_code == 1 and "no burst series file" in bad.output


def test_simulate_needs_a_timeline(tmp_path):
    Warehouse(tmp_path / "wh", create=True)  # an empty warehouse (a bare directory is none)
    res = cli("schedule simulate --warehouse", tmp_path / "wh")
    assert res.exit_code == 1 and "timeline" in res.output


def test_simulate_says_which_data_the_warehouse_holds(tmp_path):
    """Real jobs (Summit 2021's App1: enough of them for burst thresholds, which a few
    example logs spread over years do not give): 'real', no SYNTHETIC label. A SYNTHETIC
    facility added to the same warehouse (as the README once did): 'mixed' with the
    counts, not 'SYNTHETIC'."""
    from iosight.synth.facility import FacilityConfig, generate_facility
    from iosight.timeline import build_timeline
    from iosight.warehouse import ingest
    from tests_support import shared_path

    app1 = shared_path("datasets", "summit_darshan_total_2021", "darshan_total", "App1.parquet")
    wh = Warehouse(tmp_path / "wh", create=True)
    ingest([app1], wh, workers=1)
    build_timeline(wh, bin_width=3600.0)
    args = ["schedule", "simulate", "-w", str(wh.path), "--bin", "3600", "--policy", "MDT"]
    res = cli(args)
    assert res.exit_code == 0, res.output
    assert "(data: real)" in res.output and "SYNTHETIC" not in res.output
    generate_facility(wh, FacilityConfig(months=0.1, jobs_per_day=20))
    n, n_syn = (int(v) for v in wh.sql("select count(*), count_if(synthetic) from jobs").iloc[0])
    res = cli(args, "--out", tmp_path / "r")
    assert res.exit_code == 0, res.output
    mixed = f"mixed ({n_syn:,} of {n:,} jobs SYNTHETIC)"
    assert 0 < n_syn < n and f"(data: {mixed})" in res.output
    assert f"Data: {mixed}." in (tmp_path / "r" / "schedule.html").read_text()


@pytest.mark.slow
def test_emulate_command_runs_real_io_briefly(tmp_path):
    res = cli(
        "schedule", "emulate", "--pattern", "0110", "--bin", "0.2", "--job-bins", "1",
        "--repeats", "1", "--dir", tmp_path, "-f", "csv",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "estimator,runs,within_10pct,within_20pct,mean_abs_err" in res.output
    assert list(tmp_path.iterdir()) == []


def test_start_from_a_model_forecast(tmp_path, monkeypatch):
    import numpy as np
    import pandas as pd

    import iosight.bursts
    from iosight.bursts import BurstPrediction

    class Fake:
        def predict_next(self, warehouse, at=None):
            lead = np.arange(1, 25)
            table = pd.DataFrame({"lead": lead, "bin_start": at + 300.0 * lead, "burst": lead <= 2})
            return BurstPrediction("fake", table)

    monkeypatch.setattr(iosight.bursts, "load_forecaster", lambda wh, n: Fake(), raising=False)
    Warehouse(tmp_path / "wh", create=True)  # an empty warehouse (a bare directory is none)
    wh = ["--warehouse", tmp_path / "wh"]
    res = cli(
        "schedule", "start", wh, "--model", "bursts-write", "--at", "2024-03-01T12:00",
        WINDOW, "--policy", "MRT",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "forecast from 2024-03-01 12:05:00 UTC: 110000000000000000000000" in res.output
    assert "start after 600 s (at 2024-03-01 12:15:00 UTC)" in res.output
    bad = cli(
        "schedule", "start", wh, "--model", "m", "--at", "yesterday", WINDOW, "--policy", "MRT"
    )
    assert bad.exit_code == 1 and "--at must be" in bad.output


def test_simulate_with_a_missing_model_is_one_error(tmp_path):
    Warehouse(tmp_path / "wh", create=True)  # an empty warehouse (a bare directory is none)
    res = cli("schedule simulate --warehouse", tmp_path / "wh", "--model nope")
    assert res.exit_code == 1 and "no model 'nope'" in res.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("is_burst\n0\nnan\n1\n", "the first nan at data row 2"),
        ("", "cannot be read as a burst series"),
        ("is_burst\n0\n0.6\n1\n", "the first 0.6 at data row 2"),
    ],
)
def test_simulate_a_bad_series_csv_is_one_line(tmp_path, content, expected):
    (tmp_path / "s.csv").write_text(content)
    res = cli("schedule simulate --series", tmp_path / "s.csv")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert expected in " ".join(res.output.split())
