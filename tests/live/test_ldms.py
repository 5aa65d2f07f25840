"""Darshan's LDMS stream into ``live_io``: SYNTHETIC messages in darshan-ldms.c's format,
from a growing file, standard input and a local socket, with the bad input each can
bring (issue #28, items 1 and 6)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

from iosight.live import (
    LIVE_IO_COLUMNS,
    LdmsFeed,
    LdmsJob,
    LdmsOptions,
    ldms_message,
    parse_messages,
    synthetic_ldms_stream,
)
from iosight.warehouse import Warehouse
from tests_support import child_env, free_port

T0 = 1.75e9  # SYNTHETIC job start (epoch s), on a 300 s bin boundary
JOB = LdmsJob(job_id=4242, uid=1001, exe="/apps/sim", start=T0)
NOW = T0 + 3600.0


def _expected(lines: list[str]) -> dict[tuple[int, str, float], list[int]]:
    """(job, module, bin) -> [read bytes, write bytes, reads, writes] of the lines, with
    json.loads and a dict: what the feed must store, found without it."""
    out: dict[tuple[int, str, float], list[int]] = {}
    for line in lines:
        m = json.loads(line)
        seg = m["seg"][0]
        key = (m["job_id"], m["module"], np.floor(seg["timestamp"] / 300) * 300)
        acc = out.setdefault(key, [0, 0, 0, 0])
        if m["op"] in ("read", "write"):
            w = m["op"] == "write"
            acc[w] += seg["len"]
            acc[2 + w] += 1
    return out


def _stored(wh: Warehouse) -> dict[tuple[int, str, float], list[int]]:
    df = wh.sql(
        "select jobid, module, bin_start, sum(read_bytes) r, sum(write_bytes) w, "
        "sum(reads) nr, sum(writes) nw from live_io group by all"
    )
    return {(j, m, b): [r, w, nr, nw] for j, m, b, r, w, nr, nw in df.itertuples(index=False)}


def _append(path, lines: list[str]) -> None:
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.fixture
def wh(tmp_path) -> Warehouse:
    return Warehouse(tmp_path / "wh", create=True)


def test_a_message_reads_as_the_connector_formats_it():
    # the MOD example of LDMS's darshan_stream_store man page (ovis-hpc/ldms), verbatim
    doc = (
        '{"schema":"N/A", "uid":12345, "exe":"N/A","job_id":21068382,"rank":1,'
        '"ProducerName":"n326","file":"N/A","record_id":4379126583041845751,'
        '"module":"POSIX","type":"MOD","max_byte":-1,"switches":-1,"flushes":-1,"cnt":1,'
        '"op":"close","seg":[{"pt_sel":-1,"irreg_hslab":-1,"reg_hslab":-1,"ndims":-1,'
        '"npoints":-1,"off":-1,"len":-1,"start":0.060127,"dur":0.000002,"total":0.000016,'
        '"timestamp":1743618559.147298}]}'
    )
    job = LdmsJob(21068382, 12345, "/apps/x", 1743618559.147298 - 0.060129, ("n326",))
    ours = ldms_message(job, rank=1, record_id=4379126583041845751, file="/x", module="POSIX",
                        op="close", start=0.060127, end=0.060129, total=0.000016)  # fmt: skip
    assert ours == doc
    msgs, bad = parse_messages((doc + "\n").encode())
    assert bad == [] and msgs.to_pylist()[0]["seg"] == [{"len": -1, "timestamp": 1743618559.147298}]


def test_a_file_is_taken_once_across_polls_and_partial_lines(wh, tmp_path):
    lines = list(synthetic_ldms_stream(JOB, 3000, modules=("POSIX", "MPIIO", "STDIO")))
    path = tmp_path / "darshan.jsonl"
    _append(path, lines[:1000])
    with open(path, "a") as f:  # the store is in the middle of writing line 1001
        f.write(lines[1000][:50])
    feed = LdmsFeed(LdmsOptions(str(path)))
    first = feed.poll(wh, now=NOW)
    assert first.messages == 1000 and not first.warnings
    with open(path, "a") as f:
        f.write(lines[1000][50:] + "\n")
    _append(path, lines[1001:])
    assert feed.poll(wh, now=NOW + 10).messages == 2000
    assert feed.poll(wh, now=NOW + 20).messages == 0
    assert _stored(wh) == _expected(lines)
    assert wh.column_names("live_io") == list(LIVE_IO_COLUMNS)
    got = wh.sql("select distinct exe, uid from live_io where exe is not null")
    assert got.values.tolist() == [["/apps/sim", 1001]]  # only "MET" messages carry exe


def test_bad_input_is_one_warning_and_a_count_each(wh, tmp_path, caplog):
    good = list(synthetic_ldms_stream(JOB, 200))
    future = ldms_message(JOB, rank=0, record_id=1, file="/f", module="POSIX", op="write",
                          start=7200.0, end=7200.1, length=10)  # fmt: skip
    unset = LdmsJob(4242, 1001, "/apps/sim", start=0.0)  # a node whose clock says 1970
    past = ldms_message(unset, rank=0, record_id=1, file="/f", module="POSIX", op="write",
                        start=5.0, end=5.1, length=10)  # fmt: skip
    bad = [
        good[5][:-40],  # truncated
        '{"job_id": "N/A"}',  # wrong type
        ldms_message(
            JOB, rank=0, record_id=2, file='/a"b', module="POSIX", op="open", start=1.0, end=1.1
        ),  # fmt: skip  (a quote in a path: not JSON)
        '{"uid":1, "exe":"N/A", "job_id":4242, "module":"POSIX", "op":"write"}',  # no seg
        good[7].replace('"POSIX"', '"LUSTRE"'),
        future,
        past,
        "x" * 5000,  # longer than max_line
    ]
    path = tmp_path / "darshan.jsonl"
    _append(path, good[:100] + bad + good[100:])
    caplog.set_level("WARNING", logger="iosight.live")
    report = LdmsFeed(LdmsOptions(str(path), max_line=4096)).poll(wh, now=NOW)
    assert dict(report.warnings) == {"malformed": 3, "missing_field": 1, "unknown_module": 1,
                                     "future_clock": 1, "past_clock": 1, "too_long": 1}  # fmt: skip
    assert len(caplog.records) == 6
    assert _stored(wh) == _expected(good)


def test_rotation_and_truncation_start_the_new_file_from_its_start(wh, tmp_path):
    lines = list(synthetic_ldms_stream(JOB, 300))
    path = tmp_path / "darshan.jsonl"
    _append(path, lines[:100])
    feed = LdmsFeed(LdmsOptions(str(path)))
    feed.poll(wh, now=NOW)
    os.rename(path, tmp_path / "darshan.jsonl.1")  # the store rolls over
    _append(path, lines[100:200])
    assert dict(feed.poll(wh, now=NOW).warnings) == {"rotated": 1}
    path.write_text("")  # truncated in place
    _append(path, lines[200:210])
    report = feed.poll(wh, now=NOW)
    assert dict(report.warnings) == {"truncated": 1} and report.messages == 10
    _append(path, lines[210:])
    feed.poll(wh, now=NOW)
    assert _stored(wh) == _expected(lines)
    os.unlink(path)
    assert dict(feed.poll(wh, now=NOW).warnings) == {"source_down": 1}


def test_a_socket_takes_lines_from_many_connections_and_counts_a_cut(wh):
    lines = list(synthetic_ldms_stream(JOB, 400))
    port = free_port()
    feed = LdmsFeed(LdmsOptions(f"tcp:{port}", max_line=2048))
    try:
        assert feed.poll(wh, now=NOW).messages == 0  # listening now
        a = socket.create_connection(("127.0.0.1", port))
        b = socket.create_connection(("127.0.0.1", port))
        a.sendall("".join(x + "\n" for x in lines[:200]).encode())
        b.sendall("".join(x + "\n" for x in lines[200:]).encode() + b"y" * 3000 + b"\n")
        c = socket.create_connection(("127.0.0.1", port))
        c.sendall(lines[0][:30].encode())  # then closes mid-line
        c.close()
        a.close()
        b.close()
        taken, warned = 0, Counter()
        deadline = time.monotonic() + 60
        while (taken < 400 or len(warned) < 2) and time.monotonic() < deadline:
            report = feed.poll(wh, now=NOW)
            taken, warned = taken + report.messages, warned + report.warnings
            time.sleep(0.02)
    finally:
        feed.close()
    assert taken == 400
    assert dict(warned) == {"too_long": 1, "truncated": 1}
    assert _stored(wh) == _expected(lines)


def test_standard_input_is_read_without_blocking_until_it_ends(tmp_path):
    lines = list(synthetic_ldms_stream(JOB, 100))
    script = (
        "import sys, json\n"
        "from iosight.live import LdmsFeed, LdmsOptions\n"
        "from iosight.warehouse import Warehouse\n"
        f"wh = Warehouse({str(tmp_path / 'wh')!r}, create=True)\n"
        "feed = LdmsFeed(LdmsOptions('-'))\n"
        "first = feed.poll(wh, now=%r)\n"  # nothing sent yet: returns at once
        "print(first.messages, flush=True)\n"
        "import collections, time; got = []\n"
        "for _ in range(100):\n"
        "    r = feed.poll(wh, now=%r); got.append(r)\n"
        "    if r.warnings.get('source_down'): break\n"
        "    time.sleep(0.05)\n"
        "warned = sum((r.warnings for r in got), start=collections.Counter())\n"
        "print(sum(r.messages for r in got), dict(warned))\n"
    ) % (NOW, NOW)
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    proc = subprocess.Popen([sys.executable, "-c", script], env=child_env(), **pipes)
    assert proc.stdout.readline().strip() == b"0"
    proc.stdin.write(("".join(x + "\n" for x in lines) + lines[0][:20]).encode())
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    out = proc.stdout.read()
    assert out.decode().split(" ", 1) == ["100", "{'truncated': 1, 'source_down': 1}\n"]
    assert _stored(Warehouse(tmp_path / "wh")) == _expected(lines)


_DRAIN = """
import sys
from iosight.live import LdmsFeed, LdmsOptions
from iosight.warehouse import Warehouse
wh = Warehouse(sys.argv[1], create=True)
feed = LdmsFeed(LdmsOptions(sys.argv[2], max_line=1024, max_bytes=8192))
while feed.poll(wh, now=float(sys.argv[3])).messages:
    pass
"""


@pytest.mark.parametrize("crash", ["staged:3", "published:4"])
def test_a_feed_killed_mid_commit_resumes_at_its_stored_offset(tmp_path, crash):
    lines = list(synthetic_ldms_stream(JOB, 150, modules=("POSIX", "STDIO")))
    path = tmp_path / "darshan.jsonl"
    _append(path, lines)
    args = [sys.executable, "-c", _DRAIN, str(tmp_path / "wh"), str(path), repr(NOW)]
    killed = subprocess.run(args, env=child_env(IOSIGHT_TEST_CRASH_AT=crash), capture_output=True)
    assert killed.returncode == -9, killed.stderr
    partway = _stored(Warehouse(tmp_path / "wh"))  # rolls the killed commit forward or back
    taken = sum(r + w for *_, r, w in partway.values())
    assert 0 < taken < sum(r + w for *_, r, w in _expected(lines).values())
    again = subprocess.run(args, env=child_env(), capture_output=True, text=True)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert _stored(Warehouse(tmp_path / "wh")) == _expected(lines)


def test_a_line_of_max_line_bytes_is_kept_and_one_byte_more_is_dropped_wherever_it_lies(
    wh, tmp_path
):
    good = list(synthetic_ldms_stream(JOB, 60))
    path = tmp_path / "darshan.jsonl"
    kept = good[0][:-1] + " " * (1024 - len(good[0])) + "}"  # valid JSON, 1,024 bytes
    assert len(kept) == 1024
    lines = []
    for i, line in enumerate(good):  # the long lines at every alignment to 512-byte windows
        lines += [line, kept if i % 2 else "z" * 1025]
    _append(path, lines)
    report = LdmsFeed(LdmsOptions(str(path), max_line=1024, max_bytes=1 << 20)).poll(wh, now=NOW)
    assert dict(report.warnings) == {"too_long": 30}
    assert report.messages == 60 + 30


def test_iosight_live_makes_the_feed_from_its_config_section(wh, tmp_path):
    from iosight._errors import IosightError
    from iosight.live import make_feed

    path = tmp_path / "darshan.jsonl"
    _append(path, list(synthetic_ldms_stream(JOB, 20)))
    feed = make_feed("ldms", {"source": str(path), "max_age": "1d", "future_tolerance": "1m"})
    assert (feed.options.max_age, feed.options.future_tolerance) == (86400.0, 60.0)
    assert feed.poll(wh, now=NOW).messages == 20
    with pytest.raises(IosightError, match="127.0.0.1 only"):
        make_feed("ldms", {"source": "tcp://10.0.0.1:5140"})
