"""Darshan-style modular I/O characterization of Python programs.

Instrumentation modules (``posix``, ``stdio``, ``numpy`` recording into STDIO, and
``h5py`` writing H5F/H5D records) register with a core that owns the records, ids
and bounded memory, mirrors state into an mmap-backed file while the program runs,
and writes Darshan 3.41 logs that PyDarshan reads (Snyder et al., *Modular HPC I/O
Characterization with Darshan*).
"""

from iosight.trace import _h5py, _numpy, _posix, _stdio  # noqa: F401  (register the modules)
from iosight.trace._activate import run_traced, trace_env
from iosight.trace._core import TRACE_MODULES, TraceConfig, TraceCore, TraceModule
from iosight.trace._format import LogContent, darshan_hash, read_log, write_log
from iosight.trace._heavy import dxt_heavy_log
from iosight.trace._merge import combine, merge
from iosight.trace._process import ProcessInfo
from iosight.trace._session import Tracer, TraceResult, recover, trace

__all__ = [
    "TRACE_MODULES",
    "LogContent",
    "ProcessInfo",
    "TraceConfig",
    "TraceCore",
    "TraceModule",
    "TraceResult",
    "Tracer",
    "combine",
    "darshan_hash",
    "dxt_heavy_log",
    "merge",
    "read_log",
    "recover",
    "run_traced",
    "trace",
    "trace_env",
    "write_log",
]
