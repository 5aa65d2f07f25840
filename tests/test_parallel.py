import os
import sys

import pytest

from iosight.parallel import LocalPool, dask_results, map_items
from tests_support import blas_threads, crash_or_echo, raise_on_bad


def _run(tasks, **kw):
    with LocalPool(crash_or_echo, **kw) as pool:
        for key, arg in tasks:
            pool.submit(key, arg)
        return {r.key: r for r in pool.results()}


def test_crashes_and_hangs_become_errors_at_the_right_item():
    tasks = [
        (0, ["a"]),
        (1, ["b", "segv", "c"]),
        (2, ["sleep"]),
        (3, ["abort"]),
        (4, ["raise"]),
        (5, ["d", "e"]),
    ]
    results = _run(tasks, workers=2, timeout=3)
    assert sorted(results) == list(range(6))
    assert results[0].value == ["A"] and results[5].value == ["D", "E"]
    assert "SIGSEGV" in results[1].error and results[1].failed_item == 1
    assert "timed out after 3 s" in results[2].error and results[2].failed_item == 0
    assert "SIGABRT" in results[3].error
    assert results[4].error == "ValueError: bad input" and results[4].failed_item is None


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_to_the_process_group_does_not_fail_the_task_in_hand(sig):
    """A Ctrl-C or a service manager's SIGTERM reaches every worker too: stopping is the
    parent's call, so the worker goes on and its task ends as it would have."""
    results = _run([(0, ["a", sig, "b"])], workers=1, timeout=30)
    assert results[0].error is None and results[0].value == ["A", sig, "B"]


def test_workers_are_recycled_after_max_tasks():
    results = _run([(i, [str(i)]) for i in range(7)], workers=1, max_tasks=2)
    assert sorted(r.value[0] for r in results.values()) == [str(i) for i in range(7)]


@pytest.mark.slow
def test_dask_results_fail_at_the_right_item(monkeypatch):
    """On Dask as in the local pool: a hang times out at its item (and its worker is
    restarted, so the next task runs), a raise says the item is unknown."""
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))  # workers import tests_support
    tasks = [(0, ["a"]), (1, ["b", "sleep", "c"]), (2, ["raise"]), (3, ["d", "e"])]
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        beats = []
        results = {
            r.key: r
            for r in dask_results(
                crash_or_echo,
                tasks,
                scheduler=cluster.scheduler_address,
                timeout=3,
                on_beat=lambda key, i: beats.append((key, i)),
            )
        }
    assert sorted(results) == [0, 1, 2, 3]
    assert results[0].value == ["A"] and results[3].value == ["D", "E"]
    assert results[1].error == "timed out after 3 s" and results[1].failed_item == 1
    assert results[2].error == "ValueError: bad input" and results[2].failed_item is None
    assert (1, 1) in beats and (3, 1) in beats


def test_a_pool_needs_workers_and_a_positive_timeout():
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match="'workers' parameter must be an integer >= 0"):
        LocalPool(crash_or_echo, workers=-1)
    with pytest.raises(IosightError, match="'timeout' parameter must be a number of seconds"):
        LocalPool(crash_or_echo, timeout=-1.0)


@pytest.mark.parametrize(("workers", "threads"), [(1, False), (2, False), (2, True), (0, True)])
def test_map_items_keeps_order_and_reports_each_item(workers, threads):
    """Whatever order the items finish in, results come back in the items' order, and
    on_done sees each (index, result) once, here."""
    items = [3, -1, 4, -1, -5, 9, -2, 6]
    seen = []
    out = map_items(abs, items, workers=workers, threads=threads, on_done=lambda *d: seen.append(d))
    assert out == [abs(i) for i in items]
    assert sorted(seen) == sorted(enumerate(out))


@pytest.mark.parametrize("threads", [False, True])
def test_map_items_gives_each_item_running_at_once_a_share_of_the_cores(threads):
    """Two items at once on two workers: one BLAS thread each; one item alone: both
    cores; and this process's pools as they were afterwards."""
    import numpy  # noqa: F401 - loads the BLAS library threadpoolctl limits

    before = blas_threads(None)
    assert map_items(blas_threads, range(4), workers=2, threads=threads) == [1] * 4
    assert map_items(blas_threads, [0], workers=2, threads=threads) == [2]
    assert blas_threads(None) == before


@pytest.mark.parametrize("threads", [False, True])
def test_map_items_raises_the_error_of_an_item(threads):
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match="a bad item"):
        map_items(raise_on_bad, ["a", "bad", "c"], workers=2, threads=threads)


@pytest.mark.parametrize("workers", [-1, 1.5, True])
def test_map_items_needs_a_worker_count(workers):
    from iosight._errors import IosightError

    with pytest.raises(IosightError, match="'workers' parameter must be an integer >= 0"):
        map_items(abs, [1, 2], workers=workers)


def test_map_items_on_a_dask_cluster_equals_the_loop():
    """Closures travel by cloudpickle; a dict item is sent whole (scattered alone it would
    be split by key); an item's error is raised here as it was raised there."""
    distributed = pytest.importorskip("distributed")
    from iosight._errors import IosightError

    items = [{"a": i, "b": [i, i]} for i in range(5)]
    offset = 10
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        out = map_items(lambda d: d["a"] + sum(d["b"]) + offset, items,
                        scheduler=cluster.scheduler_address)  # fmt: skip
        with pytest.raises(IosightError, match="a bad item"):
            map_items(raise_on_bad, ["a", "bad"], scheduler=cluster.scheduler_address)
    assert out == [3 * i + 10 for i in range(5)]
