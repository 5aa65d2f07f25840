"""Tracing unchanged programs in child interpreters: CLI, SIGKILL + recover, many ranks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from iosight.cli import app
from iosight.trace import darshan_hash, read_log, recover
from iosight.trace._activate import trace_env
from tests_support import child_env, wait_for_sync

darshan = pytest.importorskip("darshan")

WRITER = textwrap.dedent(
    """
    import os, sys, time
    out, n = sys.argv[1], int(sys.argv[2])
    fd = os.open(out, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    for _ in range(n):
        os.write(fd, b"z" * 1000)
    os.fsync(fd)
    print("wrote", n, flush=True)
    if len(sys.argv) > 3:
        time.sleep(60)
    sys.exit(3)
    """
)


def _records(log, module):
    with darshan.DarshanReport(str(log), read_all=True) as r:
        df = r.records[module].to_df()
        return r.metadata, df["counters"]


def test_cli_traces_an_unchanged_program(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(WRITER)
    logs = tmp_path / "logs"
    result = CliRunner().invoke(
        app,
        [
            "trace",
            "--log-dir",
            str(logs),
            "--",
            sys.executable,
            str(prog),
            str(tmp_path / "o"),
            "7",
        ],
    )
    assert result.exit_code == 3, result.output  # the program's own exit status
    (log,) = logs.glob("*.darshan")
    meta, c = _records(log, "POSIX")
    row = c[c["id"] == darshan_hash(str(tmp_path / "o"))].iloc[0]
    assert (row["POSIX_WRITES"], row["POSIX_BYTES_WRITTEN"], row["POSIX_FSYNCS"]) == (7, 7000, 1)
    assert meta["exe"].endswith(f"{prog} {tmp_path / 'o'} 7")
    assert not (logs / "partial").exists()


def test_cli_errors_are_one_line(tmp_path):
    res = CliRunner().invoke(app, ["trace", "--log-dir", str(tmp_path), "--", "no-such-prog-x"])
    assert res.exit_code == 1 and "no such program" in res.output
    res = CliRunner().invoke(app, ["trace", "recover", str(tmp_path / "nothing")])
    assert res.exit_code == 1 and "no directory" in res.output


def test_log_dir_that_is_a_file_is_one_line(tmp_path):
    from iosight._errors import IosightError
    from iosight.trace import trace

    afile = tmp_path / "afile"
    afile.write_text("kept")
    prog = tmp_path / "prog.py"
    prog.write_text("print('ran')")
    res = CliRunner().invoke(
        app, ["trace", "--log-dir", str(afile), "--", sys.executable, str(prog)]
    )
    assert res.exit_code == 1 and "log directory" in res.output and "not a directory" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
    with pytest.raises(IosightError, match="not a directory"):
        with trace(afile):
            pass
    env = child_env()
    cmd = [sys.executable, "-m", "iosight.trace.run", "--log-dir", str(afile), str(prog)]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().endswith(f"log directory {afile} exists and is not a directory")
    assert afile.read_text() == "kept"


def _spawn(tmp_path, logs, args, env_extra):
    prog = tmp_path / "prog.py"
    prog.write_text(WRITER)
    env = {**os.environ, **trace_env(logs, {"sync_interval": 0.05}), **env_extra}
    return subprocess.Popen(
        [sys.executable, str(prog), *args], env=env, stdout=subprocess.PIPE, text=True
    )


def test_sigkill_leaves_a_recoverable_log(tmp_path):
    logs = tmp_path / "logs"
    child = _spawn(tmp_path, logs, [str(tmp_path / "k"), "25", "sleep"], {"SLURM_JOB_ID": "555"})
    assert child.stdout.readline().strip() == "wrote 25"
    wait_for_sync(logs / "partial")
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    assert not list(logs.glob("*.darshan"))
    (log,) = recover(logs / "partial", logs)
    meta, c = _records(log, "POSIX")
    row = c[c["id"] == darshan_hash(str(tmp_path / "k"))].iloc[0]
    assert (row["POSIX_WRITES"], row["POSIX_BYTES_WRITTEN"], row["POSIX_OPENS"]) == (25, 25000, 1)
    assert meta["job"]["jobid"] == 555
    assert meta["job"]["metadata"]["iosight_recovered"] == "1"
    assert meta["job"]["run_time"] > 0
    assert not list((logs / "partial").glob("*"))


SHARED = textwrap.dedent(
    """
    import os, sys
    rank, shared, own = int(os.environ["SLURM_PROCID"]), sys.argv[1], sys.argv[2]
    fd = os.open(shared, os.O_CREAT | os.O_WRONLY, 0o644)
    os.pwrite(fd, bytes([65 + rank]) * 1000, rank * 1000)
    os.close(fd)
    with open(own % rank, "wb") as f:
        f.write(b"r" * (rank + 1) * 100)
    """
)


def test_ranks_merge_into_one_job_log(tmp_path):
    prog, logs = tmp_path / "shared.py", tmp_path / "logs"
    prog.write_text(SHARED)
    shared, own = tmp_path / "shared.dat", str(tmp_path / "own%d.dat")
    procs = []
    for rank in range(3):
        env = {**os.environ, **trace_env(logs, {})}
        env.update(SLURM_JOB_ID="4242", SLURM_PROCID=str(rank), SLURM_NTASKS="3")
        procs.append(subprocess.Popen([sys.executable, str(prog), str(shared), own], env=env))
    assert [p.wait() for p in procs] == [0, 0, 0]
    (log,) = logs.glob("*.darshan")
    meta, c = _records(log, "POSIX")
    assert meta["job"]["nprocs"] == 3 and meta["job"]["jobid"] == 4242
    srow = c[c["id"] == darshan_hash(str(shared))]
    assert list(srow["rank"]) == [-1]  # one shared record, reduced
    s = srow.iloc[0]
    assert (s["POSIX_OPENS"], s["POSIX_WRITES"], s["POSIX_BYTES_WRITTEN"]) == (3, 3, 3000)
    assert s["POSIX_MAX_BYTE_WRITTEN"] == 2999
    assert s["POSIX_FASTEST_RANK"] in (0, 1, 2) and s["POSIX_SLOWEST_RANK"] in (0, 1, 2)
    assert (s["POSIX_ACCESS1_ACCESS"], s["POSIX_ACCESS1_COUNT"]) == (1000, 3)
    _, st = _records(log, "STDIO")
    for rank in range(3):
        row = st[st["id"] == darshan_hash(own % rank)]
        assert list(row["rank"]) == [rank]
        assert row.iloc[0]["STDIO_BYTES_WRITTEN"] == (rank + 1) * 100
    assert read_log(log).job.nprocs == 3
    assert not list((logs / "partial").glob("*")) if (logs / "partial").exists() else True


def test_demo_step_traces_and_reads_back(tmp_path):
    from iosight.demo import DemoContext
    from iosight.demo import step_80_trace as step
    from iosight.warehouse import Warehouse

    shown = []
    ctx = DemoContext(
        tmp_path,
        Warehouse(tmp_path / "wh", create=True),
        lambda s: None,
        lambda df, t: shown.append(df),
    )
    step.run(ctx)
    summary, posix, modules = shown
    ours = summary.iloc[0]
    assert (ours["nprocs"], ours["jobid"], ours["shared"]) == (2, 8080, 1)
    assert ours["posix_write"] == 2 * (1 << 20) + 2048 and ours["posix_read"] == 2 * (1 << 20)
    assert sorted(posix["rank"]) == [-1, 0, 1]
    # the warehouse holds what the log holds: 2 x (4 writes of 256 KiB + 1 KiB) and 32 preads
    m = modules.set_index("module")
    assert m.loc["POSIX", "bytes_written"] == 2 * (1 << 20) + 2048
    assert (m.loc["POSIX", "reads"], m.loc["POSIX", "writes"]) == (32, 10)
    assert m.loc["STDIO", "writes"] == 2 * 201


def test_recover_merges_killed_and_finished_ranks(tmp_path):
    prog, logs = tmp_path / "shared.py", tmp_path / "logs"
    prog.write_text(SHARED + "\nif rank == 1:\n    print('ready', flush=True)\n    import time\n"
                    "    time.sleep(60)\n")  # fmt: skip
    shared, own = tmp_path / "shared.dat", str(tmp_path / "own%d.dat")
    procs = []
    for rank in range(2):
        env = {**os.environ, **trace_env(logs, {"sync_interval": 0.05})}
        env.update(SLURM_JOB_ID="77", SLURM_PROCID=str(rank), SLURM_NTASKS="2")
        procs.append(
            subprocess.Popen(
                [sys.executable, str(prog), str(shared), own], env=env, stdout=subprocess.PIPE
            )
        )
    assert procs[0].wait() == 0
    assert procs[1].stdout.readline().strip() == b"ready"
    wait_for_sync(logs / "partial")
    procs[1].kill()
    procs[1].wait()
    assert not list(logs.glob("*.darshan"))  # rank 1 never finished: no job log yet
    (log,) = recover(logs / "partial", tmp_path / "out")
    meta, c = _records(log, "POSIX")
    assert meta["job"]["nprocs"] == 2
    s = c[c["id"] == darshan_hash(str(shared))]
    assert list(s["rank"]) == [-1] and s.iloc[0]["POSIX_BYTES_WRITTEN"] == 2000
    _, st = _records(log, "STDIO")
    assert sorted(st["rank"]) == [0, 1]


def test_bad_options_are_refused_before_running(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["trace", "--modules", "posix,hdf9", "--", sys.executable, "-c", ""])
    assert res.exit_code == 1 and "unknown trace module 'hdf9'" in res.output
    res = runner.invoke(app, ["trace", "--sync-interval", "0", "--", sys.executable, "-c", ""])
    assert res.exit_code == 1 and "'sync_interval' parameter must be > 0" in res.output
