"""Jobs from every kind of source get the rules their data supports, and say which not."""

from __future__ import annotations

import pytest

from iosight.insights import compute_insights, facility_view, job_insights
from iosight.warehouse import Warehouse, ingest

RECORD_RULES = {"P09", "P10", "P15", "P16", "P17", "P18", "P19", "P21", "P22"}


def test_parser_text_dump_gets_the_same_insights_as_its_log(traced, tmp_path):
    from iosight.darshan import read_source, write_parser_text

    wh, keys = traced
    log = wh.sql("select source_path from jobs where job_key = ?", [keys["unequal_ranks"]])
    _, tables = read_source(log["source_path"][0])
    dump = tmp_path / "unequal.txt"
    write_parser_text(tables, dump, exact=True)
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


# SYNTHETIC job-total tables: the published layout, made-up jobs. One table holds
# Darshan's SEQ/CONSEC counters, the other (like the Summit CSV) does not.
FULL = (
    "jobid,nprocs,start_time,end_time,total_POSIX_OPENS,total_POSIX_READS,"
    "total_POSIX_WRITES,total_POSIX_SEQ_READS,total_POSIX_CONSEC_READS,total_POSIX_BYTES_READ\n"
    "1,4,1600000000,1600000100,8,5000,0,0,0,5000000\n"
)
SLIM = (
    "jobid,nprocs,start_time,end_time,total_POSIX_OPENS,total_POSIX_READS,"
    "total_POSIX_WRITES,total_POSIX_BYTES_READ,total_STDIO_BYTES_WRITTEN\n"
    "2,4,1600000000,1600000100,8,5000,0,5000000,\n"  # POSIX reads, no SEQ counter
    "3,4,1600000000,1600000100,,,,,100\n"  # no POSIX at all: nothing to judge
    "4,,1600000000,1600000100,8,5000,0,5000000,\n"  # process count not known
)


@pytest.fixture
def two_tables(tmp_path, warehouse):
    (tmp_path / "full.csv").write_text(FULL)
    (tmp_path / "slim.csv").write_text(SLIM)
    assert ingest([tmp_path / "full.csv", tmp_path / "slim.csv"], warehouse, workers=1).ok
    compute_insights(warehouse)
    return warehouse


def _by_jobid(wh) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    """Per jobid: the codes found, and the codes not evaluated."""
    found = wh.sql("select j.jobid, i.code from insights i join jobs j using (job_key)")
    blind = wh.sql(
        "select j.jobid, i.not_evaluated from insights_jobs i join jobs j using (job_key)"
    )
    codes = {int(k): set(g["code"]) for k, g in found.groupby("jobid")}
    missing = {int(k): set(filter(None, v.split(","))) for k, v in blind.values}
    return codes, missing


def test_a_missing_counter_makes_its_rules_not_evaluated_never_fired(two_tables):
    codes, missing = _by_jobid(two_tables)
    assert "P11" in codes[1] and "P11" not in missing[1]  # all 5000 reads random
    # the same reads without SEQ counters: not "100% random", not "sequential" either
    assert not {"P11", "P12"} & codes.get(2, set())
    assert {"P11", "P12"} <= missing[2]
    assert "P02" in codes[2]  # reads and writes are there: read-intensive is judged
    # a job that did no POSIX I/O has nothing to judge: evaluated, nothing fires
    assert not {"P11", "P12"} & (missing[3] | codes.get(3, set()))
    # an unknown process count neither fires "parallel job without MPI-IO" nor passes it
    assert "M01" in codes[2] and "M01" in missing[4] and "M01" not in codes.get(4, set())


def test_a_job_and_the_facility_view_say_what_a_rule_lacks(two_tables):
    key = two_tables.sql("select job_key from jobs where jobid = 2")["job_key"][0]
    lacks = job_insights(two_tables, key).not_evaluated.set_index("code")["needs"]
    assert "POSIX_SEQ_READS" in lacks["P11"]
    assert "POSIX_CONSEC_READS" in lacks["P12"]
    view = facility_view(two_tables)
    row = view.not_evaluated.set_index("code").loc["P11"]
    assert row["jobs"] == 2 and "POSIX_SEQ_READS" in row["needs"]  # jobs 2 and 4


def test_the_facility_view_joins_under_duckdbs_memory_limit(two_tables):
    """Its join of every finding with every job held 766 MB at a million jobs, 352 MB
    under the limit; the connection's own limit holds again afterwards."""
    import duckdb

    from iosight.warehouse import JOIN_MEMORY

    con = two_tables.connect()
    con.execute("set memory_limit = '2GiB'")
    rows, seen = two_tables.rows, set()

    def noting(query, params=None):
        seen.add(con.execute("select current_setting('memory_limit')").fetchall()[0][0])
        return rows(query, params)

    two_tables.rows = noting
    assert facility_view(two_tables).jobs == 4
    probe = duckdb.connect()
    probe.execute(f"set memory_limit = '{JOIN_MEMORY}'")
    limit = probe.execute("select current_setting('memory_limit')").fetchall()[0][0]
    assert seen == {limit} != {"2.0 GiB"}
    assert con.execute("select current_setting('memory_limit')").fetchall()[0][0] == "2.0 GiB"


def test_the_summit_csv_fires_only_what_its_parquet_files_fire(shared, tmp_path):
    """The Summit CSV holds 27 of the data set's 473 counters. Read as 0, its missing SEQ
    counters made nearly every read random: P11 fired on 2,496 of App1's 2,884 jobs
    from the CSV against 1,304 from the Parquet file of the same jobs."""
    import pandas as pd

    root = shared("datasets", "summit_darshan_total_2021")
    rows = pd.read_csv(root / "summit2021_jobs_slim.csv.gz")
    csv = tmp_path / "app1.csv"
    rows[rows["app"] == "App1"].to_csv(csv, index=False)
    sources = {"csv": csv, "parquet": root / "darshan_total" / "App1.parquet"}
    whs = {name: Warehouse(tmp_path / name, create=True) for name in sources}
    for name, wh in whs.items():
        assert ingest([sources[name]], wh, workers=1).ok
        compute_insights(wh)
    job = "j.jobid, j.start_time"  # one job of App1 each (checked: no two share both)
    found = {
        name: set(
            wh.sql(
                f"select {job}, i.code, i.level from insights i join jobs j using (job_key)"
            ).itertuples(index=False, name=None)
        )
        for name, wh in whs.items()
    }
    assert len(found["csv"]) > 10000
    assert found["csv"] <= found["parquet"]
    assert any(f[2] == "P11" for f in found["parquet"])
    blind = {
        name: wh.sql(
            f"select {job}, j.modules, i.not_evaluated "
            "from insights_jobs i join jobs j using (job_key)"
        )
        for name, wh in whs.items()
    }
    no_seq_sizes_alignment = {"P05", "P06", "P07", "P08", "P11", "P12", "P13", "P14"}
    no_nonblocking = {"M06", "M07"}
    for name, df in blind.items():
        codes = df["not_evaluated"].str.split(",").map(set)
        posix = df["modules"].str.contains("POSIX")
        mpiio = df["modules"].str.contains("MPI-IO")
        assert posix.sum() > 2800 and mpiio.sum() > 2700
        if name == "csv":
            assert all(no_seq_sizes_alignment <= c for c in codes[posix])
            assert all(no_nonblocking <= c for c in codes[mpiio])
        else:
            assert not any((no_seq_sizes_alignment | no_nonblocking) & c for c in codes)


def test_synthetic_jobs_beside_real_ones_are_labelled_apart(traced, tmp_path):
    """A SYNTHETIC facility added to a warehouse of real traced jobs: the facility view
    says the data are mixed, and lists a synthetic application only with its label."""
    import shutil

    from iosight.synth.facility import FacilityConfig, generate_facility

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
