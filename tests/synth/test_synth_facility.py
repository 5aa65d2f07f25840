import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.bursts import analyze_bursts
from iosight.synth.facility import FacilityConfig, generate_facility
from iosight.timeline import build_timeline, load_timeline

SMALL = FacilityConfig(months=0.5, seed=7, jobs_per_day=300, storms_per_month=4)


@pytest.fixture(scope="module")
def facility(tmp_path_factory):
    from iosight.warehouse import Warehouse

    wh = Warehouse(tmp_path_factory.mktemp("fac") / "wh", create=True)
    summary = generate_facility(wh, SMALL)
    build_timeline(wh)
    return wh, summary


def test_tables_are_labelled_synthetic(facility):
    wh, summary = facility
    assert {"jobs", "posix", "stdio", "job_totals"} <= set(wh.tables())
    jobs = wh.jobs()
    assert jobs["synthetic"].all() and (jobs["source_format"] == "synthetic").all()
    assert len(jobs) == sum(summary.jobs.values()) and jobs["job_key"].is_unique
    by_exe = jobs["exe"].value_counts()  # every job's exe names its population
    assert {p: int(by_exe.get(f"synthetic-{p}", 0)) for p in summary.jobs} == dict(summary.jobs)
    assert summary.jobs["regular"] > 1000 and summary.jobs["checkpoint"] > 0  # Poisson arrivals
    assert (jobs["end_time"] >= jobs["start_time"]).all()


def test_timeline_conserves_record_bytes(facility):
    wh, _ = facility
    t = load_timeline(wh)
    for d, col in (("read", "BYTES_READ"), ("write", "BYTES_WRITTEN")):
        want = sum(
            wh.sql(f'select sum("{m.upper()}_{col}") as s from {m}')["s"].item()
            for m in ("posix", "stdio")
        )
        assert t[f"{d}_bytes"].sum() == pytest.approx(want, rel=1e-9)
    totals = wh.sql(
        "select sum(total_POSIX_BYTES_WRITTEN + total_STDIO_BYTES_WRITTEN) s from job_totals"
    )["s"].item()
    assert t["write_bytes"].sum() == pytest.approx(totals, rel=1e-9)


def test_statistics_resemble_the_paper(facility):
    wh, _ = facility
    s = analyze_bursts(load_timeline(wh)).summary.set_index("direction")
    assert (s["hourly_max_over_min"] > 100).all()
    assert (s["fraction"] <= 0.01).all() and (s["fraction"] > 0.005).all()
    assert (s["k"] > 1).all()


def test_same_seed_same_data(tmp_path):
    from iosight.warehouse import Warehouse

    cfg = FacilityConfig(months=0.1, seed=3, jobs_per_day=50)
    a, b = Warehouse(tmp_path / "a", create=True), Warehouse(tmp_path / "b", create=True)
    generate_facility(a, cfg)
    generate_facility(b, cfg)
    q = "select job_key, POSIX_BYTES_WRITTEN from posix order by job_key, record_id"
    assert a.sql(q).equals(b.sql(q))
    c = Warehouse(tmp_path / "c", create=True)
    generate_facility(c, FacilityConfig(months=0.1, seed=4, jobs_per_day=50))
    assert not np.array_equal(a.sql(q)["POSIX_BYTES_WRITTEN"], c.sql(q)["POSIX_BYTES_WRITTEN"])


def test_bad_config(tmp_path):
    from iosight.warehouse import Warehouse

    with pytest.raises(IosightError, match="months"):
        generate_facility(Warehouse(tmp_path / "x", create=True), FacilityConfig(months=0))


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        (FacilityConfig(months=float("inf")), "months"),
        (FacilityConfig(months=float("nan")), "months"),
        (FacilityConfig(months=121), "months"),
        (FacilityConfig(months=0.01, jobs_per_day=1e12), "jobs_per_day"),
        (FacilityConfig(months=0.01, jobs_per_day=float("inf")), "jobs_per_day"),
        (FacilityConfig(months=0.01, seed=-1), "seed"),
        (FacilityConfig(months=0.01, start="garbage"), "cannot read time 'garbage'"),
        (FacilityConfig(months=0.01, start="1e300"), "'start' parameter"),
    ],
)
def test_out_of_range_configs_are_refused_before_allocating(tmp_path, cfg, match):
    from iosight.warehouse import Warehouse

    with pytest.raises(IosightError, match=match):
        generate_facility(Warehouse(tmp_path / "x", create=True), cfg)
