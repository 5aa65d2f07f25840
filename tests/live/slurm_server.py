"""A real single-node Slurm for tests: Debian's ``slurm-wlm`` and ``munge`` started in a
temporary directory (its own munge socket, ports on 127.0.0.1, no accounting), waited
for (bounded) and stopped. :func:`start_slurm` skips the test, saying why, where the
binaries are missing or the daemons cannot start."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests_support import free_port

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
START_S = 20.0  # bound on the daemons' start


def _mem_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 1024


def _conf(root: Path, extra: tuple[str, ...]) -> str:
    """A minimal slurm.conf: one node (this machine's CPUs and memory), one partition,
    no cgroups (proctrack/linuxproc, task/none), no accounting; ``extra`` lines after."""
    return "\n".join(
        [
            "ClusterName=iosight-test",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={root / 'munge.sock'}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={root / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=1,bf_interval=1",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "ReturnToService=2",
            f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={os.cpu_count()} "
            f"RealMemory={_mem_mb()} State=UNKNOWN",
            "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
            *extra,
            "",
        ]
    )


def _tail(path: Path, n: int = 3) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"{path.name}: none"
    return f"{path.name}: " + " | ".join(lines[-n:])


def _stop(procs: list[subprocess.Popen]) -> None:
    """Stop the daemons, newest first; kill one that has not stopped after 5 s."""
    for proc in reversed(procs):
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _idle(env: dict) -> bool:
    out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True,
                         timeout=5, check=False)  # fmt: skip
    return out.stdout.strip() == "idle"


def cancel_all(env: dict) -> None:
    """Cancel every job of this test cluster and wait (bounded) until none runs."""
    subprocess.run(["scancel", "--user=root"], env=env, timeout=10, check=False)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-t", "R,CG,PD"], env=env, capture_output=True,
                             text=True, timeout=5, check=False)  # fmt: skip
        if not out.stdout.strip():
            return
        time.sleep(0.2)


@contextmanager
def start_slurm(root: Path, extra: tuple[str, ...] = ()):
    """Yield the environment (``SLURM_CONF`` set) of a running single-node Slurm whose
    slurm.conf ends with the lines ``extra``."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        pytest.skip(
            f"no Slurm here ({', '.join(missing)} missing; apt-get install slurm-wlm munge)"
        )
    if os.geteuid() != 0:
        pytest.skip("a test Slurm runs its daemons as root (SlurmUser=root); not root here")
    for sub in ("state", "spool", "munge"):
        (root / sub).mkdir(parents=True)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    (root / "munge").chmod(0o700)
    (root / "slurm.conf").write_text(_conf(root, extra))
    env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
    procs: list[subprocess.Popen] = []
    logs = [root / "munge" / "munged.log", root / "slurmctld.log", root / "slurmd.log"]
    commands = [
        ["munged", "--foreground", "--force", f"--key-file={key}",
         f"--socket={root / 'munge.sock'}", f"--pid-file={root / 'munge' / 'munged.pid'}",
         f"--log-file={logs[0]}", f"--seed-file={root / 'munge' / 'seed'}"],
        ["slurmctld", "-D", "-f", env["SLURM_CONF"]],
        ["slurmd", "-D", "-N", "localhost", "-f", env["SLURM_CONF"]],
    ]  # fmt: skip
    ready = False
    try:
        for argv in commands:
            procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))  # fmt: skip
            if argv[0] == "munged":
                _wait(lambda: (root / "munge.sock").exists(), procs, logs)
        _wait(lambda: _idle(env), procs, logs)
        ready = True
        yield env
    finally:
        if ready:
            cancel_all(env)
        _stop(procs)


def _wait(ready, procs: list[subprocess.Popen], logs: list[Path]) -> None:
    """Wait (at most :data:`START_S`) for ``ready()``; skip with the logs' last lines when
    a daemon exits or time runs out."""
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        dead = [p.args[0] for p in procs if p.poll() is not None]
        if dead:
            break
        if ready():
            return
        time.sleep(0.1)
    else:
        dead = []
    why = f"{', '.join(dead)} exited" if dead else f"not ready in {START_S:g} s"
    pytest.skip(f"the test Slurm could not start ({why}): " + "; ".join(map(_tail, logs)))
