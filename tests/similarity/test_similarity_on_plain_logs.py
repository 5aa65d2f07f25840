"""Similarity on real logs with little time-resolved I/O: every step says what it has."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from iosight.cli import app
from iosight.similarity import find_similar
from iosight.warehouse import Warehouse

runner = CliRunner()


@pytest.fixture(scope="module")
def wh(example_warehouse, tmp_path_factory):
    """A copy of the example logs' warehouse (the tests add similarity tables)."""
    copy = tmp_path_factory.mktemp("plain") / "wh"
    return Warehouse(shutil.copytree(example_warehouse.path, copy))


def test_series_counts_jobs_with_time_resolved_io(wh):
    out = runner.invoke(app, ["similarity", "series", "-w", str(wh.path)]).output
    timed = [f"select job_key from {t}" for t in ("dxt_posix", "heatmap") if wh.has_table(t)]
    q = f"select count(distinct job_key) n from ({' union '.join(timed)})"
    expected = int(wh.sql(q)["n"][0])
    assert 0 < expected < len(wh.sql("select * from sim_jobs"))
    assert f"{expected} with time-resolved I/O" in out
    assert "have no DXT or HEATMAP" in out


def test_find_never_lists_unrelated_jobs_and_report_renders(wh, tmp_path):
    runner.invoke(app, ["similarity", "series", "-w", str(wh.path)])
    runner.invoke(app, ["similarity", "cluster", "-w", str(wh.path)])
    codings = wh.sql(
        "select job_key, jobid from sim_codings where coding = 'bin-aggzeros' and not zero"
    )
    lonely = 0
    for key in codings["job_key"]:
        df = find_similar(wh, key, top=20)
        assert (df["similarity"] > 0).all()
        assert len(df) + df.attrs["unrelated"] == df.attrs["compared"]
        lonely += df.empty
    assert lonely > 0  # on these logs some job shares no phase with any other
    key = next(k for k in codings["job_key"] if find_similar(wh, k).empty)
    out = runner.invoke(app, ["similarity", "find", key, "-w", str(wh.path)]).output
    assert "no job shares an I/O phase" in out and "rank" not in out
    result = runner.invoke(
        app, ["similarity", "report", "-w", str(wh.path), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    page = (tmp_path / "similarity.html").read_text()
    assert "The warehouse's jobs" in page and "time-resolved" in page


def test_find_compares_only_jobs_of_the_same_source(shared, tmp_path, example_warehouse):
    """Real Darshan logs and real DKRZ codings (their first 3,000 jobs) in one warehouse:
    a log's similar jobs are logs, never DKRZ jobs whose codes merely look alike."""
    from iosight.similarity import import_codings, series_from_darshan

    dkrz = shared("datasets", "dkrz_mistral_bcoding_100k", "coding_job_abs_mode_False.csv")
    head = tmp_path / "dkrz-head.csv"
    head.write_text("\n".join(dkrz.read_text().splitlines()[:3001]) + "\n")
    mixed = Warehouse(shutil.copytree(example_warehouse.path, tmp_path / "wh"))
    series_from_darshan(mixed)
    import_codings(mixed, head)
    sources = dict(mixed.sql("select job_key, source from sim_jobs").values)
    logs = mixed.sql(
        "select job_key from sim_codings join sim_jobs using (job_key) "
        "where coding = 'bin-aggzeros' and not zero and source = 'darshan'"
    )["job_key"]
    assert len(logs) > 0
    for key in logs:
        found = find_similar(mixed, key, top=20)
        assert {sources[k] for k in found["job_key"]} <= {"darshan"}, key
        assert found.attrs["source"] == "darshan"
