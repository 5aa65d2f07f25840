"""The README's promise, tested at each step of the commit protocol: an ingest killed
at any moment resumes to the same warehouse, row for row and value for value, and two
ingests writing one warehouse at once end as one ingest would.

The kill is deterministic: ``IOSIGHT_TEST_CRASH_AT=point:N`` makes the ingest SIGKILL
itself the N-th time it reaches ``point`` of :meth:`Warehouse.commit_staged`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from iosight.data import example_logs
from iosight.warehouse import Warehouse, ingest
from tests_support import assert_same_warehouse, child_env, hold_warehouse_lock, killed_ingest


def _logs() -> list[str]:
    return [str(p) for p in example_logs()]


@pytest.fixture
def reference(example_warehouse) -> Warehouse:
    """One clean ingest of every example log (the session's, read only)."""
    assert len(example_warehouse.jobs()) == len(example_warehouse.table("sources"))
    assert len(example_warehouse.jobs()) == _unique_logs()
    return example_warehouse


def _unique_logs() -> int:
    return len({p.read_bytes() for p in example_logs()})


@pytest.mark.parametrize(
    ("point", "committed"),
    [
        ("staged", 2),  # 3rd batch's files written, no commit record: rolled back
        ("published", 3),  # 3rd commit record written, files not moved: rolled forward
        ("applied", 3),  # killed between the 3rd commit and the 4th
    ],
)
def test_killed_ingest_resumes_to_the_same_warehouse(tmp_path, reference, point, committed):
    target = tmp_path / "killed"
    killed_ingest(target, f"{point}:3", workers=1, batch_size=1)
    staged = list((target / "_staging").iterdir())
    records = list((target / "_commits").glob("*.json"))
    assert len(staged) == (point != "applied") and len(records) == (point == "published")
    resumed = Warehouse(target)  # opening it finishes or discards the killed commit
    assert len(resumed.jobs()) == committed
    assert not any((target / "_staging").iterdir()) and not any((target / "_commits").iterdir())
    report = ingest(_logs(), resumed, workers=1)
    assert (report.ingested, report.skipped) == (
        _unique_logs() - committed,
        12 - (_unique_logs() - committed),
    )
    assert_same_warehouse(resumed, reference)


def test_two_ingests_at_once_equal_one(tmp_path, reference):
    """Two overlapping ingests (two cron jobs) started while a third process writes: both
    wait, each says so once, and the warehouse ends as one clean ingest of all logs."""
    # one path per content: of two copies, the reference records the first it met
    logs = list({open(p, "rb").read(): p for p in reversed(_logs())}.values())[::-1]
    target = tmp_path / "wh"
    Warehouse(target, create=True)
    holder = hold_warehouse_lock(target)
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "iosight", "ingest", *part, "-w", str(target)]
            + ["--workers", "1", "--batch-size", "1"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=child_env(),
        )
        for part in (logs[:6], logs[3:])
    ]
    waiting = f"warehouse {target} is being written by process {holder.pid} on "
    try:
        for run in runs:  # both are waiting for the holder before it lets go
            assert run.stderr.readline().startswith(waiting)
    finally:
        holder.communicate("done\n", timeout=30)
    for run in runs:
        rest = run.communicate(timeout=300)[1]
        assert run.returncode == 0 and "is being written by" not in rest
    assert_same_warehouse(Warehouse(target), reference)
