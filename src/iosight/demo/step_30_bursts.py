"""Demo: a SYNTHETIC facility of two weeks, its timeline, bursts, one forecaster, the report."""

from __future__ import annotations

from iosight.demo import DemoContext

TITLE = "System-level I/O timeline and burst forecasting (synthetic facility)"


def run(ctx: DemoContext) -> None:
    from iosight.bursts import analyze_bursts, load_forecaster, train_bursts
    from iosight.report.bursts import write_report
    from iosight.synth.facility import FacilityConfig, generate_facility
    from iosight.timeline import build_timeline, load_timeline
    from iosight.warehouse import Warehouse

    # a warehouse of its own, so synthetic jobs never mix with the real logs of other steps
    wh = Warehouse(ctx.workdir / "facility-warehouse", create=True)
    weeks = 2
    s = generate_facility(wh, FacilityConfig(months=weeks * 7 / 30, seed=1, jobs_per_day=300))
    ctx.say(f"SYNTHETIC facility, {weeks} weeks: {sum(s.jobs.values())} jobs {s.jobs}")
    build_timeline(wh, bin_width=300.0)
    df = load_timeline(wh)
    ctx.say(f"timeline: {len(df)} five-minute bins (POSIX + STDIO bytes, overlap spread)")
    a = analyze_bursts(df)
    ctx.show(a.summary[["direction", "mean", "std", "k", "bursts", "fraction", "max_sigma",
                        "standalone_share", "hourly_max_over_min"]],
             "burst thresholds (synthetic data)")  # fmt: skip
    r = train_bursts(wh, directions="write", models="tree", modes="lead", horizons=[5, 30],
                     search_iter=1, seed=0)  # fmt: skip
    cols = ["mode", "horizon_min", "model", "f1", "precision", "recall", "pr_auc"]
    ctx.show(r.evaluation[cols], "write bursts: decision tree beside baselines (synthetic)")
    fc = load_forecaster(wh, "bursts-write")
    nxt = fc.predict_next(wh).table.head(6).drop(columns="bin_start")
    ctx.show(nxt, "next 30 minutes from the last bin (synthetic)")
    report = write_report([wh], ctx.workdir / "bursts-report")
    ctx.artifacts["bursts report"] = report
    ctx.say(f"report: {report}")
