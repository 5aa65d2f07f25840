"""Adding jobs to a stored timeline (issue #27): ``update_timeline`` equals a full rebuild,
bin for bin, rewrites only the runs of bins the new jobs touch, falls back to a full
rebuild (saying why) when an update cannot equal one, and survives kill -9 at each step
of its commit. Data: Summit's App1 job totals and PyDarshan's example logs (real)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from iosight.timeline import _update, build_timeline, load_timeline, update_timeline
from iosight.timeline._span import Quartiles
from iosight.timeline._stored import (
    QUARTILES_KEY,
    batch_of,
    stored_metadata,
    stored_quartiles,
    stored_state,
)
from iosight.warehouse import Warehouse, compact, ingest
from tests_support import assert_same_timeline, shared_path


@pytest.fixture(scope="module")
def app1() -> pd.DataFrame:
    """Summit's App1 job totals (2,884 real jobs)."""
    path = shared_path("datasets", "summit_darshan_total_2021", "darshan_total", "App1.parquet")
    return pd.read_parquet(path)


@pytest.fixture(scope="module")
def pending(app1, tmp_path_factory):
    """A warehouse of App1's jobs whose timeline was built before its last 10% (by end
    time) landed, and those jobs: copy it (``_copy``) to update it."""
    first, rest = _by_end(app1, 0.9)
    wh = Warehouse(tmp_path_factory.mktemp("pending") / "wh", create=True)
    _ingest_rows(first, wh, "first.parquet")
    build_timeline(wh)
    _ingest_rows(rest, wh, "rest.parquet")
    return wh.path, rest


@pytest.fixture(scope="module")
def last_day(app1, tmp_path_factory):
    """As ``pending``, the jobs that ended in App1's last day (3) landing after the
    build: they touch the newest run of bins alone."""
    late = app1["end_time"] > app1["end_time"].max() - 86400
    wh = Warehouse(tmp_path_factory.mktemp("last_day") / "wh", create=True)
    _ingest_rows(app1[~late], wh, "first.parquet")
    build_timeline(wh)
    _ingest_rows(app1[late], wh, "rest.parquet")
    return wh.path, app1[late]


def _copy(path, to) -> Warehouse:
    return Warehouse(shutil.copytree(path, to))


def _ingest_rows(rows: pd.DataFrame, wh: Warehouse, name: str) -> None:
    """Ingest ``rows`` of a job-total table, written as the file ``name`` beside ``wh``."""
    path = wh.path.parent / name
    rows.to_parquet(path)
    assert ingest([path], wh, workers=1).ok


def _assert_as_rebuilt(wh: Warehouse, path, **options) -> pd.DataFrame:
    """The stored timeline equals a full build of a copy of ``wh``: the same bins, active
    jobs and empty bins, exactly, and every sum within 1e-12 of its column's largest (a
    bin's jobs are summed in another order)."""
    got, state = load_timeline(wh), _state(wh)
    copy = Warehouse(shutil.copytree(wh.path, path))
    want = build_timeline(copy, **options).to_pandas()
    assert state["fences"] == _state(copy)["fences"]  # the dense span's, exactly
    summary = stored_quartiles(stored_metadata(wh))
    if summary is not None:  # what the next update starts from: the same fences
        assert summary.n == stored_quartiles(stored_metadata(copy)).n
        assert list(summary.fences()) == state["fences"]
    assert_same_timeline(got, want)
    return got


def _state(wh: Warehouse) -> dict:
    """What the stored timeline records of its sources and dense span."""
    return stored_state(stored_metadata(wh))


def _by_end(app1: pd.DataFrame, *quantiles: float) -> list[pd.DataFrame]:
    """App1's jobs split by end time at ``quantiles``: increments in the order logs land."""
    cuts = [-np.inf, *np.quantile(app1["end_time"], quantiles), np.inf]
    pairs = zip(cuts[:-1], cuts[1:], strict=True)
    return [app1[(app1["end_time"] > a) & (app1["end_time"] <= b)] for a, b in pairs]


@pytest.mark.parametrize("held", [True, False])
def test_increments_equal_a_full_rebuild_and_touch_only_their_runs(
    app1, tmp_path, monkeypatch, held
):
    """``held``: every job's times read into memory, or (past ``MAX_ALL_JOBS``) through
    a view of the ``jobs`` files."""
    if not held:
        monkeypatch.setattr(_update, "MAX_ALL_JOBS", 0)
    first, second, last = _by_end(app1, 0.6, 0.97)
    wh = Warehouse(tmp_path / "wh", create=True)
    _ingest_rows(first, wh, "first.parquet")
    build_timeline(wh)
    for i, rows in enumerate((second, last)):
        _ingest_rows(rows, wh, f"part{i}.parquet")
        before = {f.name for f in wh.table_files("timeline")}
        done = update_timeline(wh)
        assert done.rebuilt is None and done.jobs == len(rows), done.line()
        got = _assert_as_rebuilt(wh, tmp_path / f"rebuilt{i}")
        after = {f.name for f in wh.table_files("timeline")}
        assert after - before and before - after and before & after  # some runs untouched
        assert done.bins < len(got)
    assert update_timeline(wh).line() == "timeline: up to date (no new jobs)"


def test_update_keeps_the_as_of_time_and_the_window(app1, tmp_path):
    first, rest = _by_end(app1, 0.5)
    as_of = float(np.quantile(app1["end_time"], 0.8))
    since = float(app1["start_time"].quantile(0.1))
    wh = Warehouse(tmp_path / "wh", create=True)
    _ingest_rows(first, wh, "first.parquet")
    options = {"bin_width": 600.0, "since": since, "as_of": as_of, "spread": "equal"}
    build_timeline(wh, **options)
    _ingest_rows(rest, wh, "rest.parquet")
    done = update_timeline(wh)
    known = (rest["end_time"] <= as_of) & (rest["start_time"] >= since)
    assert done.rebuilt is None and done.jobs == known.sum() < len(rest)
    _assert_as_rebuilt(wh, tmp_path / "rebuilt", **options)


@pytest.mark.parametrize(("late", "why"), [(3, None), (4, "columns")])
def test_update_on_real_logs_equals_a_full_rebuild(tmp_path, late, why, example_warehouse):
    """PyDarshan's example logs (counters and DXT): the ``late`` latest to end added to a
    timeline of the others. The fourth latest is the first with DXT segments, a table
    the timeline did not read, which changes how every POSIX record is placed (by its
    segments first): a full rebuild, saying so."""
    import shutil

    wh = Warehouse(shutil.copytree(example_warehouse.path, tmp_path / "wh"))  # written below
    jobs = wh.sql("select job_key, source_path from jobs order by end_time")
    keys, paths = jobs["job_key"].iloc[-late:].tolist(), jobs["source_path"].iloc[-late:].tolist()
    tables = [n for n in wh.tables() if "job_key" in wh.column_names(n)]
    gone = {n: keys for n in tables} | {"sources": {"source_path": paths}}
    wh.commit({}, delete_keys=gone)  # these logs have not landed yet
    build_timeline(wh, bin_width=86400.0, span="all")
    ingest(paths, wh, workers=1)  # they land
    done = update_timeline(wh)
    assert done.jobs == (late if why is None else 0), done.line()
    assert done.rebuilt is None if why is None else why in done.rebuilt
    _assert_as_rebuilt(wh, tmp_path / "rebuilt", bin_width=86400.0, span="all")


def _strip_sources(wh: Warehouse) -> None:
    """The stored timeline as older code wrote it: one file, no record of what it read."""
    table = wh.table("timeline")
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if b"sources" not in k}
    wh.write_table("timeline", table.replace_schema_metadata(meta))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (_strip_sources, "an older iosight"),
        (lambda wh: compact(wh, ["jobs"]), "replaced or removed"),
    ],
)
def test_an_update_that_cannot_be_exact_is_a_rebuild_that_says_why(pending, tmp_path, change, why):
    wh = _copy(pending[0], tmp_path / "wh")
    change(wh)
    done = update_timeline(wh)
    assert done.rebuilt is not None and why in done.rebuilt, done.line()
    assert done.line().startswith("timeline rebuilt in full") and "\n" not in done.line()
    _assert_as_rebuilt(wh, tmp_path / "rebuilt")
    assert update_timeline(wh).rebuilt is None  # and it records what it read again


def test_compaction_leaves_the_timelines_runs_alone(pending, tmp_path):
    """The timeline's files are its runs of bins, which an update rewrites by name:
    compaction never merges them, and the update stays an update."""
    wh = _copy(pending[0], tmp_path / "wh")
    update_timeline(wh)
    runs = [f.name for f in wh.table_files("timeline")]
    compact(wh)
    assert [f.name for f in wh.table_files("timeline")] == runs
    assert len(wh.table_files("jobs")) == 1
    _assert_as_rebuilt(wh, tmp_path / "rebuilt")


def test_a_job_the_dense_span_leaves_out_is_a_rebuild(shared, tmp_path):
    """Real logs of 2020-2022, then a 2024 log that lies past their fences."""
    root = shared("darshan-logs")
    wh = Warehouse(tmp_path / "wh", create=True)
    ingest(sorted(root.glob("*heatmap*")) + sorted(root.glob("*sample-dxt-simple*")), wh, workers=1)
    build_timeline(wh, bin_width=86400.0)
    ingest(sorted(root.glob("*dlio_logs*2110482*")), wh, workers=1)
    done = update_timeline(wh)
    assert done.rebuilt is not None and "dense span" in done.rebuilt, done.line()
    _assert_as_rebuilt(wh, tmp_path / "rebuilt", bin_width=86400.0)


_UPDATE = "from iosight.timeline import update_timeline; from iosight.warehouse import Warehouse; "


def test_an_update_of_the_newest_run_alone_replaces_that_file_in_place(last_day, tmp_path):
    """New jobs in the newest run's bins only: that file is replaced under its own name
    (one rename, no commit record; it stays the newest, holding the metadata), the
    other runs are left alone, and the timeline equals a full rebuild."""
    wh, rest = _copy(last_day[0], tmp_path / "wh"), last_day[1]
    files = wh.table_files("timeline")
    before = {f.name: f.stat().st_ino for f in files}

    def no_commit(*args, **kwargs):
        raise AssertionError("a commit record for one file")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Warehouse, "commit_staged", no_commit)
        done = update_timeline(wh)
    assert done.rebuilt is None and done.jobs == len(rest), done.line()
    after = {f.name: f.stat().st_ino for f in wh.table_files("timeline")}
    assert after.keys() == before.keys()
    assert [n for n in after if after[n] != before[n]] == [files[-1].name]
    assert _state(wh)["jobs_batches"] == sorted(batch_of(f.name) for f in wh.table_files("jobs"))
    _assert_as_rebuilt(wh, tmp_path / "rebuilt")


@pytest.mark.parametrize(
    ("increment", "point"),
    [
        ("pending", "staged"),
        ("pending", "published"),
        ("pending", "applied"),
        ("last_day", "staged"),
        ("last_day", "applied"),
    ],
)
def test_update_killed_at_each_commit_step_then_rerun_equals_a_rebuild(
    increment, point, tmp_path, request
):
    """Killed at each step of its commit: several runs (``pending``: a commit record) or
    the newest run alone (``last_day``: one file replaced in place)."""
    path, rest = request.getfixturevalue(increment)
    wh = _copy(path, tmp_path / "wh")
    env = {**os.environ, "IOSIGHT_TEST_CRASH_AT": f"{point}:1"}
    code = _UPDATE + f"update_timeline(Warehouse({str(wh.path)!r}))"
    killed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
    assert killed.returncode == -9, killed.stderr.decode()
    wh = Warehouse(wh.path)  # opening rolls a published commit forward, drops staging
    done = update_timeline(wh)
    assert done.rebuilt is None and done.jobs == (len(rest) if point == "staged" else 0)
    got = _assert_as_rebuilt(wh, tmp_path / "rebuilt")
    assert got["bin_start"].is_unique and not any((wh.path / "_staging").iterdir())


def test_a_batch_with_records_of_jobs_it_holds_is_a_rebuild(warehouse, tmp_path):
    """SYNTHETIC rows: a later batch that adds totals to a job the timeline already holds
    (its totals would move out of the POSIX-less placement) cannot be added alone."""
    import pyarrow as pa

    def totals(keys: list[str]) -> pa.Table:
        return pa.table({"job_key": keys, "total_POSIX_BYTES_READ": [1e6] * len(keys)})

    jobs = pa.table({"job_key": ["a"], "start_time": [0.0], "end_time": [3000.0]})
    warehouse.commit({"jobs": [jobs], "job_totals": [totals(["a"])]})
    build_timeline(warehouse)
    later = pa.table({"job_key": ["b"], "start_time": [600.0], "end_time": [900.0]})
    warehouse.commit({"jobs": [later], "job_totals": [totals(["a", "b"])]})
    done = update_timeline(warehouse)
    assert done.rebuilt is not None and "records of jobs it already holds" in done.rebuilt
    _assert_as_rebuilt(warehouse, tmp_path / "rebuilt")


@pytest.mark.parametrize("legacy", [False, True])
def test_an_update_without_stored_quartiles_reads_every_start_and_keeps_them(
    pending, tmp_path, legacy
):
    """A timeline that kept no quartile windows (written before them), or kept them as
    JSON (``legacy``: older code, a key this code does not read): the update finds the
    fences from every job's start, equals a full rebuild and keeps the windows."""
    import pyarrow.parquet as pq

    wh = _copy(pending[0], tmp_path / "wh")
    newest = wh.table_files("timeline")[-1]  # holds the timeline's metadata
    table = pq.read_table(newest)
    meta = dict(table.schema.metadata)
    assert Quartiles.from_bytes(meta.pop(QUARTILES_KEY)).n == len(wh.jobs()) - len(pending[1])
    if legacy:  # not even its n is right: it is never read
        meta[b"iosight.timeline_quartiles"] = b'{"n": 1, "windows": [], "near": []}'
    pq.write_table(table.replace_schema_metadata(meta), newest)
    done = update_timeline(wh)
    assert done.rebuilt is None and done.jobs == len(pending[1]), done.line()
    _assert_as_rebuilt(wh, tmp_path / "rebuilt")
    assert stored_quartiles(stored_metadata(wh)).n == len(wh.jobs())


def test_new_job_totals_that_move_a_fence_past_an_old_job_are_a_rebuild(warehouse, tmp_path):
    """SYNTHETIC job totals: eight jobs on day 0 and one on day 100, left out (past the
    fences, 30 days from the quartiles); twenty new jobs on day 95 move the high fence
    past it, so it would now count (and the new jobs, outside the old fences, too): the
    update cannot add the new jobs alone."""
    import pyarrow as pa

    day = 86400.0

    def batch(prefix: str, starts: list[float]) -> dict:
        keys = [f"{prefix}{i}" for i in range(len(starts))]
        jobs = pa.table({"job_key": keys, "start_time": starts,
                         "end_time": [s + 3600 for s in starts]})  # fmt: skip
        return {"jobs": [jobs], "job_totals": [pa.table({"job_key": keys,
                "total_POSIX_BYTES_WRITTEN": [1e9] * len(keys)})]}  # fmt: skip

    warehouse.commit(batch("old", [0.0] * 8 + [100 * day]))
    build_timeline(warehouse, bin_width=3600.0)
    warehouse.commit(batch("new", [95 * day] * 20))
    done = update_timeline(warehouse)
    assert done.rebuilt is not None and "dense span moved: 21 jobs" in done.rebuilt, done.line()
    _assert_as_rebuilt(warehouse, tmp_path / "rebuilt", bin_width=3600.0)


def test_an_update_reads_the_new_io_totals_and_writes_the_metadata_once(pending, tmp_path):
    """The fixed costs of an update (issue #27: in proportion to the new jobs): it reads
    a new batch's narrow ``io_totals`` file, never its job-total file of some 480
    columns; the timeline's metadata is written once, as the newest run file's key-value
    metadata (no Arrow schema repeats it, no other run carries it), its state naming
    only the job-total columns the timeline reads; and the run files are uncompressed."""
    import pyarrow.parquet as pq

    from iosight.timeline import _update
    from iosight.timeline._build import TOTAL_COLUMNS

    wh, opened = _copy(pending[0], tmp_path / "wh"), []
    real = _update._Parquet

    def spy(path: str):
        opened.append(path)
        return real(path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_update, "_Parquet", spy)
        done = update_timeline(wh)
    assert done.rebuilt is None and done.jobs == len(pending[1]), done.line()
    assert any("/io_totals/" in p for p in opened)
    assert not any("/job_totals/" in p for p in opened)
    files = [pq.ParquetFile(f) for f in wh.table_files("timeline")]
    metadata = [f.metadata.metadata or {} for f in files]
    assert not any(b"ARROW:schema" in m for m in metadata)
    assert [bool(m) for m in metadata] == [False] * (len(files) - 1) + [True]
    assert {f.metadata.row_group(0).column(0).compression for f in files} == {"UNCOMPRESSED"}
    kept = set(stored_state(metadata[-1])["schema"]["job_totals"])
    assert set(TOTAL_COLUMNS) & set(pending[1].columns) <= kept and len(kept) < 20
    _assert_as_rebuilt(wh, tmp_path / "rebuilt")
