"""Demo step: burst-aware start times (Algorithm 1, §V-B) on the synthetic facility."""

from __future__ import annotations

from iosight.demo import DemoContext

TITLE = "Burst-aware start times (Saeedizade et al. (2023), §V-B, Algorithm 1) - SYNTHETIC data"
DEMO_MODEL = "schedule-demo-tree"


def _timeline_warehouse(ctx: DemoContext):
    """The shared warehouse when an earlier step built its timeline, else a small one."""
    if ctx.warehouse.has_table("timeline"):
        return ctx.warehouse
    from iosight.synth.facility import FacilityConfig, generate_facility
    from iosight.timeline import build_timeline
    from iosight.warehouse import Warehouse

    wh = Warehouse(ctx.workdir / "schedule-facility", create=True)
    ctx.say("no timeline yet: generating one synthetic month of the facility (seed 1)")
    generate_facility(wh, FacilityConfig(months=1.0, seed=1))
    build_timeline(wh)
    return wh


def _lead_model(ctx: DemoContext, wh) -> str:
    """A lead-mode write-burst model: 'bursts-write' if an earlier step saved one, else a
    quick decision tree trained here (seed 0)."""
    from iosight.bursts import list_forecasters, load_forecaster, train_forecaster
    from iosight.timeline import load_timeline

    for name in ("bursts-write", DEMO_MODEL):
        if name in list_forecasters(wh) and load_forecaster(wh, name).metadata["mode"] == "lead":
            return name
    ctx.say("training a quick lead-mode decision tree on write bursts (24 leads, seed 0)")
    train_forecaster(
        load_timeline(wh), model="tree", mode="lead", search_iter=1, cv_splits=2,
        severity=False, seed=0, name=DEMO_MODEL,
    ).save(wh)  # fmt: skip
    return DEMO_MODEL


def run(ctx: DemoContext) -> None:
    from iosight.report.schedule import write_report
    from iosight.schedule import (
        burst_series,
        choose_start,
        forecast_study,
        simulate_source,
    )

    pattern = "111000000000000000000000"
    ctx.say(f"DLIO-like job (850 s alone, 4250 s in bursts), predicted pattern {pattern}:")
    for policy in ("MDT", "W3", "MRT"):
        c = choose_start(pattern, 850, 4250, policy=policy)
        ctx.say(f"  {policy}: start after {c.delay:g} s, estimated run time {c.run_time:g} s")
    wh = _timeline_warehouse(ctx)
    series = burst_series(wh, direction="write")
    sim = simulate_source(series)
    ctx.say(
        f"write bursts: {int(series.is_burst.sum())} of {len(series.is_burst)} bins; "
        f"{sim.n_windows} windows with a burst, {sim.n_patterns} distinct patterns"
    )
    ctx.show(sim.summary(), "Mean delay / run time / total time per policy (Fig. 10, synthetic)")
    index = write_report(sim, ctx.workdir / "schedule-report")
    ctx.artifacts["schedule_report"] = index
    ctx.say(f"figures (Fig. 10-11 equivalents): {index}")

    from iosight.bursts import load_forecaster

    model = _lead_model(ctx, wh)
    f1 = [m["f1"] for m in load_forecaster(wh, model).metadata["test_metrics"].values()]
    study = forecast_study(wh, model, policies=("MDT", "W4", "MRT"))
    st = study.forecast.settings
    ctx.say(
        f"model {model!r} (test F1 {min(f1):.2f}-{max(f1):.2f} over its leads) after its "
        f"training window: {study.forecast.n_windows} decision "
        f"times, {st['predicted_burst_windows']} with a predicted burst, "
        f"{st['actual_burst_windows']} with an actual one"
    )
    ctx.show(study.summary(), "Starts chosen on forecasts, charged on actual bursts (synthetic)")
    ctx.say(f"(report with figures: iosight schedule simulate --model {model} --out DIR)")
