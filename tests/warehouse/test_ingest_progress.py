"""Ingest progress moves per log, and a log is counted once even when its batch is retried."""

from __future__ import annotations

from iosight.data import example_logs
from iosight.warehouse import ingest
from iosight.warehouse._ingest import IngestReport, _PerLog


class Recorder:
    def __init__(self) -> None:
        self.total, self.steps = None, []

    def start(self, total, description):
        self.total = total

    def advance(self, n=1, **fields):
        self.steps.append(n)

    def finish(self):
        pass


def test_a_single_batch_advances_per_log(warehouse):
    rec = Recorder()
    report = ingest(example_logs(), warehouse, workers=1, batch_size=1000, progress=rec)
    assert sum(rec.steps) == rec.total == report.ingested + report.failed
    assert len(rec.steps) >= rec.total - 1  # heartbeats, not one step at the commit


def test_logs_read_before_a_crash_are_not_counted_again():
    rec = Recorder()
    logs = _PerLog(rec, IngestReport())
    logs.to("b1", 3)  # logs 0-2 of a five-log batch read, then the worker dies on log 3
    rec.advance(1)  # the committer records log 3 as failed
    logs.carry("b1", [("b2", ["l0", "l1", "l2", "l4"])])
    logs.to("b2", 2)  # the retry re-reads logs 0 and 1: nothing new
    assert sum(rec.steps) == 4
    logs.to("b2", 4)  # ... and finishes with log 4
    assert sum(rec.steps) == 5
    logs.to("c1", 2)  # a batch that raised is retried one log per batch
    logs.carry("c1", [("c2", ["a"]), ("c3", ["b"]), ("c4", ["c"])])
    for key in ("c2", "c3", "c4"):
        logs.to(key, 1)
    assert sum(rec.steps) == 5 + 3
