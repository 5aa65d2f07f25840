"""Replay (``iosight replay``): a recorded warehouse written out as its sources landed and
read back by follow mode is the recorded warehouse again, for the jobs replayed."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from iosight.data import example_logs
from iosight.warehouse import KNOWN_AT, FollowReport, Warehouse, ingest, replay
from tests_support import follow_until

_WHEN = {"ingested_at", "known_at", "source_path"}  # where and when it landed, not what


def _follow_all(logs: Path, wh: Warehouse, files: int) -> FollowReport:
    """Follow ``logs`` into ``wh`` until ``files`` sources came in (at most two minutes)."""
    return follow_until(logs, wh, files, 120, interval=0.2)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _day(t: float) -> str:
    g = time.gmtime(t)
    return f"{g.tm_year}/{g.tm_mon}/{g.tm_mday}"


def test_a_replayed_slice_of_logs_followed_is_the_recorded_warehouse(tmp_path):
    """Real logs, replayed at a speed that spreads the slice over about two seconds while
    follow reads them: no log lands early, each lands in its day's folder, and the jobs
    of the slice come back with every record equal."""
    original = Warehouse(tmp_path / "recorded", create=True)
    logs = tmp_path / "sources"
    logs.mkdir()
    for log in example_logs():  # a warehouse's logs stay where they were ingested from
        shutil.copy(log, logs)
    assert ingest([logs], original, workers=1).ok
    since, until = 1.5e9, 1.6e9
    keys = original.sql(
        f"select job_key, {KNOWN_AT} k from jobs where {KNOWN_AT} >= {since} "
        f"and {KNOWN_AT} < {until} order by k"
    )
    assert 2 < len(keys) < len(original.jobs())  # a slice, not everything
    span = keys["k"].iloc[-1] - keys["k"].iloc[0]
    speed = span / 2.0
    landed: list[tuple[float, list[Path]]] = []
    out = tmp_path / "replayed-logs"
    out.mkdir()  # follow watches it from the start

    def write() -> None:
        replay(
            original,
            out,
            speed=speed,
            since=since,
            until=until,
            on_landing=lambda wall, files: landed.append((wall, files)),
        )

    writer = threading.Thread(target=write)
    writer.start()
    replayed = Warehouse(tmp_path / "followed", create=True)
    _follow_all(out, replayed, len(keys))
    writer.join(timeout=120)
    # never early: each landing waits for its (scaled) time since the first
    first = landed[0][0]
    for (wall, _), k in zip(landed, keys["k"], strict=True):
        assert wall - first >= (k - keys["k"].iloc[0]) / speed - 0.005
    assert [p.relative_to(out).parent.as_posix() for _, (p,) in landed] == [
        _day(k) for k in keys["k"]
    ]
    assert _files(out) == sorted(p for _, (p,) in landed)  # no partial left behind
    slice_keys = set(keys["job_key"])
    for name in original.tables():
        if name in ("sources", "ingest_errors"):
            continue
        cols = [c for c in original.column_names(name) if c not in _WHEN]
        sel = ", ".join(f'"{c}"' for c in cols)
        want = original.sql(f'select {sel} from "{name}" order by all')
        want = want[want["job_key"].isin(slice_keys)].reset_index(drop=True)
        got = replayed.sql(f'select {sel} from "{name}" order by all')
        pd.testing.assert_frame_equal(got, want, check_dtype=False, check_exact=True, obj=name)


def _synthetic_job_totals(path: Path, n: int = 40) -> None:
    """A SYNTHETIC job-total table (Summit's columns) of ``n`` jobs over three days."""
    rng = np.random.default_rng(7)
    start = 1.61e9 + np.sort(rng.uniform(0, 3 * 86400, n)).round()
    run = rng.uniform(60, 7200, n).round()
    pd.DataFrame(
        {
            "uid": [f"user{u}" for u in rng.integers(0, 5, n)],  # anonymised: hashed
            "jobid": np.arange(1000, 1000 + n),
            "start_time": start,
            "end_time": start + run,
            "darshan_log_version": "3.41",
            "exe": [f"app{a}" for a in rng.integers(0, 3, n)],
            "nprocs": np.where(rng.uniform(size=n) < 0.1, np.nan, rng.integers(1, 4096, n)),
            "runtime": run,
            "total_POSIX_BYTES_WRITTEN": rng.integers(0, 1 << 40, n).astype(float),
            "total_POSIX_BYTES_READ": np.where(rng.uniform(size=n) < 0.3, np.nan, 1e9),
            "total_MPIIO_INDEP_WRITES": np.nan,
            "total_STDIO_WRITES": rng.integers(0, 1000, n),
        }
    ).to_parquet(path)


def _by_job(wh: Warehouse) -> pd.DataFrame:
    """Each job (by jobid and start) with its totals, and when it became known."""
    return wh.sql(
        f"select j.jobid, j.uid, j.exe, j.nprocs, j.start_time, j.end_time, j.run_time, "
        f"j.modules, j.log_version, {KNOWN_AT} known, t.* exclude (job_key) from jobs j "
        "join job_totals t using (job_key) order by jobid, start_time"
    )


def _replay_job_totals(tables: list[Path], tmp_path: Path, group: float) -> None:
    original = Warehouse(tmp_path / "recorded", create=True)
    assert ingest(tables, original, workers=1).ok
    out = tmp_path / "replayed-logs"
    report = replay(original, out, speed=float("inf"), group=group)
    assert report.jobs == len(original.jobs()) and report.logs == 0
    files = _files(out)
    assert len(files) == report.tables == report.landings
    replayed = Warehouse(tmp_path / "followed", create=True)
    assert _follow_all(out, replayed, len(files)).ingested == len(files)
    want, got = _by_job(original), _by_job(replayed)
    # a counter no replayed job has a value of is not written: all null in the recorded
    assert want.drop(columns=list(got.columns)).isna().all().all()
    pd.testing.assert_frame_equal(got, want[got.columns], check_dtype=False, check_exact=True)
    for f in files:  # each table in the day folder of its last job's known time
        last = pd.read_parquet(f, columns=["known_at"])["known_at"].max()
        assert f.relative_to(out).parent.as_posix() == _day(last)


def test_replayed_synthetic_job_totals_come_back_with_their_counters(tmp_path):
    """SYNTHETIC job-total rows, grouped by the hour: every job comes back with its
    counters and the time it was known (the tables carry known_at)."""
    table = tmp_path / "synthetic-totals.parquet"
    _synthetic_job_totals(table)
    _replay_job_totals([table], tmp_path, group=3600.0)


def test_replayed_summit_job_totals_come_back_with_their_counters(tmp_path, shared):
    """Two of Summit's 2021 applications (102 jobs), grouped by the day."""
    root = shared("datasets", "summit_darshan_total_2021", "darshan_total")
    _replay_job_totals([root / "App6.parquet", root / "App3.parquet"], tmp_path, 86400.0)


def test_what_cannot_be_replayed_is_one_line_and_writes_nothing(tmp_path):
    from typer.testing import CliRunner

    from iosight.cli import app

    logs = tmp_path / "sources"
    logs.mkdir()
    for log in example_logs()[:3]:
        shutil.copy(log, logs)
    wh = Warehouse(tmp_path / "recorded", create=True)
    assert ingest([logs], wh, workers=1).ok
    (logs / example_logs()[1].name).unlink()
    out = tmp_path / "out"
    for args, expected in (
        ([], f"1 of 3 logs to replay are no longer at their source_path (first: {logs}"),
        (["--speed", "-1"], "'speed' parameter must be a number >= 0"),
        (["--group", "0"], "a duration must be positive"),
    ):
        result = CliRunner().invoke(app, ["replay", str(wh.path), "--to", str(out), *args])
        assert result.exit_code == 1, result.output
        assert expected in result.output and "Traceback" not in result.output
        assert not out.exists()
    inside = CliRunner().invoke(app, ["replay", str(wh.path), "--to", str(wh.path / "x")])
    assert inside.exit_code == 1 and "is inside the warehouse" in inside.output
