"""Bandwidth curves: FORGE loader, profile families, fits, OST curves, CSV."""

import numpy as np
import pandas as pd
import pytest

from iosight import IosightError
from iosight.iosched import (
    classify_profiles,
    interpolate_grid,
    load_curves_csv,
    load_forge,
    ost_curves,
    profile_estimates,
    profile_fits,
)

FORGE = ("datasets", "bez_forge_io_forwarding_bandwidth")


def test_interpolation_is_linear_and_not_extrapolated():
    got = interpolate_grid(np.array([1, 2, 4, 8]), np.array([[10.0, 20.0, 40.0, 0.5]]))
    assert got[0].tolist() == [10, 20, 30, 40, 30.125, 20.25, 10.375, 0.5]
    assert interpolate_grid([1, 4], [[1.0, 4.0]], n_max=2).shape == (1, 2)


def test_classify_profiles_by_hand():
    bw = np.array(
        [
            [1, 2, 3, 4],  # Ascent
            [4, 3, 2, 1],  # Descent
            [1, 3, 2, 1],  # Peak
            [10, 11, 10.5, 9.5],  # Neutral (within 20 % of the max)
        ],
        dtype=float,
    )
    assert classify_profiles(bw).tolist() == ["Ascent", "Descent", "Peak", "Neutral"]


def test_profile_fit_and_estimates_keep_b1():
    bw = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [4, 3, 2, 1.0]])
    prof = classify_profiles(bw)
    fits = profile_fits(bw, prof)
    assert fits["Ascent"] == pytest.approx([1, 2, 3, 4])  # both normalise to n
    est = profile_estimates(bw, prof)
    assert est[:, 0] == pytest.approx(bw[:, 0])
    assert est[1] == pytest.approx(bw[1])


def test_forge_mean_and_best(shared):
    root = shared(*FORGE)
    mean = load_forge(root)
    best = load_forge(root, statistic="best")
    assert mean.bw.shape == best.bw.shape == (189, 8)
    assert np.all(best.bw >= mean.bw - 1e-9)
    raw = pd.read_csv(root / "marenostrum-4.results.csv", sep=";")
    one = raw[(raw.processes == 1536) & (raw.clients == 32) & (raw.layout == 0)]
    one = one[(one.spatiality == 0) & (one.request == 4096) & (one.odirect == 1)]
    i = mean.names.index("1536-32-0-0-4096-1")
    for n in (1, 2, 4, 8):
        assert mean.bw[i, n - 1] == pytest.approx(one[one.forwarders == n].bandwidth.mean())
    # b(0): direct GPFS access (the other file), kept for MCKP's zero-forwarder option
    gpfs = pd.read_csv(root / "marenostrum-4-gpfs.results.csv", sep=";")
    g = gpfs[(gpfs.processes == 1536) & (gpfs.clients == 32) & (gpfs.layout == 0)]
    g = g[(g.spatiality == 0) & (g.request == 4096) & (g.odirect == 1)]
    assert mean.bw0.shape == (189,)
    assert mean.bw0[i] == pytest.approx(g[g.forwarders == 0].bandwidth.mean())
    # n = 3 lies halfway between the measured n = 2 and n = 4
    assert mean.bw[i, 2] == pytest.approx((mean.bw[i, 1] + mean.bw[i, 3]) / 2)


def test_forge_missing_is_an_error(tmp_path):
    with pytest.raises(IosightError, match="FORGE data not found"):
        load_forge(tmp_path)


def test_ost_curves_are_parametric_and_seeded():
    a, b = ost_curves(seed=3), ost_curves(seed=3)
    assert a.bw.shape == (301, 8) and np.array_equal(a.bw, b.bw)
    assert "parametric" in a.source
    assert set(a.profiles) == {"Ascent", "Descent", "Peak", "Neutral"}


def test_csv_loader(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("name,n,bandwidth\na,1,10\na,4,40\nb,1,5\nb,2,4\nb,3,3\n")
    c = load_curves_csv(p)
    assert c.names == ("a", "b") and c.bw.tolist() == [[10, 20, 30], [5, 4, 3]]
    p.write_text("name,n,bandwidth\na,2,10\n")
    with pytest.raises(IosightError, match="n = 1"):
        load_curves_csv(p)
    p.write_text("name,nodes,bw\na,1,10\n")
    with pytest.raises(IosightError, match="columns"):
        load_curves_csv(p)


def test_profile_table_by_hand():
    from iosight.iosched import CurveSet
    from iosight.report.iosched import profile_table

    # two Ascent curves (fit peaks at 4, as both do) and one Peak curve (alone: fit = itself)
    bw = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [1, 3, 2, 1.0]])
    t = profile_table(CurveSet(names=("a", "b", "c"), bw=bw, source="hand"))
    assert t["profile"].tolist() == ["Ascent", "Peak"] and set(t["curve_set"]) == {"hand"}
    assert t["curves"].tolist() == [2, 1] and t["fitted_n_perf"].tolist() == [4, 2]
    assert t["same_n_perf"].tolist() == [1.0, 1.0]


def test_family_medians_do_not_invent_a_peak():
    """Peak curves measured at n = 1, 2, 4, 8 (linear in between) that all peak at n = 2:
    the per-n median peaks at 2; the pooled cubic of Fig. 11 peaks elsewhere."""
    from iosight.iosched import profile_estimates, profile_fits, profile_medians

    rng = np.random.default_rng(0)
    measured = np.array([1, 2, 4, 8])
    rows = []
    for _ in range(30):
        b = np.array([1.0, rng.uniform(1.3, 1.6), rng.uniform(1.0, 1.2), rng.uniform(0.6, 0.9)])
        rows.append(np.interp(np.arange(1, 9), measured, b))
    bw = 100 * np.array(rows)
    prof = np.array(["Peak"] * len(bw))
    med = profile_medians(bw, prof)["Peak"]
    assert np.argmax(med) + 1 == 2 and med[0] == 1.0
    assert np.argmax(profile_fits(bw, prof)["Peak"]) + 1 != 2
    est = profile_estimates(bw, prof)  # default: medians, scaled to each curve's b(1)
    assert np.allclose(est, bw[:, :1] * med)
    assert np.allclose(profile_estimates(bw, prof, method="cubic")[:, 0], bw[:, 0])
