"""The live timeline (issue #28, item 1): a job seen in the LDMS stream and later in its
Darshan log counts once, by its log once the log is known; the timeline then equals the
log-built one plus the stream of the jobs whose logs have not landed.

The log is real (PyDarshan's ``ior_hdf5_example.darshan``, job 32324925); the messages
are SYNTHETIC, in darshan-ldms.c's format, for that job id while it ran and for a job
with no log (job 777)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from iosight.live import (
    LdmsFeed,
    LdmsJob,
    LdmsOptions,
    live_rows,
    live_timeline,
    synthetic_ldms_stream,
)
from iosight.timeline import VALUE_COLUMNS, build_timeline, known_timeline
from iosight.warehouse import Follower, Warehouse
from tests_support import assert_same_timeline


@pytest.fixture(scope="module")
def landed(tmp_path_factory):
    """A warehouse fed the stream of both jobs, then the real log through follow mode
    (known at the wall clock: years after the stream's rows)."""
    from darshan.log_utils import get_log_path

    root = tmp_path_factory.mktemp("live")
    (root / "logs").mkdir()
    wh = Warehouse(root / "wh", create=True)
    stream = root / "darshan.jsonl"
    logged = LdmsJob(
        32324925, 69628, "/global/u2/s/ssnyder/software/ior/build/src/ior", start=1594155460.0
    )  # fmt: skip  (the log's job id, uid and start)
    alone = LdmsJob(777, 1001, "/apps/sim", start=1594156000.0)
    lines = [
        *synthetic_ldms_stream(logged, 400, duration=1.0, modules=("POSIX", "MPIIO")),
        *synthetic_ldms_stream(alone, 600, duration=900.0, modules=("POSIX", "STDIO")),
    ]
    stream.write_text("".join(x + "\n" for x in lines))
    report = LdmsFeed(LdmsOptions(str(stream))).poll(wh, now=1594157000.0)
    assert report.messages == 1000 and not report.warnings
    shutil.copy(get_log_path("ior_hdf5_example.darshan"), root / "logs" / "ior.darshan")
    batches = Follower(root / "logs", wh, settle=1, workers=1).poll()
    assert sum(b.report.jobs for b in batches) == 1
    return wh, root


def _live_sums(wh: Warehouse, jobid: int, modules=("POSIX", "STDIO")) -> dict[str, float]:
    mods = ", ".join(f"'{m}'" for m in modules)
    got = wh.sql(
        "select sum(read_bytes) read_bytes, sum(write_bytes) write_bytes, sum(reads) read_ops, "
        f"sum(writes) write_ops from live_io where jobid = {jobid} and module in ({mods})"
    )
    return got.iloc[0].astype(float).to_dict()


def test_before_the_log_lands_the_stream_counts(landed):
    wh, _ = landed
    got = live_timeline(wh, as_of=1594158000.0)  # the stream known, the log not yet
    assert known_timeline(wh, as_of=1594158000.0) is None
    want = {k: _live_sums(wh, 32324925)[k] + _live_sums(wh, 777)[k] for k in _live_sums(wh, 777)}
    for col, total in want.items():
        assert got[col].sum() == total > 0, col
    # 32324925 in the bin of 1594155300, then nothing, then 777 from 1594156000 for 900 s
    assert got["bin_start"].iloc[0] == 1594155300.0
    assert got["active_jobs"].tolist() == [1, 0, 1, 1, 1, 1]


def test_once_the_log_lands_it_replaces_the_stream_of_its_job(landed, tmp_path):
    wh, root = landed
    got = live_timeline(wh)
    # the logs' timeline, built and stored the ordinary way on a copy of the warehouse
    copy = Warehouse(shutil.copytree(wh.path, tmp_path / "copy"))
    logs = build_timeline(copy, span="all").to_pandas()
    assert_same_timeline(known_timeline(wh).to_pandas(), logs)
    # plus job 777's stream, added here bin by bin with pandas
    alone = wh.sql("select bin_start, sum(read_bytes) read_bytes, sum(write_bytes) write_bytes, "
                   "sum(reads) read_ops, sum(writes) write_ops from live_io where jobid = 777 "
                   "and module in ('POSIX', 'STDIO') group by bin_start")  # fmt: skip
    want = logs.set_index("bin_start").reindex(got["bin_start"], fill_value=0.0)
    want["bin_width"] = 300.0
    for col in ("read_bytes", "write_bytes", "read_ops", "write_ops"):
        want[col] = want[col].add(alone.set_index("bin_start")[col], fill_value=0.0)
    first, last = alone["bin_start"].min(), alone["bin_start"].max()
    want["active_jobs"] += ((want.index >= first) & (want.index <= last)).astype(np.int64)
    assert_same_timeline(got, want.reset_index()[got.columns])
    # counted once: the log's bytes and job 777's stream, nothing of 32324925's stream
    log_bytes = logs["write_bytes"].sum()
    assert got["write_bytes"].sum() == pytest.approx(log_bytes + _live_sums(wh, 777)["write_bytes"])
    assert _live_sums(wh, 32324925)["write_bytes"] > 0
    assert set(live_rows(wh)["jobid"]) == {777}
    assert set(VALUE_COLUMNS) <= set(got.columns)


def test_a_log_of_an_earlier_job_with_a_recycled_id_replaces_nothing(landed, tmp_path):
    wh, _ = landed
    copy = Warehouse(shutil.copytree(wh.path, tmp_path / "copy"))
    later = LdmsJob(32324925, 69628, "/apps/other", start=1594160000.0)  # the id again
    stream = tmp_path / "later.jsonl"
    stream.write_text("".join(x + "\n" for x in synthetic_ldms_stream(later, 50)))
    LdmsFeed(LdmsOptions(str(stream), name="later")).poll(copy, now=1594161000.0)
    assert set(live_rows(copy)["jobid"]) == {777, 32324925}
    assert live_rows(copy).query("jobid == 32324925")["bin_start"].min() >= 1594159800.0
