"""Page queries: the same answers pandas gives on the whole table, one page at a time."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.serve import (
    JobFilter,
    ServedWarehouse,
    burst_thresholds,
    errors_page,
    jobs_page,
    timeline_window,
)


@pytest.fixture(scope="module")
def wh(served_path):
    return ServedWarehouse(served_path)


@pytest.fixture(scope="module")
def everything(wh):
    jobs = wh.sql("select * from jobs")
    totals = wh.sql(
        "select job_key, coalesce(total_POSIX_BYTES_READ, 0)"
        " + coalesce(total_POSIX_BYTES_WRITTEN, 0) + coalesce(total_STDIO_BYTES_READ, 0)"
        " + coalesce(total_STDIO_BYTES_WRITTEN, 0) as bytes"
        " from job_totals"
    )
    return jobs.merge(totals, on="job_key", how="left")


def test_filters_sort_and_pages_match_pandas(wh, everything):
    df = everything
    t0, t1 = np.quantile(df["start_time"], [0.2, 0.7])
    f = JobFilter(start_from=t0, start_to=t1, nprocs_min=2, bytes_min=1.0, sort="bytes",
                  descending=True, page=2, page_size=7)  # fmt: skip
    want = df[(df.start_time >= t0) & (df.start_time < t1) & (df.nprocs >= 2) & (df.bytes >= 1)]
    want = want.sort_values(["bytes", "job_key"], ascending=[False, True])
    page = jobs_page(wh, f)
    assert page.total == len(want) > 14
    assert page.rows["job_key"].tolist() == want["job_key"].iloc[7:14].tolist()
    assert page.pages == -(-len(want) // 7)


def test_exe_user_and_free_where(wh, everything):
    df = everything
    exe = df["exe"].dropna().iloc[0]
    part = exe[len(exe) // 3 : len(exe) // 3 + 5]
    page = jobs_page(wh, JobFilter(exe=part.upper(), page_size=500))
    assert page.total == df["exe"].str.lower().str.contains(part.lower(), regex=False).sum()
    uid = str(df["uid"].iloc[0])
    assert jobs_page(wh, JobFilter(user=uid)).total == (df["uid"].astype(str) == uid).sum()
    page = jobs_page(wh, JobFilter(where="nprocs > 8 and run_time < 600", sort="nprocs",
                                   descending=False, page_size=500))  # fmt: skip
    want = df[(df.nprocs > 8) & (df.run_time < 600)]
    assert page.total == len(want)
    assert page.rows["nprocs"].is_monotonic_increasing
    # bytes are shown even when the page did not need them to filter or sort
    row = page.rows.iloc[0]
    assert row["bytes"] == df.set_index("job_key").loc[row["job_key"], "bytes"]


def test_like_wildcards_in_exe_are_literal(wh):
    assert jobs_page(wh, JobFilter(exe="%")).total == 0
    assert jobs_page(wh, JobFilter(exe="<script>")).total == 1  # the traced markup job


def test_bad_requests_are_clear_errors(wh):
    with pytest.raises(IosightError, match="sort"):
        jobs_page(wh, JobFilter(sort="exe; drop table jobs"))
    with pytest.raises(IosightError, match="page_size"):
        jobs_page(wh, JobFilter(page_size=10_000))
    with pytest.raises(IosightError, match="no_such_column"):
        jobs_page(wh, JobFilter(where="no_such_column > 1"))


def test_errors_page_names_each_source_and_reason(wh):
    page = errors_page(wh)
    assert page.total == 1
    assert page.rows["source_path"].iloc[0].endswith("truncated.darshan")
    assert page.rows["error"].iloc[0]


def test_timeline_window_rebins_and_keeps_every_burst(wh):
    thr = burst_thresholds(wh)
    tl = wh.sql("select * from timeline order by bin_start")
    whole = timeline_window(wh, thr, max_points=100)
    width = whole.attrs["bin_width"]
    assert len(whole) <= 100 and width > 300
    assert whole["write_bursts"].sum() == (tl["write_bytes"] > thr.write).sum() > 0
    assert np.isclose(whole["write_mean"].sum() * width, tl["write_bytes"].sum())
    assert np.isclose(whole["write_peak"].max() * 300, tl["write_bytes"].max())
    # zoomed into two hours: the base 5-minute bins themselves
    t0 = float(tl["bin_start"].iloc[100])
    zoom = timeline_window(wh, thr, t0, t0 + 7200)
    assert zoom.attrs["bin_width"] == 300 and len(zoom) == 24
    assert np.allclose(zoom["read_mean"] * 300, tl["read_bytes"].iloc[100:124])


@pytest.mark.parametrize(
    ("sort", "descending"), [("nprocs", True), ("bytes", False), ("exe", True)]
)
def test_pages_are_disjoint_and_complete_despite_ties(wh, everything, sort, descending):
    """Every job exactly once across the pages, in (sort column, job_key) order, nulls last."""
    df = everything.sort_values([sort, "job_key"], ascending=[not descending, True],
                                na_position="last", kind="mergesort")  # fmt: skip
    keys = []
    page = 1
    while True:
        p = jobs_page(wh, JobFilter(sort=sort, descending=descending, page=page, page_size=97))
        keys += p.rows["job_key"].tolist()
        if page >= p.pages:
            break
        page += 1
    assert keys == df["job_key"].tolist()
