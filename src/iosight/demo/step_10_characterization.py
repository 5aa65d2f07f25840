"""Demo step: ingest the Darshan example logs shipped inside PyDarshan, summarise them."""

from __future__ import annotations

from iosight.data import example_logs

TITLE = "Characterization: PyDarshan's example logs into a warehouse"


def run(ctx) -> None:
    from iosight.warehouse import ingest, job_summary

    logs = example_logs()
    report = ingest(logs, ctx.warehouse, workers=2)
    ctx.say(f"ingested PyDarshan's {len(logs)} example logs: {report.summary()}")
    jobs = ctx.warehouse.sql(
        "select jobid, exe, nprocs, round(run_time, 1) as run_time_s, modules from jobs "
        "order by jobid"
    )
    jobs["exe"] = jobs["exe"].str.split().str[0].str.split("/").str[-1]
    ctx.show(jobs, "jobs (real logs)")
    totals = ctx.warehouse.sql(
        "select j.jobid, t.total_POSIX_BYTES_READ as posix_read, "
        "t.total_POSIX_BYTES_WRITTEN as posix_written, t.POSIX_agg_perf_by_slowest as "
        "posix_MiB_per_s from job_totals t join jobs j using (job_key) "
        "where t.total_POSIX_BYTES_WRITTEN is not null order by posix_written desc"
    )
    ctx.show(totals, "job totals (darshan-parser --total reduction)")
    biggest = totals["jobid"].iloc[0] if len(totals) else None
    if biggest is not None:
        s = job_summary(ctx.warehouse, str(biggest))
        ctx.show(s.modules, f"job {biggest}: per module")
        ctx.show(s.files.head(5), f"job {biggest}: busiest files")
    # the figure of the job with the most traced ranks: its DXT timeline says the most
    traced = ctx.warehouse.sql(
        "select j.jobid from jobs j join (select job_key, count(distinct rank) as ranks "
        "from dxt_posix group by 1) d using (job_key) order by d.ranks desc, j.jobid limit 1"
    )
    if len(traced):
        from iosight.report.job import plot_job

        jobid = traced["jobid"].iloc[0]
        ctx.artifacts[f"job {jobid} figure"] = plot_job(
            ctx.warehouse, job_summary(ctx.warehouse, str(jobid)), ctx.workdir / f"job-{jobid}.png"
        )
