"""``iosight serve``: the warehouse in a browser (Jobs, Job, Facility, Errors pages).

A read-only web application over one warehouse: server-side paging and filtering in
DuckDB, job summaries and figures, the system timeline with burst thresholds, the
saved burst forecaster and Algorithm 1's recommended start. See ``docs/serve.md``.
"""

from iosight.serve._app import (
    LOOPBACK_HOSTS,
    BackgroundServer,
    create_app,
    is_loopback,
    plotly_js,
    run,
    served_hosts,
)
from iosight.serve._decisions import Decisions, ForecastNotReady
from iosight.serve._pages import (
    JobFilter,
    JobsPage,
    Thresholds,
    burst_thresholds,
    errors_page,
    job_insights_table,
    jobs_page,
    similar_jobs,
    timeline_window,
)
from iosight.serve._readonly import ServedWarehouse, check_where, deadline

__all__ = [
    "LOOPBACK_HOSTS",
    "BackgroundServer",
    "Decisions",
    "ForecastNotReady",
    "JobFilter",
    "JobsPage",
    "ServedWarehouse",
    "Thresholds",
    "burst_thresholds",
    "check_where",
    "create_app",
    "deadline",
    "errors_page",
    "is_loopback",
    "job_insights_table",
    "jobs_page",
    "plotly_js",
    "run",
    "served_hosts",
    "similar_jobs",
    "timeline_window",
]
