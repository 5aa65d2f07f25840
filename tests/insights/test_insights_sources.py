"""Jobs from every kind of source get the rules their data supports, and say which not."""

from __future__ import annotations

import pytest

from iosight.insights import compute_insights, job_insights
from iosight.warehouse import ingest

RECORD_RULES = {"P09", "P10", "P15", "P16", "P17", "P18", "P19", "P21", "P22"}


def test_parser_text_dump_gets_the_same_insights_as_its_log(traced, tmp_path):
    from iosight.darshan import read_source, write_parser_text

    wh, keys = traced
    log = wh.sql("select source_path from jobs where job_key = ?", [keys["unequal_ranks"]])
    _, tables = read_source(log["source_path"][0])
    dump = tmp_path / "unequal.txt"
    write_parser_text(tables, dump, exact=True)
    from iosight.warehouse import Warehouse

    other = Warehouse(tmp_path / "wh2", create=True)
    assert ingest([dump], other, workers=1).ok
    compute_insights(other)
    assert other.sql("select source_format from jobs")["source_format"][0] == "parser-text"
    cols = ["code", "level", "evidence"]
    direct = job_insights(wh, keys["unequal_ranks"]).findings[cols]
    text = job_insights(other, "1304").findings[cols]
    assert direct.sort_values("code").equals(text.sort_values("code"))


def test_job_total_tables_get_totals_rules_and_name_the_others(shared, warehouse):
    table = shared("datasets", "summit_darshan_total_2021", "darshan_total", "App1.parquet")
    assert ingest([table], warehouse, workers=1).ok
    run = compute_insights(warehouse)
    assert run.evaluated == run.jobs > 1000
    per_job = warehouse.sql(
        "select j.job_key, i.not_evaluated, t.total_POSIX_OPENS as opens "
        "from insights_jobs i join jobs j using (job_key) join job_totals t using (job_key)"
    )
    active = per_job["opens"].fillna(0) > 0
    assert active.any()
    blind = per_job.loc[active, "not_evaluated"].str.split(",").map(set)
    assert all(RECORD_RULES <= b for b in blind)  # every record rule is named, per job
    codes = set(warehouse.sql("select distinct code from insights")["code"])
    assert codes & {"P05", "P06", "P08", "S01"}  # totals rules do run on totals
    assert not codes & RECORD_RULES
    one = per_job.loc[active, "job_key"].iloc[0]
    ji = job_insights(warehouse, one)
    assert set(ji.not_evaluated["code"]) >= RECORD_RULES
    assert ji.not_evaluated["needs"].str.contains("per-file records").any()


@pytest.mark.slow
def test_darshan2_and_3_logs_get_record_rules(shared, warehouse):
    root = shared("darshan-logs")
    logs = sorted(root.glob("*.darshan.gz"))[:6] + sorted(root.glob("*.darshan"))[:10]
    ingest(logs, warehouse, workers=2)
    compute_insights(warehouse)
    per_job = warehouse.sql(
        "select j.source_format, i.not_evaluated from insights_jobs i join jobs j using (job_key)"
    )
    assert {"darshan2", "darshan3"} <= set(per_job["source_format"])
    # logs carry records: no record rule is ever reported as not evaluable
    assert not per_job["not_evaluated"].str.contains("P09").any()


def test_synthetic_jobs_beside_real_ones_are_labelled_apart(traced, tmp_path):
    """A SYNTHETIC facility added to a warehouse of real traced jobs: the facility view
    says the data are mixed, and lists a synthetic application only with its label."""
    import shutil

    from iosight.insights import facility_view
    from iosight.synth.facility import FacilityConfig, generate_facility
    from iosight.warehouse import Warehouse

    real, wh = (Warehouse(shutil.copytree(traced[0].path, tmp_path / n)) for n in "ab")
    generate_facility(wh, FacilityConfig(months=0.1, jobs_per_day=40))
    compute_insights(real)
    compute_insights(wh)
    view = facility_view(wh, apps=50)
    n_syn = int(wh.sql("select count_if(synthetic) n from jobs")["n"][0])
    assert view.data == f"mixed ({n_syn:,} of {view.jobs:,} jobs SYNTHETIC)"
    listed = [a for apps in view.rules["worst_apps"].dropna() for a in apps.split("; ")]
    labelled = [a for a in listed if " [SYNTHETIC] (" in a]
    assert labelled and all(a.startswith("synthetic-") for a in labelled)  # the synth exe
    assert not any(a.startswith("synthetic-") for a in set(listed) - set(labelled))
    assert facility_view(real).data == "real"
