"""Interface rules: how much moves through STDIO, and whether MPI-IO is used at all.

Drishti's ``check_stdio`` (S01) and ``check_mpiio`` (M01).
"""

from __future__ import annotations

import numpy as np

from iosight._units import human_bytes
from iosight.insights._frame import JobData
from iosight.insights._rules import findings, pct, rule, share
from iosight.insights._table import Table
from iosight.insights._thresholds import Thresholds


# MPI-IO bytes are not needed: POSIX already counts them, and they only move between terms
@rule(
    "S01",
    "interface",
    "STDIO moves a large share of the data",
    counters=("stdio_bytes_read", "stdio_bytes_written", "bytes_read", "bytes_written"),
)
def stdio_share(d: JobData, t: Thresholds) -> Table:
    j = d.jobs
    stdio = j.num("stdio_bytes_read") + j.num("stdio_bytes_written")
    posix = j.num("bytes_read") + j.num("bytes_written")
    mpiio = j.num("mpiio_bytes_read") + j.num("mpiio_bytes_written")
    # POSIX also counts what MPI-IO moved underneath it (Drishti subtracts it the same way)
    posix = np.where(posix >= mpiio, posix - mpiio, posix)
    total = stdio + posix + mpiio
    s = share(stdio, total)
    stdio_time = j.num("stdio_read_time") + j.num("stdio_write_time") + j.num("stdio_meta_time")
    return findings(
        j,
        (total > 0) & (s > t.interface_stdio),
        level="high",
        message=lambda i: [
            f"STDIO, a low-performance interface, moves {pct(v)} of the data ({human_bytes(b)})"
            for v, b in zip(s[i], stdio[i], strict=True)
        ],
        evidence={"stdio_bytes": stdio, "all_bytes": total, "stdio_share": s},
        recommendation="Move the bulk data to POSIX read/write of large blocks or MPI-IO; keep "
        "STDIO for small text output",
        stake_s=stdio_time,
        stake_bytes=stdio,
        stake_how="all STDIO read, write and metadata time (summed over ranks): an upper bound "
        "on what another interface saves",
    )


@rule(
    "M01",
    "interface",
    "parallel job without MPI-IO",
    counters=("nprocs",),
)
def no_mpiio(d: JobData, t: Thresholds) -> Table:
    j = d.jobs
    has_mpiio = j.contains("modules", "MPI-IO")
    nprocs = j.num("nprocs").astype(np.int64)  # a count: written whole
    moved = j.num("bytes_read") + j.num("bytes_written")
    return findings(
        j,
        ~has_mpiio & (nprocs >= t.mpiio_min_nprocs),
        level="warn",
        message=lambda i: [
            f"{n} processes do I/O without MPI-IO, the high-performance interface"
            for n in nprocs[i]
        ],
        evidence={"nprocs": nprocs, "posix_bytes": moved},
        recommendation="Consider a high-performance interface such as MPI-IO (or HDF5/PnetCDF "
        "over MPI-IO) so that ranks' I/O can be aggregated",
        stake_bytes=moved,
        stake_how="bytes moved through POSIX without MPI-IO",
    )
