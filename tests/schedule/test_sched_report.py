"""The schedule report: Fig. 9-11 equivalents as PNG + HTML, and the summary table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iosight.report.schedule import write_report
from iosight.schedule import PAPER_APPS, EmulationResult, simulate_series


def test_report_writes_tables_and_figures(tmp_path):
    flags = np.zeros(400, dtype=bool)
    flags[[20, 21, 150, 300, 301, 302]] = True
    sim = simulate_series(flags, apps=PAPER_APPS[:1])
    sim.settings["data"] = "SYNTHETIC"
    runs = pd.DataFrame(
        {
            "pattern": ["0110", "0110"],
            "policies": ["MDT", "MRT"],
            "option": [0, 3],
            "delay_s": [0.0, 3.0],
            "est_bins_s": [4.0, 3.0],
            "est_fractional_s": [3.6, 2.8],
            "measured_s": [3.8, 3.5],
        }
    )
    runs["err_bins"] = (runs.est_bins_s - runs.measured_s) / runs.measured_s
    runs["err_fractional"] = (runs.est_fractional_s - runs.measured_s) / runs.measured_s
    emu = EmulationResult(
        runs, min_time=2.8, max_time=8.0, bin_s=1.0, work_mb=100, load_average=(1.0, 1.0, 1.0)
    )
    index = write_report(sim, tmp_path / "r", emulation=emu)
    names = {p.name for p in (tmp_path / "r").iterdir()}
    want = {"schedule-summary.csv", "fig10_means.png", "fig11_cdf_dlio.png", "fig9_emulation.png"}
    assert want <= names
    text = index.read_text()
    assert "SYNTHETIC" in text and text.count("data:image/png;base64,") == 3
    summary = pd.read_csv(tmp_path / "r" / "schedule-summary.csv")
    assert len(summary) == 6 and (summary["windows"] == sim.n_windows).all()
    within = emu.within().set_index("estimator")
    assert within.loc["bins", "within_10pct"] == 0.5  # 5% and 14% off
    assert within.loc["fractional", "within_20pct"] == 0.5  # 5% and 20% off
