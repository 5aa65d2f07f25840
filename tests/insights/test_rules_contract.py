"""The rule contract, checked on every :data:`~iosight.insights.RULES` entry (as
scikit-learn's ``test_common.py`` checks every estimator): each rule has a code, a
family and a title, evaluates the real example logs' jobs into findings of the shared
shape, and says "not evaluated" rather than judging a job whose data lacks what it
needs (no finding for such a job)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from iosight._registry import Registry
from iosight.insights import NEEDS, RULES, Thresholds, _evaluate
from iosight.insights._evaluate import evaluate
from iosight.insights._frame import JobData, load
from iosight.insights._rules import FINDING_COLUMNS
from tests_support import summit_totals

T = Thresholds()
TOTALS_RULES = [c for c, r in RULES.items() if r.needs == "totals"]


@pytest.fixture(scope="module")
def examples(example_warehouse) -> JobData:
    """The rules' frames of every job of PyDarshan's example logs (real)."""
    return load(example_warehouse, example_warehouse.jobs()["job_key"].tolist(), T)


@pytest.fixture(scope="module")
def evaluated(examples):
    """Every rule's findings on the example jobs, and the per-job rows."""
    return evaluate(examples, T)


def _evaluate_only(code: str, data: JobData, monkeypatch):
    """:func:`evaluate` with rule ``code`` alone registered (the others cost time here)."""
    one = Registry("insight rule")
    one.register(code)(RULES.get(code))
    monkeypatch.setattr(_evaluate, "RULES", one)
    return evaluate(data, T)


def _not_evaluated(per_job, code: str) -> np.ndarray:
    return np.array([code in codes.split(",") for codes in per_job["not_evaluated"]], bool)


def _judged(found, code: str) -> set[str]:
    return set(found["job_key"][found["code"] == code])


@pytest.mark.parametrize("code", RULES.names())
def test_says_what_it_is(code):
    r = RULES.get(code)
    assert r.code == code and re.fullmatch(r"[MPS]\d\d", code)
    assert r.family and r.title and r.needs in NEEDS and r.needs_text()


@pytest.mark.parametrize("code", RULES.names())
def test_evaluates_real_jobs_into_findings(code, examples):
    got = RULES.get(code).evaluate(examples, T)
    assert set(got.columns) == set(FINDING_COLUMNS) - {"code", "family"}
    assert set(got["job_key"]) <= set(examples.jobs["job_key"])
    assert set(got["level"]) <= {"high", "warn", "info", "ok"}


@pytest.mark.parametrize("code", TOTALS_RULES)
def test_a_job_lacking_its_counters_is_not_evaluated(code, examples, evaluated, monkeypatch):
    """The real jobs with this rule's counters blanked, as a job-total table that does
    not hold them reads: the jobs that used their module are listed, none is judged."""
    blank = examples.jobs.copy()
    for counter in RULES.get(code).counters:
        blank[counter] = np.full(len(blank), np.nan)
    assert not _not_evaluated(evaluated[1], code).any()  # the logs hold them
    found, per_job = _evaluate_only(code, JobData(blank, examples.files, examples.dxt), monkeypatch)
    listed = _not_evaluated(per_job, code)
    assert listed.any()
    assert not _judged(found, code) & set(per_job["job_key"][listed])


def test_jobs_without_records_get_no_record_rule(tmp_path):
    """Summit's job-total table (real) holds no per-file records: every active job lists
    the record rules and gets none of their findings."""
    from iosight.warehouse import Warehouse, ingest

    wh = Warehouse(tmp_path / "wh", create=True)
    assert ingest([summit_totals(tmp_path)], wh, workers=1).ok
    found, per_job = evaluate(load(wh, wh.jobs()["job_key"].tolist(), T), T)
    for code, r in RULES.items():
        if r.needs == "records":
            assert _not_evaluated(per_job, code).sum() > 0, code
            assert not _judged(found, code), code


def test_mpiio_jobs_are_not_judged_on_nodes_they_do_not_record(examples, evaluated):
    found, per_job = evaluated
    mpiio = examples.jobs.contains("modules", "MPI-IO")
    assert mpiio.any()
    for code, r in RULES.items():
        if r.needs == "nodes":
            assert (_not_evaluated(per_job, code) == mpiio).all(), code
            assert not _judged(found, code) & set(per_job["job_key"][mpiio]), code
