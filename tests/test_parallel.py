from iosight.parallel import LocalPool
from tests_support import crash_or_echo


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


def test_workers_are_recycled_after_max_tasks():
    results = _run([(i, [str(i)]) for i in range(7)], workers=1, max_tasks=2)
    assert sorted(r.value[0] for r in results.values()) == [str(i) for i in range(7)]
