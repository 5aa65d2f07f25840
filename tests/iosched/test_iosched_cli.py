"""The ``iosight iosched`` commands and the report, end to end on small inputs."""

import pandas as pd

from iosight.iosched import conclusions, load_results
from iosight.report.iosched import write_report
from tests_support import cli

APPS = "example-apps"  # shipped with iosight, found by name


def test_allocate_and_simulate_commands():
    r = cli("iosched allocate", APPS, "-N 4 --format csv")
    assert r.exit_code == 0, r.output
    assert "climate" in r.output and "io_stress" in r.output
    r = cli("iosched simulate", APPS, "-N 4 --allocator BestBdw --format csv")
    assert r.exit_code == 0, r.output
    assert "mean_slowdown" in r.output


def test_the_shipped_example_is_found_by_name_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the checkout: the example comes from the package
    for command in ("allocate", "simulate"):
        r = cli("iosched", command, APPS, "-N 4 --format csv")
        assert r.exit_code == 0 and "climate" in r.output, r.output
    r = cli("iosched allocate example-app")
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "no application file 'example-app'" in r.output and "example-apps" in r.output
    mine = tmp_path / "example-apps.yaml"  # a file of that name is read, not the example
    mine.write_text("apps: [{q: 1}]\n")
    r = cli("iosched allocate example-apps.yaml")
    assert r.exit_code == 1 and "example-apps.yaml: app 0 lacks" in r.output


def test_bad_input_is_one_line_and_exit_1(tmp_path):
    r = cli("iosched allocate", APPS, "--allocator foo")
    assert r.exit_code == 1 and "unknown allocator" in r.output
    bad = tmp_path / "a.yaml"
    bad.write_text("apps: [{q: 1}]\n")
    r = cli("iosched simulate", bad)
    assert r.exit_code == 1 and "lacks" in r.output
    r = cli("iosched experiment --out", tmp_path, "--loads x")
    assert r.exit_code == 1 and "loads" in r.output


def test_experiment_and_report(tmp_path):
    out = tmp_path / "res"
    args = ["iosched", "experiment", "--dataset", "ost", "--loads", "0.3,1.2", "--sets", "3"]
    r = cli(args, "--workers 1 --out", out)
    assert r.exit_code == 0, r.output
    df = load_results(out)
    page = write_report(df, tmp_path / "rep", min_sets=1)
    assert page == tmp_path / "rep" / "iosched.html" and page.exists()
    assert len(list(page.parent.glob("*.png"))) >= 8
    findings = conclusions(df, min_sets=1)
    assert len(findings) >= 15
    assert {f.verdict for f in findings} <= {"yes", "NO", "undecided", "n/a"}
    assert pd.read_csv(tmp_path / "rep" / "conclusions.csv").shape[0] == len(findings)


def test_report_on_a_study_too_small_for_some_load_ranges(tmp_path):
    """One mid load only: no run at low or high load, too few sets per bin for robustness."""
    out = tmp_path / "res"
    args = ["iosched", "experiment", "--dataset", "ost", "--loads", "0.6", "--sets", "1"]
    assert cli(args, "--workers 1 --out", out).exit_code == 0
    r = cli("iosched report", out, "--out", tmp_path / "rep")
    assert r.exit_code == 0, r.output
    table = pd.read_csv(tmp_path / "rep" / "conclusions.csv", keep_default_na=False)
    robust = table[table["claim"].str.contains("profile curves")]
    assert len(robust) == 3 and (robust["holds"] == "n/a").all()


def test_experiment_typo_then_corrected_run_in_the_same_folder(tmp_path):
    out = ["--out", str(tmp_path / "ex1"), "--loads", "0.5", "--sets", "1", "--workers", "1"]
    args = ["iosched", "experiment", "--dataset", "ost", "--no-robustness", *out]
    r = cli(args, "--statistic best2")
    assert r.exit_code == 1 and "statistic" in r.output and "Traceback" not in r.output
    r = cli(args, "--statistic best")
    assert r.exit_code == 0, r.output
    assert "1 tasks run" in r.output


def test_allocate_with_mckp_as_placement_only_names_mckp():
    args = ["iosched", "allocate", str(APPS), "--allocator", "TCPU", "--placement", "mckp"]
    r = cli(args)
    assert r.exit_code == 1 and "MCKP allocates and places at once" in r.output
