"""Where work runs: a pool of long-lived local worker processes, or a Dask cluster.

Every heavy computation of iosight takes the same two options: ``workers``, the local
workers (0: one per core), and ``scheduler``, the address of a Dask cluster to run on
instead. Ingest and the timeline use the pool and :func:`dask_results` below; model
fitting, searches, simulations and clusterings use :func:`map_items`.

The local pool exists because reading real archives crashes and hangs C code.
Each worker runs one task at a time; a task is a list of items and the worker
sends a heartbeat after each item, so the parent knows which item was running
when a worker died (SIGSEGV, abort) or stalled past the per-item timeout. Such a
worker is killed and replaced and the task comes back as failed *at that item*;
the caller decides what to retry. Workers are forked from a fork server that has
imported the work's modules once (an interpreter start costs ~0.3 s), and are
recycled after ``max_tasks`` tasks to bound leaks.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

Beat = Callable[[int], None]
# how the error of an item that ran past its timeout begins: ingest stores it in
# ingest_errors and reads those sources again next time by this prefix (a contract)
TIMED_OUT = "timed out after"


@dataclass(frozen=True)
class TaskResult:
    """Outcome of one task: ``value`` on success, else ``error`` (one line) and
    ``failed_item``, the index of the item that was running when the task failed.

    ``failed_item`` is ``None`` when that is not known: the task function raised (it
    may have been between items), or the worker died before its first heartbeat.
    ``0`` always means the first item.
    """

    key: Any
    value: Any = None
    error: str | None = None
    failed_item: int | None = None


def default_workers() -> int:
    """The cores this process may run on: what ``workers=0`` means."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def check_workers(workers: int) -> None:
    """Raise a clear error for a worker count that is not an integer >= 0 (0: one per
    core): a negative count would start no worker and wait for ever."""
    from iosight._errors import check_param, is_integer

    ok = is_integer(workers) and workers >= 0
    check_param("workers", workers, ok, "an integer >= 0 (0: one per core)")


def check_pool_params(workers: int, timeout: float | None) -> None:
    """Raise a clear error for a worker count below 0 (:func:`check_workers`) or a
    timeout that is not a positive number of seconds (``None``: no limit): a negative
    timeout would fail every task."""
    from iosight._errors import check_param

    check_workers(workers)
    check_param(
        "timeout", timeout, timeout is None or timeout > 0, "a number of seconds > 0, or None"
    )


def one_line(err: BaseException) -> str:
    """An exception as one line: its message for iosight errors, else type and message."""
    text = str(err).strip().splitlines()
    msg = text[0] if text else ""
    name = type(err).__name__
    return msg if name in ("CorruptLogError", "IosightError") else f"{name}: {msg}"


def _worker_main(conn: Connection, func: Callable[[Any, Beat], Any]) -> None:
    def beat(i: int) -> None:
        conn.send(("beat", i))

    # a Ctrl-C or a service manager's SIGTERM reaches the whole process group; stopping
    # is the parent's call (it kills its workers, or lets them finish the task in hand,
    # as follow mode does), not a task failure to record against the item being read
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        key, arg = msg
        try:
            conn.send(("done", TaskResult(key, value=func(arg, beat))))
        except Exception as err:  # noqa: BLE001 - a failed task is data, reported upstream
            conn.send(("done", TaskResult(key, error=one_line(err))))


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


class _Worker:
    def __init__(self, ctx, func) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, func), daemon=True)
        with _main_hidden():
            self.proc.start()
        child.close()
        self.task: tuple[Any, Any] | None = None
        self.item: int | None = None
        self.since = 0.0
        self.done = 0

    def give(self, key, arg) -> None:
        self.task, self.item, self.since = (key, arg), None, time.monotonic()
        self.conn.send((key, arg))

    def stop(self, kill: bool = False) -> None:
        if not kill:
            try:
                self.conn.send(None)
            except OSError:
                kill = True
        if kill:
            self.proc.kill()
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class LocalPool:
    """Run ``func(arg, beat)`` for submitted ``(key, arg)`` tasks in worker processes.

    ``func`` must be importable (module level) and call ``beat(i)`` when it starts
    item ``i + 1`` of its task (so ``timeout`` applies per item). Tasks may be
    submitted while results are being consumed from :meth:`results`.
    """

    def __init__(
        self,
        func: Callable[[Any, Beat], Any],
        *,
        workers: int = 0,
        timeout: float | None = None,
        max_tasks: int = 200,
        preload: tuple[str, ...] = (),
        on_beat: Callable[[Any, int], None] | None = None,
    ) -> None:
        check_pool_params(workers, timeout)
        self.func, self.timeout, self.max_tasks = func, timeout, max_tasks
        self.on_beat = on_beat  # called with (task key, i) as item i of a task starts
        self.n = workers or default_workers()
        self._ctx = mp.get_context("forkserver")
        self._ctx.set_forkserver_preload([func.__module__, *preload])
        self._queue: deque[tuple[Any, Any]] = deque()
        self._pool: list[_Worker] = []

    def submit(self, key: Any, arg: Any) -> None:
        self._queue.append((key, arg))

    def __enter__(self) -> LocalPool:
        """Start the fork server: it imports the work's modules in its own process, so
        what the caller does before the first task (hashing, listing) overlaps that."""
        from multiprocessing import forkserver

        with _main_hidden():
            forkserver.ensure_running()
        return self

    def __exit__(self, *exc) -> None:
        for w in self._pool:
            w.stop(kill=w.task is not None)
        self._pool = []

    def results(self) -> Iterator[TaskResult]:
        """Yield results as tasks finish, until nothing is queued or running."""
        while self._queue or any(w.task for w in self._pool):
            self._dispatch()
            busy = [w for w in self._pool if w.task is not None]
            ready = wait(
                [w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=self._wait()
            )
            for i, w in enumerate(self._pool):
                if w.task is not None:
                    yield from self._check(i, w, ready)

    def _dispatch(self) -> None:
        while len(self._pool) < self.n and len(self._pool) < len(self._queue):
            self._pool.append(_Worker(self._ctx, self.func))
        for i, w in enumerate(self._pool):
            if w.task is None and self._queue:
                if w.done >= self.max_tasks:
                    w.stop()
                    self._pool[i] = w = _Worker(self._ctx, self.func)
                w.give(*self._queue.popleft())

    def _wait(self) -> float | None:
        if not self.timeout:
            return None
        busy = [w.since for w in self._pool if w.task is not None]
        return max(0.0, min(busy) + self.timeout - time.monotonic()) if busy else None

    def _check(self, i: int, w: _Worker, ready: list) -> Iterator[TaskResult]:
        while w.conn in ready and w.conn.poll():
            try:
                kind, payload = w.conn.recv()
            except (EOFError, OSError):
                break
            if kind == "beat":
                w.item, w.since = payload, time.monotonic()
                if self.on_beat is not None:
                    self.on_beat(w.task[0], payload)
                continue
            w.task, w.done = None, w.done + 1
            yield payload
            return
        if w.proc.sentinel in ready or not w.proc.is_alive():
            error = _death_reason(w.proc.exitcode)
        elif self.timeout and time.monotonic() - w.since > self.timeout:
            error = f"{TIMED_OUT} {self.timeout:g} s"
        else:
            return
        yield TaskResult(w.task[0], error=error, failed_item=w.item)
        w.stop(kill=True)
        self._pool[i] = _Worker(self._ctx, self.func)


def _death_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"reader crashed the worker process ({name})"
    return f"worker process exited unexpectedly (exit code {code})"


def dask_results(
    func: Callable[[Any, Beat], Any],
    tasks: list[tuple[Any, Any]],
    *,
    scheduler: str,
    timeout: float | None = None,
    on_beat: Callable[[Any, int], None] | None = None,
) -> Iterator[TaskResult]:
    """Run tasks on an existing Dask cluster (``scheduler`` address), yield as done.

    The same contract as :class:`LocalPool`: workers send a heartbeat (a Dask event)
    as each item starts, so a task that fails says which item was running
    (``failed_item=None`` when none had started), and an item running past
    ``timeout`` seconds fails its task with "timed out". The hung worker is then
    restarted through its nanny, so a reader stuck in C code does not hold it for
    ever; its other tasks go back to the scheduler and run again.
    """
    import queue
    import uuid

    client = dask_client(scheduler)
    from distributed import KilledWorker

    topic = f"iosight-beat-{uuid.uuid4().hex}"
    events: queue.SimpleQueue = queue.SimpleQueue()
    with client:
        # events arrive on the client's thread; the loop below reads them in this one
        client.subscribe_topic(topic, lambda event: events.put(event[1]))
        futures = {
            client.submit(_with_beats, func, arg, key, topic, pure=False): key for key, arg in tasks
        }
        running = _DaskBeats(timeout, on_beat)
        pending = set(futures)
        while pending:
            done = _wait_any(pending, running.wait_s())
            running.drain(events)
            for fut in done:
                pending.discard(fut)
                key = futures[fut]
                item = running.finish(key)
                try:
                    yield TaskResult(key, value=fut.result())
                except KilledWorker as err:  # the item killed its worker, every try
                    yield TaskResult(key, error=one_line(err), failed_item=item)
                except Exception as err:  # noqa: BLE001 - the task raised: data, reported
                    yield TaskResult(key, error=one_line(err))
            for fut in [f for f in pending if running.overdue(futures[f])]:
                pending.discard(fut)
                key, worker = futures[fut], running.worker(futures[fut])
                item = running.finish(key)
                fut.cancel()
                running.lost(worker)
                try:
                    client.restart_workers([worker], raise_for_error=False)
                except Exception:  # noqa: BLE001 - a worker without nanny keeps its thread
                    pass
                yield TaskResult(key, error=f"{TIMED_OUT} {timeout:g} s", failed_item=item)


def dask_client(scheduler: str):
    """A Dask client of the cluster at ``scheduler``; a clear error where Dask is not
    installed."""
    try:
        from distributed import Client
    except ImportError as err:  # pragma: no cover - depends on the install
        from iosight._errors import IosightError

        raise IosightError("--scheduler needs Dask: pip install 'iosight[dask]'") from err
    return Client(scheduler, timeout=30)


def _with_beats(func: Callable[[Any, Beat], Any], arg: Any, key: Any, topic: str) -> Any:
    """Run ``func`` on a Dask worker, sending (key, item, worker) as each item starts."""
    from distributed import get_worker

    worker = get_worker()

    def beat(i: int) -> None:
        worker.log_event(topic, (key, i, worker.address))

    return func(arg, beat)


def _wait_any(futures: set, timeout: float) -> set:
    """The futures done within ``timeout`` seconds (none when it passes first)."""
    from distributed import wait

    try:
        return set(wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED").done)
    except TimeoutError:
        return set()


class _DaskBeats:
    """Which item each Dask task is on, where, and since when (this machine's clock)."""

    _POLL_S = 1.0  # how often to look for heartbeats and hung items

    def __init__(self, timeout: float | None, on_beat) -> None:
        self.timeout, self.on_beat = timeout, on_beat
        self.at: dict[Any, tuple[int, float, str]] = {}
        self.finished: set = set()

    def drain(self, events) -> None:
        while not events.empty():
            key, i, worker = events.get()
            if key in self.finished:  # a late heartbeat of a task already done
                continue
            self.at[key] = (i, time.monotonic(), worker)
            if self.on_beat is not None:
                self.on_beat(key, i)

    def finish(self, key) -> int | None:
        """Forget a task that ended; return the item it was on (``None``: none began)."""
        self.finished.add(key)
        at = self.at.pop(key, None)
        return None if at is None else at[0]

    def worker(self, key) -> str:
        return self.at[key][2]

    def overdue(self, key) -> bool:
        return (
            bool(self.timeout)
            and key in self.at
            and (time.monotonic() - self.at[key][1] > self.timeout)
        )

    def lost(self, worker: str) -> None:
        """A restarted worker's tasks start again from their first item, elsewhere."""
        self.at = {k: v for k, v in self.at.items() if v[2] != worker}

    def wait_s(self) -> float:
        if not self.timeout or not self.at:
            return self._POLL_S
        due = min(since for _, since, _ in self.at.values()) + self.timeout - time.monotonic()
        return max(0.0, min(self._POLL_S, due))


def map_items(
    func: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    workers: int = 0,
    scheduler: str | None = None,
    threads: bool = False,
    on_done: Callable[[int, Any], None] | None = None,
) -> list:
    """``[func(item) for item in items]`` on ``workers`` local workers (0: one per
    core) or, given its address, on a Dask cluster (``scheduler``).

    Results come back in the order of ``items`` whatever the order they finish in, so
    a deterministic ``func`` gives the same list with any ``workers`` and on Dask (as
    far as its BLAS sums do not depend on the threads an item gets, below);
    ``on_done(i, result)`` is called here as each item finishes. Local work runs in
    threads with ``threads`` (work that releases the GIL, such as scikit-learn's and
    XGBoost's fitting, and shares its arrays without copies), else in processes forked
    from a fork server (``func``, importable, and the items must pickle); with one
    worker, or one item, it runs in this process. Each item running at once gets an
    even share of the ``workers`` cores for its BLAS and OpenMP thread pools
    (threadpoolctl), so the map uses at most ``workers`` cores. On Dask, ``func`` and
    each item are sent to the cluster once (cloudpickle: closures travel too). An item
    that raises stops the map and its error is raised here, as in a loop.
    """
    check_workers(workers)
    items = list(items)
    if scheduler:
        done = _dask_map(func, items, scheduler)
    else:
        total = workers or default_workers()
        n = min(total, len(items))
        done = _local_map(func, items, n, threads, max(1, total // max(1, n)))
    out: list = [None] * len(items)
    for i, value in done:
        out[i] = value
        if on_done is not None:
            on_done(i, value)
    return out


def _local_map(func, items: list, n: int, threads: bool, share: int) -> Iterator[tuple[int, Any]]:
    """(index, result) of each item as it finishes, on ``n`` threads or processes (here
    when ``n`` is 1), each item's thread pools limited to ``share`` threads."""
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed

    from threadpoolctl import threadpool_limits

    if n <= 1 or threads:
        limits = threadpool_limits(share)  # this process's pools, which the threads share
        pool = ThreadPoolExecutor(n) if n > 1 else None
    else:
        limits = nullcontext()
        ctx = mp.get_context("forkserver")
        # a fork server started now imports the work's module once, not each worker
        ctx.set_forkserver_preload([getattr(func, "func", func).__module__])
        pool = ProcessPoolExecutor(n, mp_context=ctx, initializer=_limit_threads,
                                   initargs=(share,))  # fmt: skip
    with limits:
        if pool is None:
            yield from enumerate(map(func, items))
            return
        with pool:
            with _main_hidden():  # the processes start as the items are submitted
                futures = {pool.submit(func, item): i for i, item in enumerate(items)}
            try:
                for fut in as_completed(futures):
                    yield futures[fut], fut.result()
            finally:  # an item failed (or the caller stopped): drop what has not started
                for fut in futures:
                    fut.cancel()


def _limit_threads(share: int) -> None:
    """A worker process's BLAS and OpenMP pools: ``share`` threads for good, those of the
    libraries loaded already (threadpoolctl) and of those loaded later (their variables)."""
    from threadpoolctl import threadpool_limits

    for name in ("OMP", "OPENBLAS", "MKL", "BLIS"):
        os.environ[f"{name}_NUM_THREADS"] = str(share)
    threadpool_limits(share)


def _dask_map(func, items: list, scheduler: str) -> Iterator[tuple[int, Any]]:
    """(index, result) of each item as it finishes on the Dask cluster."""
    from distributed import as_completed

    with dask_client(scheduler) as client:
        # scattered, not inlined in the task graph (a data set is tens of MB): a list is
        # scattered element by element, so func goes in a list of one
        remote = client.scatter([func], hash=False)[0]
        futures = {
            client.submit(_apply, remote, item, pure=False): i
            for i, item in enumerate(client.scatter(items, hash=False))
        }
        for fut in as_completed(futures):
            yield futures[fut], fut.result()


def _apply(func: Callable[[Any], Any], item: Any) -> Any:
    return func(item)
