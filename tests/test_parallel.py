from iosight.parallel import run_local
from tests_support import crash_or_echo


def test_crashes_and_hangs_become_errors_and_the_rest_finishes():
    tasks = [(i, a) for i, a in enumerate(["a", "segv", "b", "sleep", "abort", "raise", "c"])]
    results = {r.key: r for r in run_local(crash_or_echo, tasks, workers=2, timeout=3)}
    assert sorted(results) == list(range(7))
    assert [results[i].value for i in (0, 2, 6)] == ["A", "B", "C"]
    assert "SIGSEGV" in results[1].error
    assert "timed out after 3 s" in results[3].error
    assert "SIGABRT" in results[4].error
    assert results[5].error == "ValueError: bad input"


def test_workers_are_recycled_after_max_tasks():
    tasks = [(i, str(i)) for i in range(7)]
    out = sorted(r.value for r in run_local(crash_or_echo, tasks, workers=1, max_tasks=2))
    assert out == sorted(str(i) for i in range(7))
