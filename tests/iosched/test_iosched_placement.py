"""Placements (004 §IV-B) and the MCKP baseline on tiny cases."""

import numpy as np
import pytest

from iosight import IosightError
from iosight.iosched import PLACEMENTS, Application, Workload, mckp, place, schedule


def _w(apps, n_res):
    return Workload.from_apps(apps, n_resources=n_res, q_cpu=10)


def _rows(m):
    return [np.flatnonzero(r).tolist() for r in m]


def test_greedy_non_clairvoyant_round_robin():
    apps = [Application(q=1, phases=2, t_cpu=1, v_io=1, bw=[1, 1, 1])] * 3
    got = place("Greedy-NC", np.array([1, 3, 2]), _w(apps, 4), np.random.default_rng(0))
    # by decreasing n: app1 -> 0,1,2; app2 -> 3,0; app0 -> 1
    assert _rows(got) == [[1], [0, 1, 2], [0, 3]]


def test_greedy_clairvoyant_least_occupied():
    # constant b = 10: ratios T_io / (T_cpu + T_io) = 0.5, 0.2, 0.25
    apps = [
        Application(q=1, phases=2, t_cpu=100, v_io=1000, bw=[10, 10]),
        Application(q=1, phases=2, t_cpu=400, v_io=1000, bw=[10, 10]),
        Application(q=1, phases=2, t_cpu=300, v_io=1000, bw=[10, 10]),
    ]
    got = place("Greedy-C", np.array([1, 1, 2]), _w(apps, 3), np.random.default_rng(0))
    # app0 -> r0 (0.5); app2 -> r1, r2 (0.25 each); app1 -> r1 (tie, lowest index)
    assert _rows(got) == [[0], [1], [1, 2]]


def test_random_placement_distinct_and_seeded():
    apps = [Application(q=1, phases=2, t_cpu=1, v_io=1, bw=[1] * 5)] * 6
    alloc = np.array([1, 5, 2, 3, 4, 1])
    a = place("Random", alloc, _w(apps, 5), np.random.default_rng(9))
    assert a.sum(axis=1).tolist() == alloc.tolist()
    assert np.array_equal(a, place("Random", alloc, _w(apps, 5), np.random.default_rng(9)))


def test_mckp_by_hand_exclusive():
    # N = 4: (2, 2) gives 30 + 12 = 42 > (3, 1) = 41 > (2, 1) = 40
    apps = [
        Application(q=1, phases=2, t_cpu=1, v_io=1, bw=[10, 30, 31, 32]),
        Application(q=1, phases=2, t_cpu=1, v_io=1, bw=[10, 12, 13, 14]),
    ]
    alloc, placement = mckp(_w(apps, 4))
    assert alloc.tolist() == [2, 2]
    assert _rows(placement) == [[0, 1], [2, 3]]


def test_mckp_more_apps_than_resources_shares_evenly():
    apps = [Application(q=1, phases=2, t_cpu=1, v_io=1, bw=[10, 11])] * 5
    alloc, placement = mckp(_w(apps, 2))  # 2 * ceil(5 / 2) = 6 slots
    assert alloc.sum() == 6 and placement.sum(axis=0).max() <= 3


def test_mckp_must_be_paired_with_itself():
    apps = [Application(q=1, phases=2, t_cpu=1, v_io=1, bw=[10])]
    with pytest.raises(IosightError):
        schedule("MCKP", "Greedy-NC", _w(apps, 1), np.random.default_rng(0))


def test_placements_read_only_table_ii_inputs():
    want = {"Random": (), "Greedy-NC": (), "Greedy-C": ("v_io", "t_cpu", "b")}
    assert {n: set(c.inputs_needed) for n, c in PLACEMENTS.items()} == {
        n: set(v) for n, v in want.items()
    }


def test_known_curves_equal_to_true_ones_change_nothing():
    from iosight.iosched import generate_workload, ost_curves

    w, _ = generate_workload(ost_curves(seed=5), theta=0.5, k=12, rng=np.random.default_rng(2))
    for pair in (("TCPU", "Greedy-NC"), ("BestBdw", "Greedy-C"), ("MCKP", "MCKP")):
        a = schedule(*pair, w, np.random.default_rng(0))
        b = schedule(*pair, w, np.random.default_rng(0), known_bw=w.bw.copy())
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def _k2n(n_res=4):
    """K = 2N: 4 apps that gain from more resources, 4 flat ones; b(0) = 90 for all."""
    bw = np.array([[100, 190, 200, 205.0]] * n_res + [[100, 105, 106, 107.0]] * n_res)
    k = 2 * n_res
    return Workload(
        q=np.ones(k, dtype=np.int64),
        phases=np.full(k, 2),
        t_cpu=np.full(k, 10.0),
        v_io=np.full(k, 1000.0),
        bw=bw,
        n_resources=n_res,
        q_cpu=k,
        bw0=np.full(k, 90.0),
    )


def test_mckp_zero_forwarder_favours_a_few_at_k_2n():
    w = _k2n()
    # capacity rule, n_j >= 1: 4 * ceil(8 / 4) = 8 slots, one resource each
    assert mckp(w)[0].tolist() == [1] * 8
    # zero option, exclusive resources: (2, 2, 0, ...) = 380 + 6 * 90 = 920 beats
    # (1, 1, 1, 1, 0, ...) = 400 + 4 * 90 = 760 and (4, 0, ...) = 205 + 7 * 90 = 835
    alloc, placement = schedule("MCKP-0", "MCKP-0", w, np.random.default_rng(0))
    assert sorted(alloc.tolist()) == [0, 0, 0, 0, 0, 0, 2, 2]
    assert set(np.flatnonzero(alloc == 2)) <= {0, 1, 2, 3}
    assert placement.sum(axis=0).max() == 1  # exclusive
    assert np.array_equal(placement.sum(axis=1), alloc)


def test_mckp_zero_needs_b0():
    apps = [Application(q=1, phases=2, t_cpu=1, v_io=1, bw=[10, 11])] * 3
    with pytest.raises(IosightError, match="b\\(0\\)"):
        mckp(_w(apps, 2), zero=True)


@pytest.mark.parametrize(("allocator", "placement"), [("TCPU", "MCKP"), ("MCKP-0", "Greedy-NC")])
def test_mckp_paired_with_a_heuristic_names_mckp(allocator, placement):
    w = Workload.from_apps(
        [Application(q=1, phases=2, t_cpu=1, v_io=1, bw=[10, 11])] * 2, n_resources=2, q_cpu=2
    )
    joint = "MCKP" if placement == "MCKP" else allocator
    with pytest.raises(IosightError, match=f"^{joint} allocates and places at once"):
        schedule(allocator, placement, w, np.random.default_rng(0))
