import pytest
from typer.testing import CliRunner

from iosight.cli import app

runner = CliRunner()


def _ok(*args):
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def test_cli_end_to_end(tmp_path):
    from iosight.bursts import describe_choice, load_forecaster
    from iosight.warehouse import Warehouse

    wh = str(tmp_path / "wh")
    w = ["-w", wh]
    out = _ok("synth", "facility", *w, "--months", "0.4", "--jobs-per-day", "200", "--seed", "2")
    assert "synthetic facility" in out
    assert "bins of 5 min," in _ok("timeline", "build", *w, "--bin", "5min")
    months = _ok("timeline", "show", *w, "--rebin", "month", "--format", "csv")
    assert months.count("\n") == 2  # header and January 2024
    assert "write" in _ok("bursts", "analyze", *w)
    train = "--models tree --horizons 5,15 --direction write --search-iter 1 --mode interval"
    out = _ok("bursts", "train", *w, *train.split(), "--format", "csv")
    assert "persistence" in out and "time_of_day" in out
    header = next(line for line in out.splitlines() if line.startswith("information,direction,"))
    assert ",f1,f1_gain,skill," in header and "f1_weighted" in header
    assert "saved bursts-write-interval, per lead (5-minute bins) chosen on validation: 1: " in out
    # off a terminal the scores, once 480-character lines with headers one letter per line,
    # are one record per block with every header whole
    scores = _ok("sql", "select * from burst_evaluation", *w)
    assert "(one record per block)" in scores and "\n[1]\n" in scores
    assert "\nhorizon_min " in scores and "\nf1_weighted " in scores
    # defaults: lead mode, feature set 4 (the synthetic jobs' state); both regimes, the
    # known-at sums of logs computed by the command and never stored
    train = ["bursts", "train", *w, "--models", "tree", "--horizons", "5,30", "--direction",
             "write", "--format", "csv"]  # fmt: skip
    r = runner.invoke(app, [*train, "--information", "hindsight"])
    assert r.exit_code == 1 and "'live' or 'logs'" in r.output and "Traceback" not in r.output
    tables = sorted(p.name for p in (tmp_path / "wh" / "tables").iterdir())
    out = _ok(*train, "--information", "live,logs")
    assert sorted(p.name for p in (tmp_path / "wh" / "tables").iterdir()) == tables
    assert out.count(",chosen,") == 1 + 4 and "saved bursts-write, per lead" in out  # header
    header = next(line for line in out.splitlines() if line.startswith("information,"))
    assert "known_share" in header and "nowcast_corr" in header
    assert out.count("\nlogs,write,4,lead,") == 2 * 5  # 2 horizons: 3 baselines, tree, chosen
    assert out.count(",nowcast,") == 2 and out.count("\nlive,write,4,lead,") == 2 * 4
    assert "saved bursts-write-logs, per lead" in out
    md = load_forecaster(Warehouse(wh), "bursts-write-logs").metadata
    assert md["information"] == "logs" and md["features"][-1] == "nowcast"
    p = _ok("bursts", "predict", *w, "--model", "bursts-write-logs", "--at",
            "2024-01-05 12:00", "--format", "csv")  # fmt: skip
    assert p.startswith("lead,bin_start,burst,probability,severity") and p.count("\n") == 25
    lead = _ok("bursts", "predict", *w, "--at", "2024-01-05 12:00", "--features", "4")
    # the title names what predicts each lead (as saved), never a candidate it did not keep
    saved = load_forecaster(Warehouse(wh), "bursts-write").metadata["chosen"]
    title = f"bursts-write: {describe_choice(saved)} (lead mode, per lead)"
    assert title in " ".join(lead.split())  # the table's title may wrap
    at = ["--at", "2024-01-05 12:00", "--model", "bursts-write-interval"]
    (kept,) = load_forecaster(Warehouse(wh), "bursts-write-interval").metadata["chosen"].values()
    titles = [line.strip() for line in _ok("bursts", "predict", *w, *at).splitlines()]
    assert f"bursts-write-interval: {kept} (interval mode, the next 5 min)" in titles
    out = _ok("bursts", "predict", *w, *at, "--format", "csv")
    assert out.startswith("lead,bin_start,burst,probability,severity")
    assert out.splitlines()[1].startswith("1,1704456300.0,")  # 12:05, the next 5-min bin
    _ok("bursts", "report", *w, "--out", str(tmp_path / "rep"))
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "SYNTHETIC" in page and "Fig. 7" in page and page.count("<img") >= 4
    assert "How far a forecast from time t can go" in page


@pytest.mark.parametrize(
    "args, message",
    [
        (["bursts", "analyze"], "no 'timeline' table"),
        (["bursts", "predict"], "no model 'bursts-write'"),
        (["timeline", "build", "--bin", "five"], "cannot read duration"),
        (["timeline", "build", "--spread", "even"], "spread"),
    ],
)
def test_cli_errors_are_one_line(tmp_path, args, message):
    import pyarrow as pa

    from iosight.warehouse import Warehouse

    wh = Warehouse(tmp_path / "wh", create=True)
    wh.commit({"jobs": [pa.table({"job_key": ["a"], "start_time": [0.0], "end_time": [1.0]})]})
    r = runner.invoke(app, [*args, "-w", str(wh.path)])
    assert r.exit_code == 1 and message in r.output and "Traceback" not in r.output


def test_mostly_empty_timeline_has_no_burst_threshold(tmp_path, example_warehouse):
    """PyDarshan's example logs (real) span 2017-2023: their hourly timeline is nearly all
    empty, so a threshold for 1% bursts would be 0 B; analyze and train refuse in one line."""
    import shutil

    w = ["-w", str(shutil.copytree(example_warehouse.path, tmp_path / "wh"))]  # written below
    _ok("timeline", "build", *w, "--bin", "1h")
    train = ["bursts", "train", "--models", "logreg", "--horizons", "60"]
    for args in (["bursts", "analyze"], train):
        r = runner.invoke(app, [*args, *w])
        errors = [line for line in r.output.splitlines() if line.startswith("error:")]
        assert r.exit_code == 1 and len(errors) == 1 and "Traceback" not in r.output
        assert " bytes per " in errors[0] and " bin has no bursts to find: " in errors[0]
        assert "bins are empty and the threshold for 1% bursts is not above the mean" in errors[0]
