"""A real single-node Slurm for tests: Debian's ``slurm-wlm`` and ``munge`` started in a
temporary directory (its own munge socket, ports on 127.0.0.1), waited for (bounded) and
stopped. With ``accounting=True`` a private MariaDB (Debian's ``mariadb-server``) and
``slurmdbd`` run too, the cluster is added with ``sacctmgr`` and slurmctld sends its jobs
to slurmdbd, so ``sacct`` answers. :func:`start_slurm` skips the test, saying why, where
the binaries are missing or the daemons cannot start."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from tests_support import free_port

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
ACCOUNTING = ("slurmdbd", "sacctmgr", "sacct", "mariadb-install-db", "mariadbd")
CLUSTER = "iosight-test"
LIST_CLUSTERS = ("sacctmgr", "-n", "list", "cluster")  # answers once slurmdbd does
DB_USER, DB_PASS = "slurm", "iosight-test"  # slurmdbd's database account (StorageUser/Pass)
START_S = 20.0  # bound on the daemons' start


def _mem_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 1024


def _conf(root: Path, extra: tuple[str, ...], dbd_port: int | None) -> str:
    """A minimal slurm.conf: one node (this machine's CPUs and memory), one partition,
    no cgroups (proctrack/linuxproc, task/none), jobs sent to the slurmdbd on
    ``dbd_port`` (its munge socket given as AccountingStoragePass) or no accounting;
    ``extra`` lines after."""
    accounting = (
        ["AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
         f"AccountingStoragePort={dbd_port}", f"AccountingStoragePass={root / 'munge.sock'}"]
        if dbd_port else ["AccountingStorageType=accounting_storage/none"]
    )  # fmt: skip
    return "\n".join(
        [
            f"ClusterName={CLUSTER}",
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
            *accounting,
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


def _dbd_conf(root: Path, db_port: int, dbd_port: int) -> str:
    """slurmdbd.conf: the daemon on 127.0.0.1:``dbd_port``, its database the test MariaDB
    on ``db_port`` (account :data:`DB_USER`), munge on the test socket."""
    return "\n".join(
        [
            "AuthType=auth/munge",
            f"AuthInfo=socket={root / 'munge.sock'}",
            "DbdHost=localhost",
            "DbdAddr=127.0.0.1",
            f"DbdPort={dbd_port}",
            "SlurmUser=root",
            f"PidFile={root / 'slurmdbd.pid'}",
            f"LogFile={root / 'slurmdbd.log'}",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            f"StoragePort={db_port}",
            f"StorageUser={DB_USER}",
            f"StoragePass={DB_PASS}",
            "StorageLoc=slurm_acct_db",
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
        if proc.poll() is None:
            proc.terminate()
            proc.send_signal(signal.SIGCONT)  # a daemon a test stopped (SIGSTOP) ends too
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _answers(env: dict, *argv: str) -> bool:
    """Whether ``argv`` (a Slurm client command) exits 0 within 5 s."""
    try:
        out = subprocess.run(argv, env=env, capture_output=True, timeout=5, check=False)
    except subprocess.TimeoutExpired:
        return False
    return out.returncode == 0


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


def sbatch(env: dict, *args: str) -> int:
    """Submit a job (output discarded); its id."""
    out = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", *args], env=env,
                         capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
    return int(out.stdout.strip().split(";")[0])


def plain(value):
    """A number of Slurm's JSON: plain (22.05) or nested (23.02 on)."""
    return value["number"] if isinstance(value, dict) else value


def until(check, what: str, seconds: float = 15.0):
    """``check()``'s first true value, polled for at most ``seconds``; else the test fails."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"Slurm did not get there in {seconds:g} s: {what}")


@dataclass
class _Daemon:
    """How a daemon starts (in the foreground), when it is ready, where it logs."""

    argv: list[str]
    ready: Callable[[], bool]
    log: Path


@dataclass
class Slurm:
    """A running test Slurm: ``env`` (``SLURM_CONF`` set) for its commands; its daemons
    by program name, started in order (munged, mariadbd, slurmdbd, slurmctld, slurmd)."""

    env: dict
    daemons: dict[str, _Daemon]
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, name: str, *flags: str) -> None:
        """Start daemon ``name`` with ``flags`` added and wait until it is ready."""
        daemon = self.daemons[name]
        self.procs[name] = subprocess.Popen([*daemon.argv, *flags], env=self.env,
                                            stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)  # fmt: skip
        self.wait(daemon.ready)

    def stop(self, name: str) -> None:
        """Stop daemon ``name`` (a test's fault: the rest keep running)."""
        _stop([self.procs.pop(name)])

    def restart(self, name: str, *flags: str) -> None:
        """Stop daemon ``name`` and start it again with ``flags`` added (``slurmctld -c``:
        its jobs forgotten); the others run on (slurmd registers again by itself, within
        seconds: the node is not idle at once)."""
        self.stop(name)
        self.start(name, *flags)

    def wait(self, ready: Callable[[], bool]) -> None:
        """Wait (at most :data:`START_S`) for ``ready()``; skip with the logs' last lines
        when a daemon exits or time runs out."""
        deadline = time.monotonic() + START_S
        dead: list[str] = []
        while time.monotonic() < deadline:
            dead = [name for name, p in self.procs.items() if p.poll() is not None]
            if dead or ready():
                break
            time.sleep(0.1)
        else:
            logs = "; ".join(_tail(d.log) for d in self.daemons.values())
            pytest.skip(f"the test Slurm could not start (not ready in {START_S:g} s): {logs}")
        if dead:
            logs = "; ".join(_tail(d.log) for d in self.daemons.values())
            pytest.skip(f"the test Slurm could not start ({', '.join(dead)} exited): {logs}")

    def close(self) -> None:
        """Stop every daemon, newest first."""
        _stop(list(self.procs.values()))
        self.procs.clear()


def _db_dir(root: Path) -> Path:
    """Where the test database lives: in memory (/dev/shm) where it has room, since the
    disk's syncs make MariaDB's start take seconds on a busy machine (4.8 s against 0.5 s
    for mariadb-install-db here); else beside the Slurm."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 512 << 20:
        return Path(tempfile.mkdtemp(prefix="iosight-mariadb-", dir=shm))
    return root / "mysql"


def _accounting(root: Path, env: dict, db: Path, dbd_port: int) -> dict[str, _Daemon]:
    """A private MariaDB in ``db`` (made by mariadb-install-db, with slurmdbd's account)
    and slurmdbd on ``dbd_port``, which reads slurmdbd.conf beside slurm.conf (mode 600,
    owned by root)."""
    db_port, sock = free_port(), root / "mysql.sock"
    sql = root / "account.sql"
    sql.write_text("FLUSH PRIVILEGES;\n"  # the grant tables, off while the database is made
                   f"CREATE USER '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{DB_PASS}';\n"
                   f"GRANT ALL ON slurm_acct_db.* TO '{DB_USER}'@'127.0.0.1';\n")  # fmt: skip
    small = ["--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M"]
    made = subprocess.run(
        ["mariadb-install-db", "--no-defaults", f"--datadir={db}", "--user=root",
         "--skip-test-db", f"--extra-file={sql}", *small],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        lines = (made.stdout + made.stderr).strip().splitlines()[-2:]
        pytest.skip(f"mariadb-install-db failed ({made.returncode}): {' | '.join(lines)}")
    conf = root / "slurmdbd.conf"
    conf.write_text(_dbd_conf(root, db_port, dbd_port))
    conf.chmod(0o600)
    mariadbd = [
        "mariadbd", "--no-defaults", f"--datadir={db}", f"--socket={sock}",
        f"--port={db_port}", "--bind-address=127.0.0.1", "--user=root", "--skip-name-resolve",
        f"--pid-file={root / 'mariadb.pid'}", f"--log-error={root / 'mariadb.log'}", *small,
    ]  # fmt: skip
    return {
        "mariadbd": _Daemon(mariadbd, sock.exists, root / "mariadb.log"),
        "slurmdbd": _Daemon(
            ["slurmdbd", "-D"], partial(_answers, env, *LIST_CLUSTERS), root / "slurmdbd.log"
        ),
    }


def _daemons(root: Path, extra: tuple[str, ...], db: Path | None) -> tuple[dict, dict]:
    """Write the munge key and the configuration; the environment and the daemons (with
    accounting, its database in ``db``)."""
    for sub in ("state", "spool", "munge"):
        (root / sub).mkdir(parents=True)
    key, sock = root / "munge" / "munge.key", root / "munge.sock"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    (root / "munge").chmod(0o700)
    dbd_port = free_port() if db is not None else None
    (root / "slurm.conf").write_text(_conf(root, extra, dbd_port))
    env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
    munged = ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={sock}",
              f"--pid-file={root / 'munge' / 'munged.pid'}",
              f"--log-file={root / 'munge' / 'munged.log'}",
              f"--seed-file={root / 'munge' / 'seed'}"]  # fmt: skip
    daemons = {"munged": _Daemon(munged, sock.exists, root / "munge" / "munged.log")}
    if db is not None and dbd_port is not None:
        daemons |= _accounting(root, env, db, dbd_port)
    daemons["slurmctld"] = _Daemon(["slurmctld", "-D", "-f", env["SLURM_CONF"]],
                                   partial(_answers, env, "squeue", "-h"),
                                   root / "slurmctld.log")  # fmt: skip
    daemons["slurmd"] = _Daemon(["slurmd", "-D", "-N", "localhost", "-f", env["SLURM_CONF"]],
                                lambda: _idle(env), root / "slurmd.log")  # fmt: skip
    return env, daemons


@contextmanager
def start_slurm(root: Path, extra: tuple[str, ...] = (), accounting: bool = False):
    """Yield a running single-node :class:`Slurm` whose slurm.conf ends with the lines
    ``extra``; with ``accounting``, slurmdbd and its MariaDB too, the cluster added. At
    the end every job is cancelled, the daemons stopped and the database removed."""
    need = BINARIES + (ACCOUNTING if accounting else ())
    missing = [b for b in need if shutil.which(b) is None]
    if missing:
        packages = "slurm-wlm munge" + (" slurmdbd mariadb-server" if accounting else "")
        pytest.skip(f"no Slurm here ({', '.join(missing)} missing; apt-get install {packages})")
    if os.geteuid() != 0:
        pytest.skip("a test Slurm runs its daemons as root (SlurmUser=root); not root here")
    db = _db_dir(root) if accounting else None
    slurm, ready = None, False
    try:
        slurm = Slurm(*_daemons(root, extra, db))
        for name in slurm.daemons:
            slurm.start(name)
            if name == "slurmdbd":
                _add_cluster(slurm)
        ready = True
        yield slurm
    finally:
        if ready:
            cancel_all(slurm.env)
        if slurm is not None:
            slurm.close()
        if db is not None:
            shutil.rmtree(db, ignore_errors=True)


def _add_cluster(slurm: Slurm) -> None:
    """``sacctmgr add cluster``, as a site does once: slurmdbd keeps the cluster's jobs."""
    out = subprocess.run(["sacctmgr", "-i", "add", "cluster", CLUSTER], env=slurm.env,
                         capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    if out.returncode != 0:
        pytest.skip(f"sacctmgr could not add the test cluster: {out.stderr.strip()}")
