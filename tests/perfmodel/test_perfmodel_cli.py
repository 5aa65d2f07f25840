"""The ``iosight perfmodel`` commands end to end (small inputs)."""

from __future__ import annotations

from tests_support import cli


def test_platform_show_and_features():
    res = cli("perfmodel platform show cetus --format csv")
    assert res.exit_code == 0 and "NSD server,48" in res.output
    res = cli("perfmodel features titan -n 256 -m 8 --size 1GiB --stripes 4 --format csv")
    assert res.exit_code == 0
    assert len(res.output.strip().splitlines()) == 31  # header + 30 features
    bad = cli("perfmodel features titan -n 0 -m 8 --size 1GiB")
    assert bad.exit_code == 1 and "nodes" in bad.output


def test_stripes_zero_is_the_documented_default():
    base = ["perfmodel", "features", "titan", "-n", "4", "-m", "2", "-K", "8MiB", "-f", "csv"]
    default, zero = cli(base), cli(base, "-W 0")
    assert default.exit_code == zero.exit_code == 0 and zero.output == default.output
    one = cli(base, "-W 1")  # titan's default is 4
    assert one.exit_code == 0 and one.output != default.output
    helptext = " ".join(cli("perfmodel features --help").output.split())
    assert "omitted or 0: the platform's default" in helptext.replace("│ ", "")


def test_synth_samples_fit_predict_plan_report(tmp_path):
    samples = tmp_path / "s.parquet"
    res = cli(
        "synth writes --platform titan --out",
        samples,
        "--runs",
        tmp_path / "runs.csv",
        "--patterns-per-scale 8 --scales 1,2,4,8,200,256 --seed 1",
    )
    assert res.exit_code == 0, res.output
    assert "SYNTHETIC" in res.output
    # runs CSV -> samples again through 'perfmodel samples'
    res = cli(
        "perfmodel samples --platform titan --runs",
        tmp_path / "runs.csv",
        "--out",
        tmp_path / "s2.csv",
    )
    assert res.exit_code == 0, res.output
    model = tmp_path / "model"
    res = cli(
        "perfmodel fit --samples",
        samples,
        "--platform titan --out",
        model,
        "--min-time 0.5 --format csv",
    )
    assert res.exit_code == 0, res.output
    assert (model / "metadata.json").exists() and (model / "coefficients.csv").exists()
    res = cli("perfmodel predict --model", model, "-n 256 -m 8 -K 1GiB -W 4")
    assert res.exit_code == 0 and "predicted mean write time" in res.output
    res = cli(
        "perfmodel plan --model",
        model,
        "-n 256 -m 8 -K 1GiB -W 4 --compute-time 86400 --format csv",
    )
    assert res.exit_code == 0 and "interval_s" in res.output
    res = cli("perfmodel report --model", model, "--out", tmp_path / "rep")
    assert res.exit_code == 0 and (tmp_path / "rep" / "index.html").exists()
    assert "synthetic" in (tmp_path / "rep" / "index.html").read_text()
    res = cli("perfmodel predict --model", tmp_path, "-n 1 -m 1 -K 1MiB")
    assert res.exit_code == 1 and "model directory" in res.output


def test_tokio_samples(shared, tmp_path):
    mira = shared(
        "datasets", "tokio_abc_year_in_life", "mira-summaries_2017-02-14_2018-02-15.csv.gz"
    )
    res = cli("perfmodel samples --tokio", mira, "--out", tmp_path / "mira.csv", "--format csv")
    assert res.exit_code == 0, res.output
    assert "mira/mira-fs1,ior" in res.output and "mira/mira-fs1,hacc_io_write" in res.output


def test_a_bad_format_is_refused_before_any_work(tmp_path):
    for args in (
        ["report", "--model", str(tmp_path / "m"), "-o", str(tmp_path / "r")],
        ["fit", "-s", str(tmp_path / "s.parquet"), "-p", "titan", "-o", str(tmp_path / "m")],
        ["samples", "--runs", str(tmp_path / "runs.csv"), "-p", "titan"],
    ):
        res = cli("perfmodel", args, "-f bogus")
        assert res.exit_code == 1, args
        assert "the 'format' option must be table, csv, json or jsonl" in res.output, args
    assert not (tmp_path / "r").exists() and not (tmp_path / "m").exists()
