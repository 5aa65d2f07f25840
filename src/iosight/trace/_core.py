"""The tracing core: modules register with it, it owns records, ids, memory bounds and the log.

iosight's reading of Darshan's core (Snyder et al., 2016, §III-A): each instrumentation
module asks the core for a record the first time it sees a file; the core names the
record by hashing the path (:func:`~iosight.trace._format.darshan_hash`), keeps at most
``record_limit`` records per module (further files are counted as dropped and the
module's partial flag is set, never unbounded growth), mirrors the records into an
mmap-backed state file while the program runs (§III-C), and writes the log at exit.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from iosight._errors import IosightError
from iosight._registry import Registry
from iosight.trace._format import Job, LogContent, darshan_hash, record_dtype
from iosight.trace._process import ProcessInfo, command_line, mount_table

TRACE_MODULES: Registry[type[TraceModule]] = Registry("trace module")

# Darshan's default exclusions (darshan-core.c) plus the running Python's own install
EXCLUDED_PREFIXES = ("/etc/", "/dev/", "/usr/", "/bin/", "/boot/", "/lib/", "/opt/", "/sbin/")
EXCLUDED_PREFIXES += ("/sys/", "/proc/", "/var/")


class TraceModule:
    """One instrumentation module (a layer of the I/O stack), a plug-in of :class:`TraceCore`.

    Subclasses set ``darshan_name`` (``"POSIX"``, ``"STDIO"``), keep their records in
    ``self.records`` (a list of objects with ``rec_id`` and a ``to_row(row)`` method
    filling one structured-array row), patch their functions in :meth:`install` and put
    them back in :meth:`uninstall`. A module with no ``darshan_name`` of its own records
    into the modules it ``requires`` (the log format has no record type for its layer).

    ``core``: the core it records into.
    """

    darshan_name: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    # further record-owning modules created with this one (keyed by darshan_name, lower
    # case), for a library whose calls fill two Darshan record types (h5py: H5F and H5D)
    companions: ClassVar[tuple[type[TraceModule], ...]] = ()

    def __init__(self, core: TraceCore) -> None:
        self.core = core
        self.records: list = []
        self.by_id: dict[int, object] = {}
        self.dropped = 0
        self.heatmap = None
        if core.config.heatmap:
            from iosight.trace._extra import Heatmap

            self.heatmap = Heatmap()

    def install(self) -> None:
        """Start intercepting this module's calls."""
        raise NotImplementedError

    def uninstall(self) -> None:
        """Stop intercepting and restore the real functions."""
        raise NotImplementedError

    def reset_after_fork(self) -> None:
        """Forget open handles inherited from the parent process."""

    def new_record(self, path: str, factory: Callable[[int, int], object]) -> object | None:
        """The record of ``path`` (created through ``factory(rec_id, slot)``), or None when
        the path is excluded or the module is full (then counted in ``dropped``).

        ``factory``: makes a record from its id and slot.
        """
        rec_id = darshan_hash(path)
        rec = self.by_id.get(rec_id)
        if rec is not None:
            return rec
        if self.core.excluded(path):
            return None
        if len(self.records) >= self.core.record_limit:
            self.dropped += 1
            return None
        rec = factory(rec_id, len(self.records))
        self.records.append(rec)
        self.by_id[rec_id] = rec
        self.core.add_name(rec_id, path)
        return rec

    def to_array(self) -> np.ndarray:
        """This module's records as a structured array in the Darshan record layout."""
        out = np.zeros(len(self.records), dtype=record_dtype(self.darshan_name))
        for row, rec in zip(out, self.records, strict=True):
            rec.to_row(row)
        out["rank"] = self.core.proc.rank
        return out


@dataclass
class TraceConfig:
    """How to trace: which modules, how many records, where state and logs go.

    ``log_dir``: where logs (and, for ranks, ``partial/``) are written; ``modules``: the
    instrumentation modules; ``record_limit``: records per module at most (Darshan's default);
    ``sync_interval``: seconds between syncs of the state file; ``exclude``: path prefixes not
    traced; ``dxt``: also record every operation (DXT); ``heatmap``: record the HEATMAP module;
    ``extra_metadata``: key-value pairs written into the log's metadata.
    """

    log_dir: Path
    modules: tuple[str, ...] = ("posix", "stdio", "numpy", "h5py")
    record_limit: int = 1024
    sync_interval: float = 0.1
    exclude: tuple[str, ...] = ()
    dxt: bool = False
    heatmap: bool = True
    exe: str | None = None  # the command line to record (default: this interpreter's)
    extra_metadata: dict[str, str] = field(default_factory=dict)


def validate(config: TraceConfig) -> None:
    """Refuse a configuration that cannot trace (one-shape parameter errors)."""
    log_dir = Path(config.log_dir)
    if log_dir.exists() and not log_dir.is_dir():
        raise IosightError(f"log directory {log_dir} exists and is not a directory")
    if not config.sync_interval > 0:
        raise IosightError(
            f"the 'sync_interval' parameter must be > 0 seconds. Got {config.sync_interval!r}"
            " instead."
        )
    if config.record_limit < 0:
        raise IosightError(
            f"the 'record_limit' parameter must be >= 0. Got {config.record_limit!r} instead."
        )
    for name in config.modules:
        cls = TRACE_MODULES.get(name)  # UnknownNameError lists the registered modules
        missing = [r for r in cls.requires if r not in config.modules]
        if missing:
            raise IosightError(
                f"the {name!r} trace module records into {', '.join(map(repr, missing))};"
                f" add it to the modules (e.g. --modules {','.join([*config.modules, *missing])})"
            )


class TraceCore:
    """Owns the job record, the name table, the module records and the mmap state file.

    ``config``: how to trace; ``proc``: where this process sits in its job (default: from the
    environment).
    """

    def __init__(self, config: TraceConfig, proc: ProcessInfo | None = None) -> None:
        validate(config)
        self.config = config
        self.record_limit = config.record_limit
        self.proc = proc or ProcessInfo.from_env()
        self.start_ns = time.time_ns()
        self.t0 = time.perf_counter()
        self.names: dict[int, str] = {}
        self.modules: dict[str, TraceModule] = {}
        for name in config.modules:
            cls = TRACE_MODULES.get(name)
            self.modules[name] = cls(self)
            for extra in cls.companions:
                self.modules[extra.darshan_name.lower()] = extra(self)
        log_dir = str(Path(config.log_dir).resolve())
        self._excluded = (*EXCLUDED_PREFIXES, *config.exclude, log_dir + os.sep)
        self._excluded += tuple(
            {p.rstrip(os.sep) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
        )
        self.state = None
        self._sync_thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.installed = False

    def record_modules(self) -> list[TraceModule]:
        """The modules that own Darshan records (one log region each), in order."""
        return [m for m in self.modules.values() if m.darshan_name]

    # -- used by modules -------------------------------------------------------------
    def wtime(self) -> float:
        """Seconds since the job started (Darshan's record timestamps)."""
        return time.perf_counter() - self.t0

    def excluded(self, path: str) -> bool:
        """Whether ``path`` is under an excluded prefix (not traced)."""
        return path.startswith(self._excluded)

    def add_name(self, rec_id: int, path: str) -> None:
        """Record ``path`` as the name of record ``rec_id`` (once), also in the state file."""
        if rec_id not in self.names:
            self.names[rec_id] = path
            if self.state is not None:
                self.state.add_name(rec_id, path)

    # -- lifecycle -------------------------------------------------------------------
    def start(self, state_path: Path | None = None) -> None:
        """Open the state file (if given), patch every module, start the sync thread.

        ``state_path``: the mmap state file (default: none).
        """
        if state_path is not None:
            from iosight.trace._state import StateFile

            self.state = StateFile.create(state_path, self)
        for mod in self.modules.values():
            mod.install()
        self.installed = True
        self._sync_thread = threading.Thread(
            target=self._sync_loop, name="iosight-trace-sync", daemon=True
        )
        self._sync_thread.start()
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    def _sync_loop(self) -> None:
        while not self._stop.wait(self.config.sync_interval):
            self.sync()

    def sync(self) -> None:
        """Fold queued operations into the counters and copy changed records to the state file."""
        for mod in self.modules.values():
            for rec in list(mod.records):
                if rec.ev:
                    rec.drain(self.t0, mod.heatmap)
        if self.state is not None:
            self.state.sync(self)

    def _after_fork_in_child(self) -> None:
        # iosight's reading: a forked child is not a rank of the job; it keeps running
        # with the wrappers in place but records nothing and writes no log.
        self.record_limit = 0
        self.state = None
        self._stop.set()
        from iosight.trace._events import Discard

        for mod in self.modules.values():
            mod.reset_after_fork()
            for rec in mod.records:
                rec.ev = Discard()  # file objects still held by the child keep working
            mod.records, mod.by_id = [], {}
        self.installed = False

    def stop(self) -> LogContent:
        """Unpatch every module and return the log content of this process."""
        self._stop.set()
        if self.installed:
            for mod in reversed(self.modules.values()):  # a later module may wrap an earlier
                mod.uninstall()
            self.installed = False
        if self._sync_thread is not None:
            self._sync_thread.join()
            self._sync_thread = None
        self.sync()
        return self.content()

    def content(self, end_ns: int | None = None) -> LogContent:
        """The log of this process so far (end time now unless given).

        ``end_ns``: the job's end (ns since the epoch).
        """
        end_ns = time.time_ns() if end_ns is None else end_ns
        meta = {"lib_ver": "iosight-trace", **self.config.extra_metadata}
        mods = self.record_modules()
        for mod in mods:
            if mod.dropped:
                meta[f"iosight_dropped_{mod.darshan_name}"] = str(mod.dropped)
        job = Job(
            uid=os.getuid(),
            start_time_sec=self.start_ns // 10**9,
            start_time_nsec=self.start_ns % 10**9,
            end_time_sec=end_ns // 10**9,
            end_time_nsec=end_ns % 10**9,
            nprocs=self.proc.nprocs,
            jobid=self.proc.jobid,
            metadata=meta,
        )
        records = {m.darshan_name: m.to_array() for m in mods}
        names, blobs = dict(self.names), {}
        from iosight.trace._extra import dxt_record_bytes

        dxt = [
            dxt_record_bytes(rec.rec_id, self.proc.rank, np.concatenate(rec.dxt))
            for m in mods
            for rec in m.records
            if getattr(rec, "dxt", None)
        ]
        if dxt:
            blobs["DXT_POSIX"] = b"".join(dxt)
        run_time = (end_ns - self.start_ns) / 1e9
        heat = []
        for m in mods:
            if m.heatmap is not None and m.records:
                rid, name, data = m.heatmap.record_bytes(m.darshan_name, self.proc.rank, run_time)
                names[rid] = name
                heat.append(data)
        if heat:
            blobs["HEATMAP"] = b"".join(heat)
        return LogContent(
            job=job,
            exe=self.config.exe or command_line(),
            mounts=mount_table(),
            names=names,
            records=records,
            partial={m.darshan_name for m in mods if m.dropped},
            blobs=blobs,
        )
