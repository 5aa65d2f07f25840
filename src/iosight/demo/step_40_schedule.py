"""Demo step: burst-aware start times (Algorithm 1, §V-B) on the synthetic facility."""

from __future__ import annotations

from iosight.demo import DemoContext

TITLE = "Burst-aware start times (Saeedizade et al. §V-B, Algorithm 1) - SYNTHETIC data"


def _timeline_warehouse(ctx: DemoContext):
    """The shared warehouse when an earlier step built its timeline, else a small one."""
    if ctx.warehouse.has_table("timeline"):
        return ctx.warehouse
    from iosight.synth.facility import FacilityConfig, generate_facility
    from iosight.timeline import build_timeline
    from iosight.warehouse import Warehouse

    wh = Warehouse(ctx.workdir / "schedule-facility")
    ctx.say("no timeline yet: generating one synthetic month of the facility (seed 1)")
    generate_facility(wh, FacilityConfig(months=1.0, seed=1))
    build_timeline(wh)
    return wh


def run(ctx: DemoContext) -> None:
    from iosight.report.schedule import write_schedule_report
    from iosight.sched.burst_aware import burst_series, choose_start, simulate_source

    pattern = "111000000000000000000000"
    ctx.say(f"DLIO-like job (850 s alone, 4250 s in bursts), predicted pattern {pattern}:")
    for policy in ("MDT", "W3", "MRT"):
        c = choose_start(pattern, 850, 4250, policy=policy)
        ctx.say(f"  {policy}: start after {c.delay:g} s, estimated run time {c.run_time:g} s")
    series = burst_series(_timeline_warehouse(ctx), direction="write")
    sim = simulate_source(series)
    ctx.say(
        f"write bursts: {int(series.is_burst.sum())} of {len(series.is_burst)} bins; "
        f"{sim.n_windows} windows with a burst, {sim.n_patterns} distinct patterns"
    )
    ctx.show(sim.summary(), "Mean delay / run time / total time per policy (Fig. 10, synthetic)")
    index = write_schedule_report(sim, ctx.workdir / "schedule-report")
    ctx.artifacts["schedule_report"] = index
    ctx.say(f"figures (Fig. 10-11 equivalents): {index}")
