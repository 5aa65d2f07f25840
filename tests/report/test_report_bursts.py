"""The bursts report's ceilings figure: what it draws is what the evaluation says."""

import pandas as pd

from iosight.report.bursts import ceilings_figure


def _rows():
    rows = []
    for d, base in (("read", 0.8), ("write", 0.5)):
        for h, drop in ((30, 0.0), (120, 0.3)):
            ceil = {"f1_no_new_bursts": base + 0.1 - drop, "running_jobs_share": 0.0}
            for model, f1 in (("persistence", base - drop), ("time_of_day", 0.1),
                              ("tree", base - drop - 0.05), ("forest", base - drop + 0.02),
                              ("chosen", base - drop)):  # fmt: skip
                rows.append({"direction": d, "horizon_min": h, "model": model, "f1": f1, **ceil})
    return pd.DataFrame(rows)


def test_ceilings_figure_draws_the_evaluation():
    fig = ceilings_figure(_rows())
    read, write = fig.axes
    lines = {ln.get_label(): ln for ln in write.get_lines()}
    assert set(lines) == {
        "persistence",
        "chosen on validation",
        "best model on test (hindsight)",
        "ceiling: bursts on now, when they end known",
        "share of bursts the running jobs make alone (not an F1)",
    }
    # best in hindsight is the best model, never a baseline (time_of_day) or "chosen"
    assert lines["best model on test (hindsight)"].get_ydata().tolist() == [0.52, 0.22]
    assert lines["ceiling: bursts on now, when they end known"].get_xdata().tolist() == [30, 120]
    assert lines[
        "share of bursts the running jobs make alone (not an F1)"
    ].get_ydata().tolist() == [0, 0]
    assert lines["persistence"].get_ydata().tolist() == [0.5, 0.2]
    assert read.get_lines()[1].get_ydata().tolist() == [0.8, 0.5]


def test_ceilings_figure_of_an_older_evaluation_has_no_ceiling_lines():
    old = _rows().drop(columns=["f1_no_new_bursts", "running_jobs_share"])
    labels = [ln.get_label() for ln in ceilings_figure(old).axes[0].get_lines()]
    assert labels == ["chosen on validation", "persistence", "best model on test (hindsight)"]
