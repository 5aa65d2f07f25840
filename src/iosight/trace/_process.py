"""What the traced process is: its place in its job, its command line, the mounts it sees.

Both the live trace (:mod:`iosight.trace._core`) and its crash-safe state file
(:mod:`iosight.trace._state`) put these in the log's job record.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "SLURM_NPROCS")
_JOBID_VARS = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "COBALT_JOBID", "DARSHAN_JOBID")


@dataclass(frozen=True)
class ProcessInfo:
    """Where this process sits in its job, from the launcher's and batch system's environment.

    ``rank``: this process's rank; ``nprocs``: the job's process count; ``jobid``: the job's id.
    """

    rank: int
    nprocs: int
    jobid: int

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> ProcessInfo:
        """Rank from ``PMI_RANK``/``OMPI_COMM_WORLD_RANK``/``PMIX_RANK``/``SLURM_PROCID``,
        size from the matching ``*_SIZE``/``SLURM_NTASKS``, job id from ``SLURM_JOB_ID``,
        ``PBS_JOBID``, ``LSB_JOBID`` or ``COBALT_JOBID`` (digits only), else the pid as
        Darshan does.

        ``env``: the environment read (default: ``os.environ``).
        """
        env = os.environ if env is None else env

        def first_int(names: tuple[str, ...]) -> int | None:
            for n in names:
                digits = "".join(ch for ch in env.get(n, "").split(".")[0] if ch.isdigit())
                if digits:
                    return int(digits)
            return None

        rank = first_int(_RANK_VARS)
        nprocs = first_int(_SIZE_VARS)
        jobid = first_int(_JOBID_VARS)
        return cls(
            rank=rank or 0,
            nprocs=max(nprocs or 1, (rank or 0) + 1),
            jobid=jobid if jobid is not None else os.getpid(),
        )


def command_line() -> str:
    """The traced program's command line, as Darshan's exe string."""
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    return " ".join(argv)


def mount_table() -> list[tuple[str, str]]:
    """``(mount point, file-system type)`` pairs from ``/proc/self/mounts`` (empty elsewhere)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[1].startswith("/"):
            out.append((parts[1].replace("\\040", " "), parts[2]))
    return out
