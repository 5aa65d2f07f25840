"""Follow mode (``iosight ingest --follow DIR``): a log directory ingested as logs land.

What it promises: a log still being written (``*.darshan_partial``, or a file still
growing) is not read early; a log that lands is in the warehouse within two polls; a
follow killed with SIGKILL at any step of a commit and started again ends with the
warehouse one batch ingest of the same files gives, table for table; SIGINT or SIGTERM
stop it after the batch in hand, exit 0. Logs: PyDarshan's example logs (real), and
the readable real logs of ../shared/darshan-logs when present.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from iosight.data import example_logs
from iosight.insights import compute_insights
from iosight.warehouse import Warehouse, follow, ingest
from tests_support import SHARED, assert_same_warehouse, child_env, hold_warehouse_lock

_WHEN = ("ingested_at", "known_at")  # when, not what: arrival differs from a batch ingest
# an insight's evidence is JSON whose number format follows the other jobs evaluated with
# it (8 beside a job whose value is null becomes 8.0): the same values, other text
_TEXT_OF_BATCH = ("evidence",)


def _shared_logs(n: int = 3) -> list[Path]:
    """A few small real logs of ../shared that PyDarshan reads (none when it is absent)."""
    manifest = SHARED / "darshan-logs" / "MANIFEST.tsv"
    if not manifest.exists():
        return []
    import pandas as pd

    rows = pd.read_csv(manifest, sep="\t")
    ok = rows[(rows["pydarshan_3_5_0_status"] == "ok") & (rows["size_bytes"] < 200_000)]
    return [manifest.parent / name for name in ok["filename"].head(n)]


def _lay_out(root: Path) -> list[Path]:
    """Darshan's dated layout with real logs, a copy of one under another name (stored
    once), a corrupt log (an error row) and a log still being written (never read)."""
    logs = example_logs() + _shared_logs()
    days = [root / "2021" / "1" / str(d) for d in (3, 4)]
    placed = []
    for i, log in enumerate(logs):
        days[i % 2].mkdir(parents=True, exist_ok=True)
        placed.append(Path(shutil.copy(log, days[i % 2] / f"{i:02d}-{log.name}")))
    placed.append(Path(shutil.copy(logs[0], days[1] / "copy-of-first.darshan")))
    (days[0] / "corrupt.darshan").write_bytes(b"3.41\0" + b"\xff" * 200)
    placed.append(days[0] / "corrupt.darshan")
    (days[1] / "running.darshan_partial").write_bytes(logs[1].read_bytes())
    return placed


def _follow_cli(logs: Path, wh: Path, *options: str, **env: str) -> subprocess.Popen:
    """``iosight ingest --follow`` polling every 0.2 s with one worker, and ``options``."""
    return subprocess.Popen(
        [sys.executable, "-m", "iosight", "ingest", "--follow", str(logs), "-w", str(wh)]
        + ["--interval", "0.2", "--workers", "1", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(PYTHONFAULTHANDLER="1", **env),  # SIGABRT prints its threads' stacks
        start_new_session=True,  # a group of its own, as a terminal's job would have
    )


def _stopped(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    """``proc``'s output once it exits; where it hangs, a failure that shows the stacks
    of its threads (faulthandler, on SIGABRT)."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            err = proc.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:  # not even SIGABRT ended it
            proc.kill()
            err = proc.communicate()[1]
        pytest.fail(f"still running {timeout:g} s after the signal; its stacks:\n{err}")


def _read_until_sources(proc: subprocess.Popen, n: int) -> list[str]:
    """The batch lines of ``proc``, read until they account for ``n`` sources."""
    lines, seen = [], 0
    while seen < n:
        line = proc.stdout.readline()
        assert line, f"follow ended early: {lines} {proc.stderr.read()}"
        if " sources: " in line:
            lines.append(line)
            seen += int(line.split(" UTC: ")[1].split(" sources")[0])
    return lines


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The directory's logs, and one batch ingest of them (insights evaluated too)."""
    root = tmp_path_factory.mktemp("follow")
    files = _lay_out(root / "logs")
    wh = Warehouse(root / "batch", create=True)
    report = ingest([root / "logs"], wh, workers=1)
    assert report.failed == 1 and report.sources == len(files)
    compute_insights(wh)
    return root / "logs", files, wh


@pytest.mark.parametrize("crash", ["staged:4", "published:7", "applied:3"])
def test_follow_killed_mid_batch_then_restarted_equals_one_batch_ingest(tmp_path, reference, crash):
    logs, files, batch = reference
    target = tmp_path / "wh"
    started = time.time()
    # one log per batch: the kill lands between logs too
    killed = _follow_cli(logs, target, "--batch-size", "1", IOSIGHT_TEST_CRASH_AT=crash)
    assert killed.wait(timeout=300) == -signal.SIGKILL
    partway = Warehouse(target, create=False)  # rolls the killed commit forward or back
    committed = len(partway.table("sources"))
    assert 0 < committed < len(batch.table("sources"))
    again = _follow_cli(logs, target, "--batch-size", "1")
    lines = _read_until_sources(again, len(files))
    again.send_signal(signal.SIGTERM)  # to follow alone (its workers are idle)
    out, err = _stopped(again)
    assert again.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("stopped after ")
    assert "Traceback" not in err
    # what the first run committed is not read again; the rest is, once
    ingested = sum(int(line.split(" ingested")[0].rsplit(" ", 1)[1]) for line in lines)
    assert ingested + committed == len(batch.table("sources"))
    got = Warehouse(target, create=False)
    assert_same_warehouse(got, batch, ignore=_WHEN + _TEXT_OF_BATCH)
    known = got.sql("select known_at from jobs")["known_at"]
    assert known.notna().all() and (known >= started).all()  # arrivals, not job ends


def _wait_for(cond, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_partial_and_growing_logs_are_read_only_once_complete(tmp_path):
    """A ``.darshan_partial`` log waits for its rename; a log copied in slowly waits
    until it stops growing; each is then in the warehouse within two polls."""
    interval = 1.0
    logs, wh = tmp_path / "logs", Warehouse(tmp_path / "wh", create=True)
    logs.mkdir()
    batches, stop = [], threading.Event()
    runner = threading.Thread(
        target=follow,
        args=(logs, wh),
        kwargs={"interval": interval, "workers": 1, "on_batch": batches.append, "stop": stop},
    )
    runner.start()
    try:
        first, big = example_logs()[0], max(example_logs(), key=lambda p: p.stat().st_size)
        partial = logs / f"{first.name}_partial"
        partial.write_bytes(first.read_bytes())
        time.sleep(4 * interval)
        assert batches == []
        renamed = time.time()
        partial.rename(logs / first.name)
        _wait_for(lambda: len(batches) == 1)
        b = batches[0]
        assert (b.report.ingested, b.report.failed) == (1, 0)
        # two polls, the read and commit, and the poll's own walk (well under 0.5 s)
        assert b.committed_at - renamed < 2 * interval + b.report.seconds + 0.5
        data = big.read_bytes()
        steps = 40
        with open(logs / "growing.darshan", "wb") as fh:
            for i in range(steps):  # a copy that grows 10 times per poll
                fh.write(data[i * len(data) // steps : (i + 1) * len(data) // steps])
                fh.flush()
                time.sleep(interval / 10)
        assert len(batches) == 1
        _wait_for(lambda: len(batches) == 2)
        assert (batches[1].report.ingested, batches[1].report.failed) == (1, 0)
    finally:
        stop.set()
        runner.join(timeout=60)
    from iosight.warehouse._ingest import content_key

    keys = set(wh.sql("select job_key from jobs")["job_key"])
    assert keys == {content_key(first), content_key(big)}
    assert not wh.has_table("ingest_errors")


def test_sigint_stops_follow_after_the_batch_in_hand(tmp_path):
    """Ctrl-C (SIGINT to the whole process group) while a batch is under way: the batch
    is committed whole, then follow exits 0 with its summary."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for log in example_logs()[:3]:
        shutil.copy(log, logs)
    target = tmp_path / "wh"
    Warehouse(target, create=True)
    holder = hold_warehouse_lock(target)
    proc = _follow_cli(logs, target)
    try:  # its first batch waits for the lock: the signal lands in the batch
        assert "is being written by" in proc.stderr.readline()
        os.killpg(proc.pid, signal.SIGINT)
    finally:
        holder.communicate("done\n", timeout=30)
    out, err = _stopped(proc)
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("stopped after ")
    assert "3 sources: 3 ingested" in out
    assert len(Warehouse(target, create=False).jobs()) == 3


_WAITING = """
import threading
from iosight.warehouse import stopped_by_signals
stop = threading.Event()
with stopped_by_signals(stop):
    print("ready", flush=True)
    while not stop.is_set():
        stop.wait(0)  # holds the event's lock most of the time
print("stopped", flush=True)
"""


def test_a_signal_stops_a_loop_waiting_on_its_event():
    """A signal that lands while the main thread is inside ``stop.wait`` (which holds
    the event's lock) stops the loop: a handler that set the event itself would wait
    for that lock for ever (as a follow once did on CI, SIGTERM lost after its last
    batch). A loop that does nothing else lands most signals there."""
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", _WAITING], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=child_env(PYTHONFAULTHANDLER="1"))  # fmt: skip
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
        time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = _stopped(proc, timeout=30)
        assert (proc.returncode, out) == (0, "stopped\n"), err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["DIR", "DIR2"], "--follow takes one directory, not 2 paths"),
        (["LOG"], "is not a directory: follow mode watches a log directory"),
        (["DIR", "--force"], "--force does not go with it"),
        (["DIR", "--interval", "0"], "'interval' parameter must be a number of seconds > 0"),
        (["DIR", "--interval", "inf"], "'interval' parameter must be a number of seconds > 0"),
        (["DIR", "--settle", "0"], "'settle' parameter must be an integer >= 1"),
    ],
)
def test_bad_follow_options_are_one_line_and_make_nothing(tmp_path, args, expected):
    from typer.testing import CliRunner

    from iosight.cli import app

    places = {"DIR": tmp_path / "a", "DIR2": tmp_path / "b", "LOG": example_logs()[0]}
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    named = [str(places.get(a, a)) for a in args]
    wh = tmp_path / "wh"
    result = CliRunner().invoke(app, ["ingest", "--follow", *named, "-w", str(wh)])
    assert result.exit_code == 1, result.output
    assert expected in result.output and "Traceback" not in result.output
    assert not wh.exists()


def test_the_scanner_forgets_files_gone_from_the_folder(tmp_path):
    """A follow runs for years: what it has read is kept only while it is on disk."""
    from iosight.warehouse._follow import _Scanner

    log = tmp_path / "2024" / "1" / "2" / "a.darshan"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"not read here")
    scan = _Scanner(tmp_path, settle=1)
    _, ready = scan.poll()
    assert [p for p, _ in ready] == [str(log)]
    scan.taken(ready)
    assert scan.poll()[1] == [] and scan.done == {str(log)}
    log.unlink()
    scan.poll()
    assert scan.done == set()


def test_follow_adds_each_batch_to_a_timeline_as_a_rebuild_would(tmp_path):
    """A followed warehouse that has a timeline: each batch's jobs (real logs) are added to
    the runs of bins they touch, not rebuilt, and the timeline equals a full rebuild."""
    from iosight.live import Refresh
    from iosight.timeline import build_timeline, load_timeline, update_timeline

    first, *rest = sorted({p.name: p for p in example_logs()}.values())[:4]
    wh = Warehouse(tmp_path / "wh", create=True)
    ingest([first], wh, workers=1)
    build_timeline(wh, bin_width=86400.0, span="all")
    logs, batches, stop = tmp_path / "logs", [], threading.Event()
    logs.mkdir()
    refresh, said = Refresh(wh), []
    runner = threading.Thread(
        target=follow,
        args=(logs, wh),
        kwargs={"interval": 0.2, "workers": 1, "stop": stop,
                "on_batch": lambda b: (said.extend(refresh.after_batch()), batches.append(b))},
    )  # fmt: skip
    runner.start()
    try:
        for i, log in enumerate(rest, start=1):
            shutil.copy(log, logs / log.name)
            _wait_for(lambda i=i: len(batches) == i)
    finally:
        stop.set()
        runner.join(timeout=60)
    rebuilt = Warehouse(shutil.copytree(wh.path, tmp_path / "rebuilt"))
    build_timeline(rebuilt, bin_width=86400.0, span="all")
    got, want = load_timeline(wh), load_timeline(rebuilt)
    assert got[["bin_start", "active_jobs"]].equals(want[["bin_start", "active_jobs"]])
    for col in ("read_bytes", "write_bytes"):
        assert got[col].to_numpy() == pytest.approx(want[col].to_numpy(), rel=1e-12, abs=0)
    assert said == []  # each batch was an update: a rebuild would say why
    assert update_timeline(wh).line() == "timeline: up to date (no new jobs)"


@pytest.mark.parametrize("chosen", [None, "mimalloc"])
def test_follow_batches_allocate_from_the_system_pool_unless_one_was_chosen(
    tmp_path, monkeypatch, chosen
):
    """A follow runs for months: Arrow's buffers go back to the system when freed (the
    default mimalloc pool kept them, and the replayed Summit year grew batch by batch);
    the caller's pool is back afterwards, and a pool chosen by the person (Arrow's
    ARROW_DEFAULT_MEMORY_POOL) is left alone."""
    import pyarrow as pa

    if chosen is None:
        monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    else:
        monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", chosen)
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(example_logs()[0], logs)
    wh, stop, pools = Warehouse(tmp_path / "wh", create=True), threading.Event(), []
    before = pa.default_memory_pool()

    def after(batch) -> None:
        pools.append((pa.default_memory_pool().backend_name, batch.report.ingested))
        stop.set()

    follow(logs, wh, interval=0.1, workers=1, on_batch=after, stop=stop)
    assert pools == [("system" if chosen is None else before.backend_name, 1)]
    assert pa.default_memory_pool().backend_name == before.backend_name
    assert len(wh.jobs()) == 1


def test_follow_gives_freed_memory_back_after_each_batch(tmp_path, monkeypatch):
    """After each batch and what on_batch did (insights, forecasts), follow hands glibc's
    free pages back to the system: over the replayed Summit year the heap kept what
    batches freed and the process grew (docs/follow.md, "Memory over the year")."""
    import iosight.warehouse._follow as follow_module

    logs = tmp_path / "logs"
    logs.mkdir()
    for f in example_logs()[:2]:
        shutil.copy(f, logs)
    wh, stop, calls = Warehouse(tmp_path / "wh", create=True), threading.Event(), []
    monkeypatch.setattr(follow_module, "release_free_memory", lambda: calls.append("trim"))
    fix = lambda: calls.append("thresholds")  # noqa: E731
    monkeypatch.setattr(follow_module, "fixed_malloc_thresholds", fix)

    def after(batch) -> None:
        calls.append(f"batch of {batch.report.ingested}")
        stop.set()

    follow(logs, wh, interval=0.1, settle=1, workers=1, batch_size=1, on_batch=after, stop=stop)
    assert calls == ["thresholds", "batch of 1", "trim"]  # stopped after the first of two
    assert len(wh.jobs()) == 1
