"""Allocation heuristics (004 §IV-A, Algorithm 1) and their Table II inputs."""

import numpy as np
import pytest

from iosight.iosched import (
    ALLOCATORS,
    Application,
    Workload,
    allocate,
    n_sys,
    workload_io_load,
)
from iosight.iosched._allocators import application_inputs


def _same(k, q, n_res, bw=(10.0, 12.0), t_cpu=100.0, v_io=1000.0):
    apps = [Application(q=qq, phases=2, t_cpu=t_cpu, v_io=v_io, bw=list(bw)) for qq in q[:k]]
    return Workload.from_apps(apps, n_resources=n_res, q_cpu=sum(q[:k]))


def test_tcpu_by_hand():
    # b = 10, 12: stress 0.5 then 0.90909, CPUload 0.5 Q then 0.54545 Q.
    # N = 2, three apps: load(pi_sys) = 0.75; one upgrade: 0.75 + 0.40909 / 2 = 0.9545;
    # two upgrades would give 1.159 > 1. TCPU upgrades the largest Q (10).
    w = _same(3, [1, 10, 5], 2)
    rng = np.random.default_rng(0)
    assert allocate("TCPU", w, rng).tolist() == [1, 2, 1]
    assert allocate("BestBdw", w, rng).tolist() == [2, 2, 2]
    assert allocate("Nsys", w, rng).tolist() == [1, 1, 1]
    assert workload_io_load(w, np.array([1, 2, 1])) == pytest.approx(0.954545, 1e-5)


def test_tcpu_is_bestbdw_when_pi_perf_fits():
    w = _same(2, [1, 10], 4)  # load(pi_perf) = 0.909 / 4 * 2 < 1
    rng = np.random.default_rng(0)
    assert allocate("TCPU", w, rng).tolist() == allocate("BestBdw", w, rng).tolist()


def test_tcpu_stays_at_pi_sys_when_saturated():
    w = _same(5, [1, 2, 3, 4, 5], 2)  # load(pi_sys) = 2.5 / 2 > 1
    assert allocate("TCPU", w, np.random.default_rng(0)).tolist() == [1] * 5


def test_tcpu_never_exceeds_load_one_when_avoidable():
    rng = np.random.default_rng(3)
    for _ in range(60):
        k, n_res = int(rng.integers(2, 25)), int(rng.integers(2, 20))
        bw = rng.uniform(1, 100, (k, 8))
        w = Workload(
            q=rng.integers(1, 50, k),
            phases=rng.integers(2, 21, k),
            t_cpu=rng.uniform(0, 5000, k),
            v_io=rng.uniform(1, 1e5, k),
            bw=bw,
            n_resources=n_res,
            q_cpu=480,
        )
        pi = allocate("TCPU", w, rng)
        load_sys = workload_io_load(w, n_sys(w.t_cpu, w.v_io, w.bw, n_res))
        if load_sys <= 1:
            assert workload_io_load(w, pi) <= 1 + 1e-12
        else:
            assert workload_io_load(w, pi) == pytest.approx(load_sys)


def test_static_rounds_and_clips():
    w = _same(3, [240, 12, 1], 20)  # Q N / Q_cpu (253) = 18.97, 0.95, 0.08
    assert allocate("Static", w, np.random.default_rng(0)).tolist() == [2, 1, 1]  # n_max = 2


def test_random_allocator_is_seeded_and_in_range():
    w = _same(10, list(range(1, 11)), 20, bw=(1, 2, 3, 4, 5))
    a = allocate("Random", w, np.random.default_rng(5))
    assert a.tolist() == allocate("Random", w, np.random.default_rng(5)).tolist()
    assert a.min() >= 1 and a.max() <= 5


def test_each_allocator_gets_only_its_table_ii_inputs():
    table_ii = {
        "Random": (),
        "Static": ("q",),
        "BestBdw": ("argmax_b",),
        "Nsys": ("v_io", "t_cpu", "b"),
        "TCPU": ("q", "v_io", "t_cpu", "b"),
    }
    assert set(ALLOCATORS.names()) == set(table_ii)
    w = _same(2, [1, 2], 4)
    for name, cls in ALLOCATORS.items():
        assert set(cls.inputs_needed) == set(table_ii[name])
        assert set(application_inputs(w, cls.inputs_needed)) == set(table_ii[name])


def test_measured_only_grid_allocates_only_measured_n():
    from iosight.iosched import CurveSet, generate_workload, schedule

    rng = np.random.default_rng(1)
    bw = rng.uniform(10, 100, (30, 8))
    bw[:, [2, 4, 5, 6]] = np.nan  # only n = 1, 2, 4, 8 measured
    curves = CurveSet(names=tuple(map(str, range(30))), bw=bw, source="hand")
    w, _ = generate_workload(curves, theta=0.9, k=40, rng=rng)
    assert w.allowed[0].tolist() == [True, True, False, True, False, False, False, True]
    for name in [*ALLOCATORS.names(), "MCKP"]:
        alloc, _ = schedule(name, "MCKP" if name == "MCKP" else "Greedy-NC", w, rng)
        assert set(alloc.tolist()) <= {1, 2, 4, 8}, name


def test_static_takes_the_nearest_measured_n():
    apps = [Application(q=q, phases=2, t_cpu=1, v_io=1, bw=[1, 2, np.nan, 4]) for q in (3, 5)]
    w = Workload.from_apps([*apps], n_resources=20, q_cpu=20)
    # targets round(3) = 3 -> 2 (tie with 4: the smaller), round(5) = 5 -> 4
    assert allocate("Static", w, np.random.default_rng(0)).tolist() == [2, 4]
