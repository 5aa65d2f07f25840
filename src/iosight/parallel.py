"""Where work runs: a pool of long-lived local worker processes, or a Dask cluster.

The local pool exists because reading real archives crashes and hangs C code:
each worker handles one task at a time, a worker that dies (SIGSEGV, abort) or
exceeds the timeout is killed and replaced, and its task is reported as failed;
the other tasks go on. Workers are started once (not per task: an interpreter
start costs ~0.3 s) and recycled after ``max_tasks`` tasks to bound leaks.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any


@dataclass(frozen=True)
class TaskResult:
    """Outcome of one task: ``value`` on success, else ``error`` (one line)."""

    key: Any
    value: Any = None
    error: str | None = None


def default_workers() -> int:
    return max(
        1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )


def _worker_main(conn: Connection, func: Callable[[Any], Any]) -> None:
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        key, arg = msg
        try:
            conn.send(TaskResult(key, value=func(arg)))
        except Exception as err:  # noqa: BLE001 - a failed task is data, reported upstream
            conn.send(TaskResult(key, error=_one_line(err)))


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    msg = text[0] if text else ""
    name = type(err).__name__
    return msg if name in ("CorruptLogError", "IosightError") else f"{name}: {msg}"


class _Worker:
    def __init__(self, ctx, func) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, func), daemon=True)
        with _main_hidden():
            self.proc.start()
        child.close()
        self.task: tuple[Any, Any] | None = None
        self.started = 0.0
        self.done = 0

    def give(self, key, arg) -> None:
        self.task = (key, arg)
        self.started = time.monotonic()
        self.conn.send((key, arg))

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                self.proc.kill()
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


@contextmanager
def _main_hidden() -> Iterator[None]:
    """Start a worker without it re-running the caller's ``__main__``.

    multiprocessing re-imports the parent's main script (or ``-m`` module) in each
    child; for ``iosight`` itself that would re-run the command, and for a user's
    script without a ``__main__`` guard it recurses. The worker needs neither.
    """
    main = sys.modules["__main__"]
    saved = {a: main.__dict__.pop(a) for a in ("__file__", "__spec__") if a in main.__dict__}
    main.__spec__ = None
    try:
        yield
    finally:
        del main.__spec__
        main.__dict__.update(saved)


def run_local(
    func: Callable[[Any], Any],
    tasks: Iterable[tuple[Any, Any]],
    *,
    workers: int = 0,
    timeout: float | None = None,
    max_tasks: int = 2000,
    preload: tuple[str, ...] = (),
) -> Iterator[TaskResult]:
    """Run ``func(arg)`` for each ``(key, arg)`` in worker processes; yield results as done.

    ``func`` must be importable (module level). A task whose worker crashes or runs past
    ``timeout`` seconds yields a result with ``error`` set; the worker is replaced.
    Workers are forked from a fresh fork server that has imported ``preload`` (never
    the caller's ``__main__``), so replacing a worker is cheap and scripts without a
    ``__main__`` guard work.
    """
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload([func.__module__, *preload])
    n = workers or default_workers()
    queue = deque(tasks)
    pool = [_Worker(ctx, func) for _ in range(min(n, len(queue)) or 1)]
    try:
        while queue or any(w.task for w in pool):
            for i, w in enumerate(pool):
                if w.task is None and queue:
                    if w.done >= max_tasks:
                        w.stop()
                        pool[i] = w = _Worker(ctx, func)
                    w.give(*queue.popleft())
            busy = [w for w in pool if w.task is not None]
            wait_for = (
                min((w.started + timeout - time.monotonic() for w in busy), default=None)
                if timeout
                else None
            )
            ready = wait(
                [w.conn for w in busy] + [w.proc.sentinel for w in busy],
                timeout=None if wait_for is None else max(wait_for, 0.0),
            )
            for i, w in enumerate(pool):
                if w.task is None:
                    continue
                if w.conn in ready:
                    try:
                        result = w.conn.recv()
                    except (EOFError, OSError):
                        result = None
                    if result is not None:
                        w.task, w.done = None, w.done + 1
                        yield result
                        continue
                if w.proc.sentinel in ready or not w.proc.is_alive():
                    yield TaskResult(w.task[0], error=_death_reason(w.proc.exitcode))
                    w.stop(kill=True)
                    pool[i] = _Worker(ctx, func)
                elif timeout and time.monotonic() - w.started > timeout:
                    yield TaskResult(w.task[0], error=f"timed out after {timeout:g} s")
                    w.stop(kill=True)
                    pool[i] = _Worker(ctx, func)
    finally:
        for w in pool:
            w.stop(kill=w.task is not None)


def _death_reason(code: int | None) -> str:
    if code is not None and code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"reader crashed the worker process ({name})"
    return f"worker process exited unexpectedly (exit code {code})"


def run_dask(
    func: Callable[[Any], Any],
    tasks: Iterable[tuple[Any, Any]],
    *,
    scheduler: str,
    timeout: float | None = None,
) -> Iterator[TaskResult]:
    """Run the same tasks on an existing Dask cluster (``scheduler`` address)."""
    try:
        from distributed import Client, as_completed
    except ImportError as err:  # pragma: no cover - depends on the install
        from iosight._errors import IosightError

        raise IosightError("--scheduler needs Dask: pip install 'iosight[dask]'") from err
    with Client(scheduler, timeout=timeout or 30) as client:
        keyed = list(tasks)
        futures = {client.submit(_safe_call, func, arg, pure=False): key for key, arg in keyed}
        for fut in as_completed(futures):
            key = futures[fut]
            try:
                value, error = fut.result()
            except Exception as err:  # noqa: BLE001 - worker loss is data
                value, error = None, _one_line(err)
            yield TaskResult(key, value=value, error=error)


def _safe_call(func: Callable[[Any], Any], arg: Any) -> tuple[Any, str | None]:
    try:
        return func(arg), None
    except Exception as err:  # noqa: BLE001
        return None, _one_line(err)
