"""`iosight job --format json`: the whole summary as one document, valid against the
JSON Schema that docs/job.md gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from iosight.cli import app
from iosight.data import example_logs

runner = CliRunner()
DOC = Path(__file__).resolve().parents[2] / "docs" / "job.md"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    """The schema of docs/job.md (its one ``json`` block), checked to be a schema."""
    (block,) = re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S)
    schema = json.loads(block)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _document(log: Path, fmt: str = "json") -> dict:
    result = runner.invoke(app, ["job", str(log), "--format", fmt])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("log", example_logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_log_gives_a_document_valid_against_the_schema(validator, log):
    doc = _document(log)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert errors == []


def test_the_document_holds_the_summary_and_its_insights(validator):
    """example.darshan (real, 2048 ranks writing one shared file): every section present,
    raw values (bytes as integers, seconds), the same as the library's summary."""
    from iosight.insights import job_insights
    from iosight.warehouse import job_summary, log_warehouse

    log = next(p for p in example_logs() if p.name == "example.darshan")
    doc = _document(log)
    with log_warehouse(log) as wh:
        s = job_summary(wh, "4478544")
        found = job_insights(wh, s.job["job_key"])
    assert doc["job"]["jobid"] == 4478544 and doc["job"]["nprocs"] == 2048
    assert [m["module"] for m in doc["modules"]] == list(s.modules["module"])
    (f,) = doc["files"]
    assert f["ranks"] == 2048 and f["bytes_written"] == 2199023259968
    assert f["io_time_per_rank"] == pytest.approx(f["io_time"] / 2048)
    assert len(doc["osts"]) == 24 and len(doc["access_sizes"]) == 4
    codes = [x["code"] for x in doc["insights"]["findings"]]
    assert codes == list(found.findings["code"]) and "P08" in codes
    p08 = doc["insights"]["findings"][codes.index("P08")]
    assert isinstance(p08["evidence"], dict) and p08["stake_s"] > 1e5
    assert [x["code"] for x in doc["insights"]["not_evaluated"]] == ["M08"]
    # JSON Lines: the same document on one line
    one = runner.invoke(app, ["job", str(log), "--format", "jsonl"]).stdout
    assert one.count("\n") == 1 and json.loads(one) == doc


def test_the_schema_refuses_what_the_docs_do_not_promise(validator):
    log = next(p for p in example_logs() if p.name == "ior_hdf5_example.darshan")
    doc = _document(log)
    assert validator.is_valid(doc)
    for broken in (
        {k: v for k, v in doc.items() if k != "files"},
        {**doc, "files": [{**doc["files"][0], "ranks": "4"}]},
        {**doc, "modules": [{**doc["modules"][0], "bytes": 1}]},
    ):
        assert not validator.is_valid(broken)


def test_csv_is_refused_in_one_line_before_any_work(tmp_path):
    result = runner.invoke(app, ["job", "1", "-w", str(tmp_path / "none"), "-f", "csv"])
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "several tables" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "none").exists()
