"""Demo step: Drishti-style I/O insights of the example jobs, and the facility view."""

from __future__ import annotations

from iosight.demo import DemoContext

TITLE = "I/O insights: what is wrong with each job's I/O, and across all jobs"


def run(ctx: DemoContext) -> None:
    from iosight.insights import compute_insights, facility_view, job_insights
    from iosight.report.insights import write_report
    from iosight.warehouse import ingest

    if not ctx.warehouse.has_table("jobs"):  # run alone (--only insights): the example logs
        from iosight.data import example_logs

        ingest(example_logs(), ctx.warehouse, workers=2)
    run_ = compute_insights(ctx.warehouse)
    ctx.say(f"insights: {run_.summary()}")
    worst = ctx.warehouse.sql(
        "select j.jobid, j.job_key, i.n_high, i.n_warn from insights_jobs i join jobs j "
        "using (job_key) order by i.n_high desc, i.n_warn desc, j.jobid limit 2"
    )
    for jobid, key in zip(worst["jobid"], worst["job_key"], strict=True):
        found = job_insights(ctx.warehouse, key)
        table = found.table()
        ctx.show(table[["level", "code", "message", "at_stake"]], f"job {jobid}: insights")
    view = facility_view(ctx.warehouse)
    ctx.show(view.summary_table().drop(columns="worst applications"), "facility view")
    if not view.not_evaluated.empty:
        ctx.show(view.not_evaluated, "rules some jobs' data could not evaluate")
    ctx.artifacts["insights report"] = write_report(
        view, ctx.workdir / "insights", title="I/O insights of the demo jobs (real logs)"
    )
