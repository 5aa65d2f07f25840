"""Tracing one process from start to log: state file, exit hook, per-rank logs, merge, recover.

Single-process jobs write one log into ``log_dir``. Processes of a multi-process job
(rank and size from the launcher's environment) each write ``log_dir/partial/
id<jobid>.rank<r>.darshan``; the last rank to finish merges them into the job log
(§III-A: shared records become rank -1). A process killed before it could write
leaves ``log_dir/partial/*.iosight-state``, which :func:`recover` turns into logs.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from iosight._errors import IosightError
from iosight.trace._core import TraceConfig, TraceCore
from iosight.trace._format import log_name, read_log, write_log
from iosight.trace._merge import combine
from iosight.trace._process import ProcessInfo
from iosight.trace._state import STATE_SUFFIX, recover_state

PARTIAL_DIR = "partial"


def partial_name(jobid: int, rank: int) -> str:
    return f"id{jobid}.rank{rank}.darshan"


@dataclass
class TraceResult:
    """What one process's tracing produced.

    ``records``: records kept per module; ``dropped``: records dropped per module (over
    ``record_limit``).
    """

    log: Path | None  # the job log, when this process wrote or merged it
    partial: Path | None  # this rank's per-process log, for multi-process jobs
    records: dict[str, int]
    dropped: dict[str, int]


class Tracer:
    """Trace this Python process: :meth:`start`, run the program, :meth:`finish`.

    ``config``: how to trace; ``proc``: where this process sits in its job (default: from the
    environment).
    """

    def __init__(self, config: TraceConfig, proc: ProcessInfo | None = None) -> None:
        self.config = config
        self.core = TraceCore(config, proc)
        self.log_dir = Path(config.log_dir).resolve()
        self.state_path = (
            self.log_dir / PARTIAL_DIR / f"id{self.core.proc.jobid}.rank{self.core.proc.rank}"
            f".pid{os.getpid()}{STATE_SUFFIX}"
        )
        self._done: TraceResult | None = None
        self._pid = os.getpid()

    def start(self, *, at_exit: bool = False) -> Tracer:
        """Start tracing (``at_exit``: finish and write the log when the process exits)."""
        self.core.start(self.state_path)
        if at_exit:
            atexit.register(self.finish)
        return self

    def finish(self) -> TraceResult:
        """Stop tracing, write this process's log (and the merged job log if it is last)."""
        if self._done is not None:
            return self._done
        if os.getpid() != self._pid:  # a forked child inherited the exit hook: not its log
            return TraceResult(log=None, partial=None, records={}, dropped={})
        content = self.core.stop()
        proc = self.core.proc
        log_path = partial = None
        if proc.nprocs <= 1:
            log_path = write_log(self.log_dir / log_name(content), content)
        else:
            pdir = self.log_dir / PARTIAL_DIR
            partial = write_log(pdir / partial_name(proc.jobid, proc.rank), content)
            log_path = _merge_if_complete(pdir, self.log_dir, proc.jobid, proc.nprocs)
        if self.core.state is not None:
            self.core.state.close(remove=True)
            try:
                self.state_path.parent.rmdir()  # only when no other process left files there
            except OSError:
                pass
        self._done = TraceResult(
            log=log_path,
            partial=partial,
            records={k: len(v) for k, v in content.records.items()},
            dropped={m.darshan_name: m.dropped for m in self.core.record_modules()},
        )
        return self._done


def _merge_if_complete(pdir: Path, log_dir: Path, jobid: int, nprocs: int) -> Path | None:
    parts = sorted(pdir.glob(f"id{jobid}.rank*.darshan"))
    if len(parts) < nprocs:
        return None
    lock = pdir / f"id{jobid}.merging"
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return None  # another rank is merging
    os.close(fd)
    try:
        merged = combine([read_log(p) for p in parts])
        out = write_log(log_dir / log_name(merged), merged)
        for p in parts:
            p.unlink()
    finally:
        lock.unlink(missing_ok=True)
    return out


@contextmanager
def trace(log_dir: str | Path, **options) -> Iterator[Tracer]:
    """Trace the code in the ``with`` block of this process; the log is written on exit
    into ``log_dir``.

    ``options`` are :class:`~iosight.trace._core.TraceConfig` fields; ``proc`` may give a
    :class:`~iosight.trace.ProcessInfo` instead of the environment's.
    """
    proc = options.pop("proc", None)
    tracer = Tracer(TraceConfig(log_dir=Path(log_dir), **options), proc).start()
    try:
        yield tracer
    finally:
        tracer.finish()


def recover(partial_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Turn state files left by killed processes into logs in ``out_dir``.

    State files of one job id are merged into one job log together with any per-rank
    logs of the same job that finished normally; the state files are removed once
    their log is written.

    ``partial_dir``: the folder holding the state files.
    """
    partial_dir, out_dir = Path(partial_dir), Path(out_dir)
    if not partial_dir.is_dir():
        raise IosightError(f"no directory {partial_dir}; give the log directory's partial/")
    states = sorted(partial_dir.glob(f"*{STATE_SUFFIX}"))
    if not states:
        raise IosightError(f"no *{STATE_SUFFIX} files in {partial_dir}: nothing to recover")
    by_job: dict[int, list] = {}
    for s in states:
        log, rank = recover_state(s)
        by_job.setdefault(log.job.jobid, []).append((s, log, rank))
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for jobid, items in sorted(by_job.items()):
        finished = sorted(partial_dir.glob(f"id{jobid}.rank*.darshan"))
        logs = [log for _, log, _ in items] + [read_log(p) for p in finished]
        merged = logs[0] if len(logs) == 1 else combine(logs)
        written.append(write_log(out_dir / log_name(merged), merged))
        for s, _, _ in items:
            s.unlink()
        for p in finished:
            p.unlink()
    try:
        partial_dir.rmdir()  # only when nothing else is left there
    except OSError:
        pass
    return written
