"""Demo: a write-time model fitted on synthetic Titan samples, and a checkpoint plan."""

from __future__ import annotations

from iosight.demo import DemoContext

TITLE = "Write-performance model (Xie et al.) on SYNTHETIC Titan writes, and a checkpoint plan"


def run(ctx: DemoContext) -> None:
    from iosight.perfmodel import (
        WritePattern,
        fit_model,
        load_platform,
        plan_checkpoints,
        predict_pattern,
        write_table,
    )
    from iosight.synth.writes import WriteSimConfig, simulate_samples

    titan = load_platform("titan")
    ctx.show(titan.summary(), "Titan / Atlas2 write path (shipped platform description)")
    per_scale = 6 if ctx.quick else 14
    runs, samples = simulate_samples(titan, WriteSimConfig(patterns_per_scale=per_scale, seed=0))
    path = write_table(samples, ctx.workdir / "perfmodel_titan_samples.parquet")
    ctx.artifacts["perfmodel_samples"] = path
    ctx.say(
        f"SYNTHETIC: {len(runs)} simulated IOR-like runs -> {len(samples)} samples "
        f"({samples['converged'].mean():.0%} converged, CLT 0.9 / 10% / <= 9 runs)"
    )
    model = fit_model(samples, titan, family="lasso", min_time=2.0, families=("lasso", "linear"))
    model_dir = model.save(ctx.workdir / "perfmodel_titan_model")
    ctx.artifacts["perfmodel_model"] = model_dir
    acc = model.accuracy[["family", "test_set", "samples", "within_20", "within_30"]]
    ctx.show(
        acc.round(3),
        "accuracy on 200-512-node test sets (SYNTHETIC; paper Titan: "
        "98.61%/99.65% small, 96.10%/98.2% medium within 20%/30%)",
    )
    ctx.show(model.coefficients.head(8), "Lasso: selected features (Table V)")
    pattern = WritePattern(nodes=512, cores=16, size=2 * 1024**3, stripes=4)
    t = predict_pattern(model, pattern)
    plan = plan_checkpoints(t, compute_time_s=12 * 3600.0, io_budget=0.10)
    ctx.say(f"512 nodes x 16 cores x 2 GiB, stripe count 4: predicted {t:.0f} s per checkpoint")
    ctx.show(plan.as_frame(), "plan: checkpoint interval for <= 10% of a 12 h run in writes")
