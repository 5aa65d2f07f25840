"""`iosight data`: fetching pinned files from a mirror, refusing corrupted ones."""

from __future__ import annotations

import hashlib
import shutil

import pytest
from typer.testing import CliRunner

from data_server import serve
from iosight.cli import app
from iosight.data import DATASETS, dataset_path, locate

runner = CliRunner()


@pytest.fixture
def mirror(shared, monkeypatch, tmp_path):
    """``../shared/datasets`` served over HTTP as the data mirror; an empty data dir."""
    root = shared("datasets")
    monkeypatch.setenv("IOSIGHT_DATA", str(tmp_path / "data"))
    with serve(root) as url:
        monkeypatch.setenv("IOSIGHT_DATA_URL", url)
        yield root


def test_every_file_is_pinned_to_a_commit_with_a_sha256(shared):
    root = shared("datasets")
    for ds in DATASETS.values():
        assert ds.files, ds.name
        for f in ds.files:
            assert len(f.commit) == 40 and f.commit in f.url and f.repo in f.url
            digest = hashlib.sha256((root / f.path).read_bytes()).hexdigest()
            assert digest == f.sha256, f.path


def test_fetch_from_a_mirror_then_commands_find_the_data(mirror, tmp_path):
    missing = runner.invoke(
        app, ["similarity", "import-codings", "coding_job_abs_mode_False.csv", "-w", "wh"]
    )
    assert missing.exit_code == 1 and "iosight data fetch dkrz-codings" in missing.output
    result = runner.invoke(app, ["data", "fetch", "dkrz-codings", "forge-bandwidth"])
    assert result.exit_code == 0, result.output
    folder = dataset_path("dkrz-codings")
    assert (folder / "coding_job_abs_mode_False.csv").read_bytes() == (
        mirror / "dkrz_mistral_bcoding_100k" / "coding_job_abs_mode_False.csv"
    ).read_bytes()
    listing = runner.invoke(app, ["data", "list", "-f", "csv"]).stdout
    here = {line.split(",")[0]: line.split(",")[2] for line in listing.splitlines()[1:]}
    assert here["dkrz-codings"] == "yes" and here["forge-bandwidth"] == "yes"
    assert here["summit-2021"] == "0/25"
    assert locate("coding_job_abs_mode_False.csv") == folder / "coding_job_abs_mode_False.csv"
    wh = str(tmp_path / "wh")
    imported = runner.invoke(
        app, ["similarity", "import-codings", "coding_job_abs_mode_False.csv", "-w", wh]
    )
    assert imported.exit_code == 0 and "100000 jobs imported" in imported.output
    path = runner.invoke(app, ["data", "path", "forge-bandwidth"])
    assert path.stdout.strip() == str(dataset_path("forge-bandwidth"))


def test_iosched_finds_fetched_forge_data(mirror, monkeypatch):
    from iosight.iosched._experiment import default_forge_dir, resolve_curves

    monkeypatch.delenv("IOSIGHT_SHARED", raising=False)
    runner.invoke(app, ["data", "fetch", "forge-bandwidth"])
    assert default_forge_dir() == dataset_path("forge-bandwidth")
    assert len(resolve_curves("io-nodes").names) == 189


def test_a_corrupted_file_is_refused_and_not_kept(shared, monkeypatch, tmp_path):
    src = shared("datasets", "bez_forge_io_forwarding_bandwidth")
    bad = tmp_path / "mirror" / src.name
    shutil.copytree(src, bad)
    target = bad / "santos-dumont.results.csv"
    target.write_bytes(target.read_bytes().replace(b";", b",", 1))
    monkeypatch.setenv("IOSIGHT_DATA", str(tmp_path / "data"))
    with serve(tmp_path / "mirror") as url:
        monkeypatch.setenv("IOSIGHT_DATA_URL", url)
        result = runner.invoke(app, ["data", "fetch", "forge-bandwidth"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "santos-dumont.results.csv: download refused" in result.output
    assert not (tmp_path / "data" / src.name / "santos-dumont.results.csv").exists()


def test_unknown_names_and_missing_data_say_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("IOSIGHT_DATA", str(tmp_path / "empty"))
    result = runner.invoke(app, ["data", "fetch", "summit2021"])
    assert result.exit_code == 1 and "summit-2021" in result.output  # a suggestion
    result = runner.invoke(app, ["data", "path", "tokio-abc"])
    assert result.exit_code == 1 and "iosight data fetch tokio-abc" in result.output
    with pytest.raises(Exception, match="iosight data fetch tokio-abc"):
        locate("cori-summaries_2017-02-14-2018-02-15.csv.gz")
