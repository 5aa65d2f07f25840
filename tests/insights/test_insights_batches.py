"""A run's batches: the same results whatever their size, and no per-batch cost that
grows with the warehouse (the views of the tables read are made once, not per batch)."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from iosight._errors import IosightError
from iosight._progress import NullProgress
from iosight.insights import _compute, compute_insights
from iosight.insights._frame import READS
from iosight.insights._names import FINDINGS_TABLE, JOBS_TABLE, RULES_TABLE
from iosight.warehouse import Warehouse


def _copy(wh: Warehouse, to) -> Warehouse:
    """A copy of ``wh`` without stored insights."""
    shutil.copytree(wh.path, to)
    for name in (FINDINGS_TABLE, JOBS_TABLE, RULES_TABLE):
        shutil.rmtree(to / "tables" / name, ignore_errors=True)
    return Warehouse(to)


def test_views_of_the_tables_read_are_made_once_per_run(traced, tmp_path, monkeypatch):
    wh = _copy(traced[0], tmp_path / "wh")
    made: Counter[str] = Counter()
    make = Warehouse._make_views

    def counted(self, con, names):
        names = list(names)
        made.update(names)
        return make(self, con, names)

    monkeypatch.setattr(Warehouse, "_make_views", counted)
    run = compute_insights(wh, batch_jobs=1)
    assert run.evaluated == len(traced[1]) > 2  # several batches, each a commit
    read = {name: made[name] for name in READS if wh.has_table(name)}
    assert read and set(read.values()) == {1}, made


@pytest.mark.parametrize("batch", [{"batch_jobs": 1}, {"batch_rows": 1}])
def test_results_do_not_depend_on_the_batch_size(traced, tmp_path, monkeypatch, batch):
    one = _copy(traced[0], tmp_path / "one")
    all_ = _copy(traced[0], tmp_path / "all")
    monkeypatch.setattr(_compute, "KEYS_AHEAD", 2)  # keys taken two batches at a time
    assert compute_insights(one, **batch).evaluated > 2 * 2
    compute_insights(all_, batch_jobs=5000)
    for name in (FINDINGS_TABLE, JOBS_TABLE):
        a = f"read_parquet('{one.path}/tables/{name}/*.parquet', union_by_name=true)"
        b = f"read_parquet('{all_.path}/tables/{name}/*.parquet', union_by_name=true)"
        rows = one.rows(f"select count(*) from {a}").values[0][0]
        assert rows > 0
        for x, y in ((a, b), (b, a)):
            left = one.rows(
                f"select count(*) from (select * from {x} except all select * from {y})"
            )
            assert left.values[0][0] == 0, name


def test_stored_results_merge_without_a_sort(traced, tmp_path):
    """Each batch's files hold their rows in job key order, so a compaction merges the
    batches' files as sorted runs rather than by DuckDB's sort."""
    from iosight.warehouse._merge import sorted_runs

    wh = _copy(traced[0], tmp_path / "wh")
    compute_insights(wh, batch_jobs=3)
    for name in (FINDINGS_TABLE, JOBS_TABLE):
        files = wh.table_files(name)
        assert len(files) > 1, name
        assert sorted_runs(files, ["job_key"]) is not None, name


class _Batches(NullProgress):
    """The jobs of each batch, as ``compute_insights`` reports them."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def advance(self, n: int = 1, **fields: object) -> None:
        self.sizes.append(n)


def test_batches_are_cut_by_their_posix_rows(traced, tmp_path):
    """A batch holds at most ``batch_rows`` posix rows and is cut only where its next job
    would pass them; a job with more rows than that is a batch alone."""
    wh = _copy(traced[0], tmp_path / "wh")
    rows = dict(wh.rows("select job_key, count(*) from posix group by job_key").values)
    per_job = [rows.get(k, 0) for (k,) in wh.rows("select job_key from jobs order by 1").values]
    budget = sorted(per_job)[len(per_job) // 2] * 2  # some jobs share a batch, some not
    told = _Batches()
    run = compute_insights(wh, batch_rows=budget, progress=told)
    assert sum(told.sizes) == run.evaluated == len(per_job)
    assert 1 < len(told.sizes) < len(per_job)
    at = 0
    for n in told.sizes:
        held, after = per_job[at : at + n], per_job[at + n : at + n + 1]
        assert sum(held) <= budget or n == 1
        assert not after or sum(held) + after[0] > budget
        at += n


def test_a_batch_of_nothing_is_refused(traced):
    with pytest.raises(IosightError, match="at least one job and one row"):
        compute_insights(traced[0], batch_rows=0)
