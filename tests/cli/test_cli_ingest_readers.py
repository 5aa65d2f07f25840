"""``iosight ingest`` of a mixed directory, native and ``--reader libdarshan``: one line
per failure, no C library noise on the terminal (run as a real process, since
libdarshan-util writes to file descriptor 2, which an in-process runner cannot see)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import darshan3_logs as dl
from tests_support import SHARED

DATA = Path(__file__).parents[1] / "darshan" / "data"
ZLIB_LOG = "darshan__darshan-util__pydarshan__darshan__tests__input__sample-dxt-simple.darshan"
V2_LOG = (
    "darshan-hist-04f25fd__example-output__carns_mpi-io-test-x86-2.0.0-trunk_"
    "id57600_6-30-51646_1.darshan.gz"
)


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    logs = SHARED / "darshan-logs"
    if not (logs / ZLIB_LOG).exists() or not (logs / V2_LOG).exists():
        pytest.skip("../shared/darshan-logs not present")
    d = tmp_path / "mixed"
    d.mkdir()
    raw = (logs / ZLIB_LOG).read_bytes()
    (d / "zlib.darshan").write_bytes(raw)
    (d / "bzip2.darshan").write_bytes(dl.join(dl.split(raw), comp=1))
    shutil.copy(logs / V2_LOG, d / "old.darshan.gz")
    shutil.copy(DATA / "parser_all_small.txt", d / "dump.darshan.txt")
    header = "jobid,start_time,end_time,nprocs,total_POSIX_OPENS"
    (d / "totals.csv").write_text(f"{header}\n7,0,60,4,9\n")
    (d / "junk.darshan").write_bytes(b"3.41\0\0\0\0" + os.urandom(500))
    return d


def _ingest(d: Path, wh: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cli = [sys.executable, "-c", "from iosight.cli import main; main()"]
    cmd = [*cli, "ingest", str(d), "-w", str(wh), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["native", "libdarshan"])
def test_mixed_directory_one_line_per_failure_no_c_noise(mixed, tmp_path, reader):
    res = _ingest(mixed, tmp_path / "wh", "--workers", "1", "--reader", reader)
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    # one "  failed: PATH: reason" line per failure (progress lines also count "failed: N")
    failed = [line for line in res.stderr.splitlines() if line.strip().startswith("failed:")]
    # libdarshan-util 3.5 was built without bzip2: that log fails only on its path
    want = {"junk.darshan"} | ({"bzip2.darshan"} if reader == "libdarshan" else set())
    assert {line.split("failed: ")[1].split(":")[0].rsplit("/", 1)[1] for line in failed} == want
    noise = [line for line in out.splitlines() if line.startswith("Error:")]
    assert not noise, noise
    assert "Traceback" not in out


def test_unknown_reader_is_one_error_line(mixed, tmp_path):
    res = _ingest(mixed, tmp_path / "wh", "--reader", "fast")
    assert res.returncode != 0
    assert "unknown 3.x reader 'fast'" in res.stderr and "Traceback" not in res.stderr
