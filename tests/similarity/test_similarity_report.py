"""The similarity report on a small real-format codings file and a few synthetic jobs."""

from __future__ import annotations

import re

import pytest

from iosight._errors import IosightError
from iosight.report.similarity import write_report
from iosight.synth.monitoring import synth_monitoring

CSV = "coding,jobid\n0,5\n128:128:0,3\n128:128,4\n0:0:16:0:0:32,1\n0:0,2\n128:128:0:0,6\n"


def test_report_sections_and_summary(tmp_path, warehouse):
    csv = tmp_path / "codes.csv"
    csv.write_text(CSV)
    synth_monitoring(warehouse, 150, seed=4)
    path = write_report(
        warehouse, tmp_path / "out", codings_csv=csv, sims=(0.5, 0.9), eps=(0.3,), sample=100
    )
    page = path.read_text()
    assert "Fig. 3" in page and "Fig. 4" in page and "Table 2" in page
    # Fig. 3/4 per coding (2 real, 3 synthetic temporal) + the chosen job's series plot
    assert page.count("data:image/png;base64") == 2 + 3 + 1
    summary = (tmp_path / "out" / "summary.txt").read_text().splitlines()
    assert summary[0].startswith("[real] codes.csv: 6 jobs, zero jobs 2 (33.33%")
    assert any(line.startswith("[synthetic] best temporal:") for line in summary)
    runs = [line for line in summary if re.search(r": clusters \d+, ARI ", line)]
    assert len(runs) == 3 * 2 + 2  # 3 codings x 2 SIMs + 2 profiles


def test_report_needs_something_to_show(tmp_path, warehouse):
    with pytest.raises(IosightError, match="nothing to report"):
        write_report(warehouse, tmp_path / "out")
