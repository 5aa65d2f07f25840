"""Hand-computed characteristic values of 004 §III (I/O-Stress, n_perf, n_sys, loads)."""

import numpy as np
import pytest

from iosight import IosightError
from iosight.iosched import (
    Application,
    Workload,
    cpu_load,
    io_load,
    io_stress,
    n_perf,
    n_sys,
)

# T_cpu = 100 s, V = 1000 MB, b = 10, 40, 45, 46 MB/s
# T_io = 100, 25, 22.222, 21.739 s; I/O-Stress = 0.5, 0.4, 0.54545, 0.71429
T, V, B = np.array([100.0]), np.array([1000.0]), np.array([[10.0, 40.0, 45.0, 46.0]])


def test_io_stress_by_hand():
    assert io_stress(T, V, B)[0] == pytest.approx([0.5, 0.4, 0.545454, 0.714286], rel=1e-5)


def test_n_perf_n_sys_by_hand():
    assert n_perf(B, 20).tolist() == [4]
    assert n_sys(T, V, B, 20).tolist() == [2]
    # only 3 resources on the platform: n_perf is cut to 3
    assert n_perf(B, 3).tolist() == [3]


def test_n_sys_at_most_n_perf_on_random_curves():
    rng = np.random.default_rng(0)
    bw = rng.uniform(1, 100, (200, 8))
    t, v = rng.uniform(0, 500, 200), rng.uniform(10, 1000, 200)
    assert np.all(n_sys(t, v, bw, 20) <= n_perf(bw, 20))  # Lemma 1


def test_cpu_load_and_io_load_by_hand():
    # CPUload(Q=10, n) = 10 * 100 / (100 + T_io(n)) = 5, 8, 8.1818
    assert cpu_load(np.array([10]), T, V, B)[0, :3] == pytest.approx([5.0, 8.0, 8.181818], 1e-6)
    t2, v2, b2 = np.r_[T, T], np.r_[V, V], np.vstack([B, B])
    # (0.4 + 0.545454) / 2 resources
    assert io_load(t2, v2, b2, np.array([2, 3]), 2) == pytest.approx(0.4727273, 1e-6)


def test_workload_from_apps_pads_curves_and_limits_n():
    apps = [
        Application(q=4, phases=2, t_cpu=10, v_io=100, bw=[10, 20, 30]),
        Application(q=2, phases=3, t_cpu=0, v_io=50, bw=[5]),
    ]
    w = Workload.from_apps(apps, n_resources=2, q_cpu=8)
    assert w.bw.shape == (2, 3) and np.isnan(w.bw[1, 1])
    assert w.n_max.tolist() == [2, 1]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"q": 0, "phases": 1, "t_cpu": 1, "v_io": 1, "bw": [1]},
        {"q": 1, "phases": 1, "t_cpu": 1, "v_io": 1, "bw": [1, 0]},
        {"q": 1, "phases": 1, "t_cpu": -1, "v_io": 1, "bw": [1]},
        {"q": 1, "phases": 1, "t_cpu": 1, "v_io": 1, "bw": [float("nan"), 2]},
        {"q": 2.5, "phases": 1, "t_cpu": 1, "v_io": 1, "bw": [1]},
        {"q": 1, "phases": True, "t_cpu": 1, "v_io": 1, "bw": [1]},
        {"q": 1, "phases": 1, "t_cpu": 1, "v_io": float("inf"), "bw": [1]},
        {"q": 1, "phases": 1, "t_cpu": 1, "v_io": 1, "bw": [1, float("inf")]},
    ],
)
def test_bad_application_is_an_iosight_error(kwargs):
    with pytest.raises(IosightError):
        Application(**kwargs)
