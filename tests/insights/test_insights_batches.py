"""A run's batches: the same results whatever their size, and no per-batch cost that
grows with the warehouse (the views of the tables read are made once, not per batch)."""

from __future__ import annotations

import shutil
from collections import Counter

import pyarrow.parquet as pq
import pytest

from iosight._errors import IosightError
from iosight._progress import NullProgress
from iosight.insights import _compute, compute_insights
from iosight.insights._frame import READS
from iosight.insights._names import FINDINGS_TABLE, JOBS_TABLE, RULES_TABLE
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse, ingest, parquet_rows


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
    _same_results(one, all_)


def _same_results(one: Warehouse, other: Warehouse) -> None:
    """Both warehouses store the same findings and evaluated jobs, row for row."""
    for name in (FINDINGS_TABLE, JOBS_TABLE):  # the live files (not a compaction's superseded)
        a, b = parquet_rows(one.table_files(name)), parquet_rows(other.table_files(name))
        rows = one.rows(f"select count(*) from {a}").values[0][0]
        assert rows > 0
        for x, y in ((a, b), (b, a)):
            left = one.rows(
                f"select count(*) from (select * from {x} except all select * from {y})"
            )
            assert left.values[0][0] == 0, name


def test_the_jobs_to_evaluate_are_found_a_key_range_at_a_time(traced, tmp_path, monkeypatch):
    """The selection joins a key range's jobs with their stored results at a time (what
    DuckDB holds, bounded by the range): ranges of even size whatever the keys, every
    job in one of them, the counts and results those of one range, and a second run
    finds nothing left to do."""
    ranged, whole = _copy(traced[0], tmp_path / "ranged"), _copy(traced[0], tmp_path / "whole")
    compute_insights(whole)
    monkeypatch.setattr(_compute, "RANGE_JOBS", 2)
    keys = sorted(key for (key,) in ranged.rows("select job_key from jobs").values)
    bounds = _compute._key_bounds(ranged)
    sizes = [sum(1 for k in keys if (lo is None or k > lo) and (hi is None or k <= hi))
             for lo, hi in zip([None, *bounds], bounds, strict=False)]  # fmt: skip
    assert len(keys) == 6 and sizes == [2, 2, 2]
    assert _compute._Todo(ranged, None, Thresholds()).count() == (6, 6)
    assert compute_insights(ranged, batch_jobs=1).evaluated == 6
    _same_results(ranged, whole)
    assert _compute._Todo(ranged, None, Thresholds()).count() == (6, 0)
    assert compute_insights(ranged).evaluated == 0


def test_the_next_keys_page_through_the_ranges_in_key_order(traced, tmp_path, monkeypatch):
    """A window's keys are the next jobs to evaluate after the last one, in key order,
    whatever the page size and wherever ``after`` falls (on a range's bound, inside a
    range), with and without a filter; stored jobs only where their thresholds differ."""
    wh = _copy(traced[0], tmp_path / "wh")
    monkeypatch.setattr(_compute, "RANGE_JOBS", 2)
    keys = sorted(key for (key,) in wh.rows("select job_key from jobs").values)
    done = {keys[1], keys[4]}
    compute_insights(wh, where="job_key in (" + ", ".join(f"'{k}'" for k in done) + ")")
    todo = [k for k in keys if k not in done]
    but_one = (f"job_key <> '{keys[2]}'", [k for k in todo if k != keys[2]])
    for where, want in ((None, todo), but_one):
        pending = _compute._Todo(wh, where, Thresholds())
        assert len(pending.bounds) == 3
        assert pending.count() == (len(keys) - (where is not None), len(want))
        for n in (1, 2, 3):
            got, after = [], ""
            while page := pending.next_keys(after, n):
                assert len(page) <= n and not any(stored for _, stored in page)
                got, after = got + [k for k, _ in page], page[-1][0]
            assert got == want, n
        for after in (*pending.bounds[:-1], keys[0], keys[3]):  # bounds, and inside ranges
            assert [k for k, _ in pending.next_keys(after, 10)] == [k for k in want if k > after]
    again = _compute._Todo(wh, None, Thresholds(small_bytes=1)).next_keys("", 10)
    assert again == [(k, k in done) for k in keys]  # all, the stored ones flagged


def test_a_window_of_batches_is_one_commit(traced, tmp_path, monkeypatch):
    """The stored jobs and their findings gain a file a window of batches, not a batch:
    the query of the next window lists every stored-jobs file, and DuckDB holds more
    with each file listed; a batch's findings are a row group of its window's file."""
    wh = _copy(traced[0], tmp_path / "wh")
    monkeypatch.setattr(_compute, "KEYS_AHEAD", 2)
    commits = []
    commit = _compute._Window.commit
    monkeypatch.setattr(_compute._Window, "commit", lambda w: commits.append(commit(w)))
    batches = compute_insights(wh, batch_jobs=1).evaluated
    assert len(wh.table_files(JOBS_TABLE)) == len(commits) < batches
    found = wh.table_files(FINDINGS_TABLE)
    assert 0 < len(found) <= len(commits)  # none where a window found nothing
    assert sum(pq.ParquetFile(f).num_row_groups for f in found) > len(found)


def test_a_run_cut_short_stores_nothing_of_its_window(traced, tmp_path, monkeypatch):
    """A window cut short by an error stores none of its batches (the write lock let
    go, their staged files removed by the next opening's recovery); the windows before
    it stay, and the next run evaluates the rest, with the results of an uninterrupted
    run."""
    from iosight.insights import _evaluate

    wh = _copy(traced[0], tmp_path / "wh")
    whole = _copy(traced[0], tmp_path / "whole")
    monkeypatch.setattr(_compute, "KEYS_AHEAD", 3)
    evaluate, calls = _evaluate.evaluate_jobs, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 5:  # the second batch of the second window
            raise RuntimeError("killed")
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(_evaluate, "evaluate_jobs", failing)
    with pytest.raises(RuntimeError, match="killed"):
        compute_insights(wh, batch_jobs=1)
    assert Warehouse(wh.path).rows(f"select count(*) from {JOBS_TABLE}").values[0][0] == 3
    assert not any((wh.path / "_staging").iterdir())
    with Warehouse(wh.path).writer_lock(timeout=0):  # another writer gets the lock at once
        pass
    monkeypatch.setattr(_evaluate, "evaluate_jobs", evaluate)
    assert compute_insights(wh, batch_jobs=1).evaluated == len(traced[1]) - 3
    compute_insights(whole, batch_jobs=5000)
    for name in (FINDINGS_TABLE, JOBS_TABLE):
        a, b = parquet_rows(wh.table_files(name)), parquet_rows(whole.table_files(name))
        for x, y in ((a, b), (b, a)):
            left = wh.rows(f"select count(*) from (select * from {x} except all select * from {y})")
            assert left.values[0][0] == 0, name


def test_stored_results_merge_without_a_sort(traced, tmp_path):
    """Each batch's files hold their rows in job key order, so a compaction merges the
    batches' files as sorted runs rather than by DuckDB's sort."""
    from iosight.warehouse._merge import sorted_group

    wh = _copy(traced[0], tmp_path / "wh")
    compute_insights(wh, batch_jobs=3)
    for name in (FINDINGS_TABLE, JOBS_TABLE):
        files = wh.table_files(name)
        assert len(files) > 1, name
        group = sorted_group(files, ["job_key"])
        assert group is not None, name
        assert sum(len(slab) for slab in group.slabs()) > 0, name  # (Unmergeable raises)


def _two_ingests(wh: Warehouse, to) -> Warehouse:
    """A warehouse of the logs of ``wh`` ingested in two halves: two ``posix`` files,
    each holding jobs all over the key range."""
    logs = sorted(wh.rows("select source_path from jobs").values)
    two = Warehouse(to, create=True)
    for part in (logs[::2], logs[1::2]):
        assert ingest([p for (p,) in part], two, workers=1).ok
    assert len(two.table_files("posix")) == 2
    return two


def test_a_batch_of_a_files_jobs_reads_that_file(traced, tmp_path, monkeypatch):
    """The per-record tables a batch reads list only the files holding its jobs (none for
    a job without records), so what DuckDB holds of their footers does not grow with the
    warehouse's files."""
    from iosight.warehouse._jobfiles import KeyIndex

    wh = _two_ingests(traced[0], tmp_path / "wh")
    listed: list[int] = []
    holding = KeyIndex.holding

    def counted(self, entries, key_hashes):
        found = holding(self, entries, key_hashes)
        if "/posix/" in entries[0].path:
            listed.append(len(found))
        return found

    monkeypatch.setattr(KeyIndex, "holding", counted)
    run = compute_insights(wh, batch_jobs=1)
    assert run.evaluated > 4 and 1 in listed and set(listed) <= {0, 1}  # 0: no records


def test_a_run_of_fewer_jobs_than_a_batch_per_file_makes_one_pass(traced, tmp_path, monkeypatch):
    """The jobs of an ingest (or a narrow ``where``) go in key order, read through the key
    index, without a pass over each file's keys."""
    wh = _two_ingests(traced[0], tmp_path / "wh")
    sources = []
    next_keys = _compute._Todo.next_keys

    def recorded(self, after, n, source=None):
        sources.append(source)
        return next_keys(self, after, n, source)

    monkeypatch.setattr(_compute._Todo, "next_keys", recorded)
    run = compute_insights(wh)  # 6 jobs, batches of 5,000, 2 files
    assert run.evaluated > 4 and sources and set(sources) == {None}
    sources.clear()
    compute_insights(wh, thresholds=Thresholds(small_bytes=1), batch_jobs=2)  # all again
    assert any(s is not None for s in sources)


class _Batches(NullProgress):
    """The jobs of each batch, as ``compute_insights`` reports them."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def advance(self, n: int = 1, **fields: object) -> None:
        self.sizes.append(n)


def test_batches_are_cut_by_their_posix_rows(traced, tmp_path):
    """Batches take the jobs of one ``posix`` file at a time, in key order, then the jobs
    left (those without records); a batch holds at most ``batch_rows`` posix rows and is
    cut only where its next job would pass them or its pass ends; a job with more rows
    is a batch alone."""
    wh = _two_ingests(traced[0], tmp_path / "wh")
    files = wh.table_files("posix")
    passes = [
        dict(wh.rows(f"select job_key, count(*) from read_parquet('{f}') group by 1").values)
        for f in files
    ]
    rows = {k: n for p in passes for k, n in p.items()}
    everyone = [k for (k,) in wh.rows("select job_key from jobs").values]
    passes.append({k: 0 for k in everyone if k not in rows})
    order = [[p[k] for k in sorted(p)] for p in passes if p]
    budget = sorted(rows.values())[len(rows) // 2] * 2  # some jobs share a batch, some not
    cap = len(everyone) // len(files)  # a batch per file at least: a pass per file
    told = _Batches()
    run = compute_insights(wh, batch_jobs=cap, batch_rows=budget, progress=told)
    assert sum(told.sizes) == run.evaluated == len(everyone)
    expected = []
    for held in order:  # the batches each pass makes
        while held:
            fits = sum(1 for i in range(len(held[:cap])) if sum(held[: i + 1]) <= budget)
            expected.append(max(1, fits))
            held = held[max(1, fits) :]
    assert told.sizes == expected
    assert 1 < len(told.sizes) < len(everyone)


def test_a_batch_of_nothing_is_refused(traced):
    with pytest.raises(IosightError, match="at least one job and one row"):
        compute_insights(traced[0], batch_rows=0)
