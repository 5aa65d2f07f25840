"""The demo step shows the example jobs' insights and the facility view, and writes the page."""

from __future__ import annotations

from iosight.demo import DemoContext
from iosight.demo import step_90_insights as step
from iosight.insights import facility_view
from iosight.warehouse import Warehouse


def test_demo_step_runs_on_the_example_logs(tmp_path):
    shown: dict[str, object] = {}
    ctx = DemoContext(
        workdir=tmp_path,
        warehouse=Warehouse(tmp_path / "wh", create=True),
        say=lambda s: None,
        show=lambda df, title: shown.setdefault(title, df),
    )
    step.run(ctx)
    titles = list(shown)
    assert sum(t.endswith(": insights") for t in titles) == 2
    pairs = ctx.warehouse.sql("select distinct code, level from insights")  # one row each
    assert "facility view" in titles and len(shown["facility view"]) == len(pairs) > 0
    first = shown[titles[0]]
    assert first["level"].iloc[0] == "high"
    trend = facility_view(ctx.warehouse).trend_table()
    figures = 1 + (not trend.empty)  # the rules figure, and the monthly trend when there is one
    assert ctx.artifacts["insights report"].read_text().count("<img") == figures
