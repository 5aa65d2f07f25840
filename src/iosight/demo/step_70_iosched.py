"""Demo: schedule I/O resources among applications and check the paper's conclusions."""

from __future__ import annotations

from iosight.demo import DemoContext

TITLE = "Scheduling distributed I/O resources (allocation, placement, simulation)"


def run(ctx: DemoContext) -> None:
    import pandas as pd

    from iosight._errors import IosightError
    from iosight.iosched import (
        ExperimentConfig,
        load_results,
        resolve_curves,
        run_experiment,
    )
    from iosight.report.iosched import write_report

    try:
        curves = resolve_curves("io-nodes")
        dataset = "io-nodes"
    except IosightError:
        curves, dataset = None, "ost"
    ctx.say(
        "bandwidth curves: "
        + ("FORGE MareNostrum 4 I/O-node data (mean of repetitions)" if curves else "")
        + ("" if curves else "PARAMETRIC OST curves (FORGE data not found)")
    )
    sets = 2 if ctx.quick else 5
    cfg = ExperimentConfig(dataset=dataset, loads=(0.3, 0.8, 1.3), sets=sets, seed=1)
    out = ctx.workdir / "iosched-results"
    done = run_experiment(cfg, out, workers=1)
    ctx.say(f"{done['run']} application sets of 40 apps on 20 I/O resources simulated")
    df = load_results(out)
    acc = df[(df["study"] == "accurate") & df["placement"].isin(["Greedy-NC", "MCKP"])]
    table = acc.pivot_table(
        index="theta", columns="allocator", values="mean_slowdown", aggfunc="mean"
    ).round(2)
    ctx.show(table.reset_index(), "Mean-I/O-SlowDown by target I/O-load (Greedy-NC placement)")
    page = write_report(
        df, ctx.workdir / "iosched-report", curves=(curves,) if curves else (), min_sets=1
    )
    table = pd.read_csv(page.parent / "conclusions.csv", keep_default_na=False)
    ctx.show(
        table[["claim", "test", "measured", "holds"]],
        "the paper's conclusions on this tiny run (the real study: docs/iosched.md)",
    )
    ctx.artifacts["iosched_report"] = page
    ctx.say(f"report with {len(list(page.parent.glob('*.png')))} figures: {page}")
