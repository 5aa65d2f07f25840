"""MPI-IO rules: collective operations (M02-M05), non-blocking operations (M06/M07),
and aggregators per node (M08-M10).

Drishti's ``check_mpi_collective_*_operation``, ``check_mpi_none_block_operation``
and ``check_mpi_aggregator``.
"""

from __future__ import annotations

import numpy as np

from iosight.insights._frame import JobData
from iosight.insights._rules import findings, no_findings, pct, rule, share
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds

# what M02-M05 (collective) and M06/M07 (non-blocking) decide on
_CALLS_READ = ("indep_reads", "coll_reads")
_CALLS_WRITE = ("indep_writes", "coll_writes")
_NB_READ = (*_CALLS_READ, "nb_reads")
_NB_WRITE = (*_CALLS_WRITE, "nb_writes")


def _uses_mpiio(d: JobData) -> np.ndarray:
    return d.jobs.contains("modules", "MPI-IO")


def _f(d: JobData, col: str) -> np.ndarray:
    return d.jobs.num(col)


def _collective(d: JobData, t: Thresholds, op: str, ok: bool) -> Table:
    j = d.jobs
    indep, coll = _f(d, f"indep_{op}s"), _f(d, f"coll_{op}s")
    total = indep + coll
    ev = {f"indep_{op}s": indep, f"coll_{op}s": coll}
    if ok:
        return findings(
            j,
            _uses_mpiio(d) & (coll > 0),
            level="ok",
            message=lambda i: [
                f"MPI-IO {op}s use collective operations: {c:.0f} ({pct(s)})"
                for c, s in zip(coll[i], share(coll, total)[i], strict=True)
            ],
            evidence=ev,
            recommendation="",
        )
    time = _f(d, f"mpiio_{op}_time")
    return findings(
        j,
        _uses_mpiio(d) & (coll == 0) & (total > t.collective_operations_absolute),
        level="high",
        message=lambda i: [
            f"MPI-IO is used without collective {op}s: {n:.0f} independent {op} calls"
            for n in indep[i]
        ],
        evidence=ev,
        recommendation=f"Use collective {op}s (MPI_File_{op}_all, MPI_File_{op}_at_all) so "
        "that MPI-IO aggregates the ranks' requests; set cb_nodes/cb_buffer_size hints",
        stake_s=time,
        stake_how=f"all MPI-IO {op} time (upper bound on what collective buffering saves)",
    )


@rule("M02", "mpiio", "independent MPI-IO reads only", counters=_CALLS_READ)
def no_collective_reads(d: JobData, t: Thresholds) -> Table:
    return _collective(d, t, "read", False)


@rule("M03", "mpiio", "independent MPI-IO writes only", counters=_CALLS_WRITE)
def no_collective_writes(d: JobData, t: Thresholds) -> Table:
    return _collective(d, t, "write", False)


@rule("M04", "mpiio", "collective MPI-IO reads", counters=_CALLS_READ)
def collective_reads(d: JobData, t: Thresholds) -> Table:
    return _collective(d, t, "read", True)


@rule("M05", "mpiio", "collective MPI-IO writes", counters=_CALLS_WRITE)
def collective_writes(d: JobData, t: Thresholds) -> Table:
    return _collective(d, t, "write", True)


def _blocking(d: JobData, op: str) -> Table:
    """iosight's reading: only jobs that do MPI-IO ``op``s (Drishti fires on every MPI-IO job)."""
    j = d.jobs
    nb = _f(d, f"nb_{op}s")
    calls = _f(d, f"indep_{op}s") + _f(d, f"coll_{op}s")
    hdf5 = j.contains("modules", "H5F")
    return findings(
        j,
        _uses_mpiio(d) & (nb == 0) & (calls > 0),
        level="warn",
        message=lambda i: [
            f"All {n:.0f} MPI-IO {op}s are blocking: the job could overlap them with compute "
            "using non-blocking (asynchronous) ones"
            for n in calls[i]
        ],
        evidence={f"nb_{op}s": nb, f"mpiio_{op}s": calls},
        recommendation=np.where(
            hdf5,
            "Since the job uses HDF5, consider the asynchronous I/O VOL connector "
            "(github.com/hpc-io/vol-async)",
            f"Consider non-blocking MPI-IO (MPI_File_i{op}, MPI_File_{op}_all_begin/end)",
        ),
        stake_s=_f(d, f"mpiio_{op}_time"),
        stake_how=f"all blocking MPI-IO {op} time: what overlapping with compute could hide",
    )


@rule("M06", "mpiio", "blocking MPI-IO reads", counters=_NB_READ)
def blocking_reads(d: JobData, t: Thresholds) -> Table:
    return _blocking(d, "read")


@rule("M07", "mpiio", "blocking MPI-IO writes", counters=_NB_WRITE)
def blocking_writes(d: JobData, t: Thresholds) -> Table:
    return _blocking(d, "write")


@rule(
    "M08",
    "mpiio",
    "MPI-IO aggregators per compute node (Drishti's M08-M10)",
    needs="nodes",
)
def aggregators(d: JobData, t: Thresholds) -> Table:
    """Never evaluated: the node count is not in Darshan logs (see ``NEEDS['nodes']``)."""
    return no_findings(d.jobs)
