"""Every verdict of the conclusions, on a study where the claim holds and one where it
does not (synthetic results: metric values set per heuristic, 0.5 % noise per set)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iosight.iosched import ROBUST_PAIRS, conclusions, findings_frame

LOADS = (0.1, 0.4, 0.8, 1.2)  # one per load bin of the conclusions
METRICS = ("mean_slowdown", "max_slowdown", "io_spread", "idle_time")


def synthetic_results(factor, *, dataset="io-nodes", sets=20, noise=0.005, k=40, n=20):
    """Rows of a study whose metric is ``factor(allocator, placement, study, metric, load)``
    times a per-set base value, times (1 + noise * N(0, 1)). Synthetic."""
    rng = np.random.default_rng(0)
    allocators = ("BestBdw", "Nsys", "TCPU", "Static", "Random")
    combos = [(a, p, "accurate") for a in allocators for p in ("Greedy-C", "Greedy-NC", "Random")]
    combos += [("MCKP", "MCKP", "accurate")] + [(a, p, "robust") for a, p in ROBUST_PAIRS]
    rows = []
    for load in LOADS:
        for s in range(sets):
            base = 1 + rng.random()
            for a, p, study in combos:
                row = {"dataset": dataset, "theta": load, "set": s, "io_load_sys": load}
                row |= {"study": study, "allocator": a, "placement": p, "k": k, "n_resources": n}
                for m in METRICS:
                    f = factor(a, p, study, m, load)
                    row[m] = base * f * (1 + noise * rng.standard_normal())
                rows.append(row)
    return pd.DataFrame(rows)


def only(a=None, p=None, study="accurate", metric="mean_slowdown", value=1.0, loads=LOADS):
    """A factor that is ``value`` for the rows named, 1 elsewhere."""

    def f(a_, p_, s_, m_, load):
        hit = (a in (None, a_)) and (p in (None, p_)) and s_ == study and m_ == metric
        return value if hit and load in loads else 1.0

    return f


def verdict(results, a, b, metric="mean_slowdown", claim=""):
    found = [
        f
        for f in conclusions(results, min_sets=10)
        if f.a == a and f.b == b and f.metric == metric and claim in f.claim
    ]
    assert len(found) == 1, [f.claim for f in found]
    return found[0]


CASES = [  # (a, b, metric, claim text, factor where it holds, factor where it does not)
    ("BestBdw", "Nsys", "mean_slowdown", "best", only("Nsys", value=1.3), only("Nsys", value=0.8)),
    (
        "Nsys",
        "BestBdw",
        "mean_slowdown",
        "large",
        only("Nsys", value=0.8),
        only("Nsys", value=1.2),
    ),
    ("TCPU", "BestBdw", "mean_slowdown", "same", only("TCPU", value=1.01), only("TCPU", value=1.2)),
    (
        "TCPU",
        "BestBdw",
        "idle_time",
        "",
        only("TCPU", metric="idle_time", value=0.9),
        only("TCPU", metric="idle_time", value=1.1),
    ),  # noqa: E501
    (
        "Greedy-C",
        "Greedy-NC",
        "mean_slowdown",
        "",
        only(p="Greedy-C", value=0.99),
        only(p="Greedy-C", value=0.8),
    ),  # noqa: E501
    (
        "Greedy-C",
        "Greedy-NC",
        "io_spread",
        "",
        only(p="Greedy-C", metric="io_spread", value=0.5),
        only(p="Greedy-C", metric="io_spread", value=1.5),
    ),  # noqa: E501
    (
        "Greedy-NC",
        "Random",
        "io_spread",
        "",
        only(p="Random", metric="io_spread", value=2.0),
        only(p="Random", metric="io_spread", value=0.5),
    ),  # noqa: E501
    ("BestBdw", "MCKP", "mean_slowdown", "", only("MCKP", value=1.5), only("MCKP", value=0.7)),
    ("TCPU", "Static", "mean_slowdown", "", only("Static", value=1.5), only("Static", value=0.9)),
    (
        "TCPU + Greedy-NC (profile curves)",
        "TCPU + Greedy-NC (exact curves)",
        "mean_slowdown",
        "",
        only("TCPU", "Greedy-NC", study="robust", value=1.02),
        only("TCPU", "Greedy-NC", study="robust", value=1.3),
    ),
]


@pytest.mark.parametrize(
    "a, b, metric, claim, holds, fails", CASES, ids=[c[0] + "/" + c[1] + "/" + c[2] for c in CASES]
)  # noqa: E501
def test_each_verdict_both_ways(a, b, metric, claim, holds, fails):
    assert verdict(synthetic_results(holds), a, b, metric, claim).verdict == "yes"
    assert verdict(synthetic_results(fails), a, b, metric, claim).verdict == "NO"


def test_static_on_osts_both_ways():
    ok = synthetic_results(only("Static", value=1.05), dataset="ost")
    bad = synthetic_results(only("Static", value=1.5), dataset="ost")
    assert verdict(ok, "Static", "TCPU", claim="OSTs").verdict == "yes"
    assert verdict(bad, "Static", "TCPU", claim="OSTs").verdict == "NO"


def test_the_interval_decides_not_the_mean():
    """Equal heuristics with noisy sets: the mean differs from 0, the interval spans it."""
    noisy = synthetic_results(lambda *_: 1.0, noise=0.2)
    f = verdict(noisy, "Nsys", "BestBdw", claim="large")
    d = f.bins[3]
    assert d.mean != 0 and d.ci_low < 0 < d.ci_high and f.verdict == "undecided"
    # the interval is the t-interval of the paired differences
    acc = noisy[(noisy.study == "accurate") & (noisy.placement == "Greedy-NC")]
    a, b = acc[acc.allocator == "Nsys"], acc[acc.allocator == "BestBdw"]
    x = 100 * (a[a.theta == 1.2].mean_slowdown.to_numpy() / b[b.theta == 1.2].mean_slowdown - 1)
    assert d.mean == pytest.approx(x.mean()) and d.sets == 20
    assert d.ci_high - d.mean == pytest.approx(2.093 * x.std(ddof=1) / np.sqrt(20), rel=1e-3)


def test_too_few_sets_is_not_a_verdict_and_mckp_note():
    small = synthetic_results(only("Nsys", value=0.8), sets=3)
    f = verdict(small, "Nsys", "BestBdw", claim="large")
    assert f.verdict == "n/a" and f.holds is None and f.bins[3].sets == 3
    m = verdict(small, "BestBdw", "MCKP")
    assert "exactly one resource" in m.note
    k30 = synthetic_results(only("Nsys", value=0.8), sets=3, k=30)
    assert verdict(k30, "BestBdw", "MCKP").note == ""
    frame = findings_frame(conclusions(small, min_sets=10))
    assert list(frame.columns) == ["case", "section", "claim", "test", "measured", "holds", "note"]


def test_mckp_zero_claims_only_when_its_rows_exist():
    def with_zero(factor):
        df = synthetic_results(factor)
        zero = df[df.allocator == "MCKP"].assign(allocator="MCKP-0", placement="MCKP-0")
        return pd.concat([df, zero.assign(mean_slowdown=zero.mean_slowdown * 2.0)])

    assert not [f for f in conclusions(synthetic_results(lambda *_: 1.0)) if f.b == "MCKP-0"]
    worst = verdict(with_zero(lambda *_: 1.0), "Nsys", "MCKP-0")
    assert worst.verdict == "yes" and "zero-forwarder" in worst.note
    # MCKP-0 better than Static (Static's slowdown 3x): the claim fails
    assert verdict(with_zero(only("Static", value=3.0)), "Static", "MCKP-0").verdict == "NO"
