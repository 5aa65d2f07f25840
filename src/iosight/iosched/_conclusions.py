"""The paper's conclusions (Bandet et al., 2024, §VI) tested on the study's runs, as typed findings.

Every claim is read as the paper words it and tested on *paired* differences: the
heuristics of one comparison ran on the same application sets, so each set gives one
relative difference ``100 (A / B - 1)`` (%) of the metric. Per load bin of
I/O-load(pi_sys) the finding holds the mean difference and its 95% t-interval, and the
verdict follows the interval, not the mean:

- ``lower`` (A better than B, lower is better): yes if the interval is below 0, NO if
  it is above 0, else undecided;
- ``no_higher`` (A at most ``tol`` % worse than B): yes if the interval's top is
  <= ``tol``, NO if its bottom is > ``tol``, else undecided;
- ``within`` (A and B the same up to ``tol`` %): yes if the interval lies in
  [-tol, tol], NO if it lies outside, else undecided.

A claim that applies to several bins is yes when every bin with enough sets is yes, NO
when one is NO, undecided otherwise, and n/a when no bin has enough sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from iosight.iosched._placement import MCKP_NAMES

if TYPE_CHECKING:
    import pandas as pd

#: I/O-load(pi_sys) bin edges of the conclusions (the paper's "low" is the first bin,
#: its "large"/"heavier" I/O-load the last one).
LOAD_EDGES = (0.0, 0.3, 0.6, 1.0, np.inf)
LOW, HIGH = (0,), (3,)  # bin indices
ALL = (0, 1, 2, 3)
NOT_LOWEST = (1, 2, 3)
HEURISTICS = ("BestBdw", "Nsys", "TCPU", "Static")
Rule = Literal["lower", "no_higher", "within"]
Verdict = Literal["yes", "NO", "undecided", "n/a"]


@dataclass(frozen=True)
class BinDifference:
    """Paired relative difference ``100 (A / B - 1)`` in one load bin.

    ``lo``: the load bin's lower end; ``hi``: its upper end (excluded); ``sets``: paired
    application sets in the bin; ``mean``: the mean paired difference (%); ``ci_low``: its 95%
    interval's lower end; ``ci_high``: its upper end; ``verdict``: ``yes``, ``NO``,
    ``undecided`` or ``n/a`` in this bin.
    """

    lo: float
    hi: float
    sets: int
    mean: float
    ci_low: float
    ci_high: float
    verdict: Verdict

    @property
    def label(self) -> str:
        """The load bin as text, ``[lo, hi)``."""
        return f"[{self.lo:g}, {self.hi:g})"


@dataclass(frozen=True)
class Finding:
    """One claim of the paper, one comparison ``A vs B`` on one metric, and its verdict.

    ``case``: the study case (curves and platform); ``section``: the paper's section of the
    claim; ``claim``: the claim as the paper words it; ``a``: the heuristic A compared; ``b``:
    the heuristic B it is compared with; ``metric``: the metric compared; ``rule``: ``lower``,
    ``no_higher`` or ``within``: what A must be against B; ``tol``: the tolerance of ``within``
    (%); ``bins``: the paired difference per load bin; ``applies``: the bins the claim is about;
    ``verdict``: ``yes``, ``NO``, ``undecided`` or ``n/a``; ``note``: what the verdict should be
    read with.
    """

    case: str
    section: str
    claim: str
    a: str
    b: str
    metric: str
    rule: Rule
    tol: float
    bins: tuple[BinDifference, ...]
    applies: tuple[int, ...]
    verdict: Verdict
    note: str = ""

    @property
    def holds(self) -> bool | None:
        """True (yes), False (NO), None (undecided or not testable)."""
        return {"yes": True, "NO": False}.get(self.verdict)

    @property
    def measured(self) -> str:
        """The tested bins as ``[lo, hi): mean % [ci_low, ci_high] (sets)``."""
        parts = []
        for i in self.applies:
            d = self.bins[i]
            if d.sets == 0:
                continue
            parts.append(
                f"{d.label}: {d.mean:+.1f}% [{d.ci_low:+.1f}, {d.ci_high:+.1f}] ({d.sets})"
            )
        return "; ".join(parts) or "n/a (no runs in these loads)"


def _t_interval(x: np.ndarray) -> tuple[float, float, float]:
    from scipy.stats import t

    m = float(np.mean(x))
    if len(x) < 2:
        return m, np.nan, np.nan
    half = float(t.ppf(0.975, len(x) - 1) * np.std(x, ddof=1) / np.sqrt(len(x)))
    return m, m - half, m + half


def _bin_verdict(rule: Rule, tol: float, lo: float, hi: float) -> Verdict:
    if not np.isfinite(lo):
        return "n/a"
    if rule == "lower":
        return "yes" if hi < 0 else ("NO" if lo > 0 else "undecided")
    if rule == "no_higher":
        return "yes" if hi <= tol else ("NO" if lo > tol else "undecided")
    return "yes" if -tol <= lo and hi <= tol else ("NO" if lo > tol or hi < -tol else "undecided")


def _combine(verdicts: list[Verdict]) -> Verdict:
    tested = [v for v in verdicts if v != "n/a"]
    if not tested:
        return "n/a"
    if "NO" in tested:
        return "NO"
    return "yes" if all(v == "yes" for v in tested) else "undecided"


def paired_differences(
    a: pd.DataFrame, b: pd.DataFrame, metric: str, on: list[str]
) -> pd.DataFrame:
    """``100 (A / B - 1)`` of ``metric`` for rows of ``a`` and ``b`` matched on ``on``
    (sets where B's metric is 0 are left out), with ``io_load_sys`` of the set."""
    m = a[[*on, "io_load_sys", metric]].merge(b[[*on, metric]], on=on, suffixes=("_a", "_b"))
    m = m[m[f"{metric}_b"] > 0]
    return m.assign(diff=100 * (m[f"{metric}_a"] / m[f"{metric}_b"] - 1))


def _bins(diff: pd.DataFrame, rule: Rule, tol: float, min_sets: int) -> tuple:
    out = []
    idx = np.searchsorted(LOAD_EDGES, diff["io_load_sys"].to_numpy(), side="right") - 1
    for i, (lo, hi) in enumerate(zip(LOAD_EDGES[:-1], LOAD_EDGES[1:], strict=True)):
        x = diff["diff"].to_numpy()[idx == i]
        if len(x) == 0:
            out.append(BinDifference(lo, hi, 0, np.nan, np.nan, np.nan, "n/a"))
            continue
        m, cl, ch = _t_interval(x)
        v = _bin_verdict(rule, tol, cl, ch) if len(x) >= min_sets else "n/a"
        out.append(BinDifference(lo, hi, len(x), m, cl, ch, v))
    return tuple(out)


@dataclass(frozen=True)
class _Claim:
    section: str
    claim: str
    a: str
    b: str
    metric: str
    rule: Rule
    applies: tuple[int, ...]
    tol: float = 0.0
    placement: str = "Greedy-NC"  # "any": a, b are placements, averaged over allocators
    study: str = "accurate"
    note: str = ""


def _claims(dataset: str, k: int | None, n: int | None, zero: bool = False) -> list[_Claim]:
    """The paper's conclusions this study can check, as claims on its results."""
    return (
        _allocator_claims()
        + _placement_claims()
        + _mckp_claims(k, n, zero)
        + [_static_claim(dataset)]
        + _robust_claims()
    )


def _allocator_claims() -> list[_Claim]:
    """§VI-A1, §VI-A2, §VI-B: the allocators against BestBdw."""
    out = [
        _Claim(
            "§VI-A1",
            "In general, BestBdw is the best allocation strategy (read at low I/O-load; "
            "BestBdw at most 1 % worse)",
            "BestBdw",
            other,
            "mean_slowdown",
            "no_higher",
            LOW,
            tol=1.0,
        )
        for other in ("Nsys", "TCPU", "Static")
    ]
    out += [
        _Claim(
            "§VI-A1",
            "When I/O-load is large Nsys-Allocator performs better than BestBdw",
            "Nsys",
            "BestBdw",
            "mean_slowdown",
            "lower",
            HIGH,
        ),
        _Claim(
            "§VI-B",
            "Under a heavier I/O-load TCPU-Allocator provides the same I/O performance "
            "as BestBdw (read: at most 5 % worse)",
            "TCPU",
            "BestBdw",
            "mean_slowdown",
            "no_higher",
            HIGH,
            tol=5.0,
        ),
        _Claim(
            "§VI-A2",
            "At larger I/O-load, TCPU-Allocator has an advantage over BestBdw in Machine-IdleTime",
            "TCPU",
            "BestBdw",
            "idle_time",
            "lower",
            HIGH,
        ),
    ]
    return out


def _placement_claims() -> list[_Claim]:
    """§VI-A1: the placement heuristics against each other."""
    return [
        _Claim(
            "§VI-A1",
            "Greedy-Clairvoyant has negligible gain on Mean-I/O-SlowDown compared to "
            "Greedy-Non-Clairvoyant (within 5 %)",
            "Greedy-C",
            "Greedy-NC",
            "mean_slowdown",
            "within",
            ALL,
            tol=5.0,
            placement="any",
        ),
        _Claim(
            "§VI-A1",
            "Greedy-Clairvoyant balances I/O better (I/O-spread) than Greedy-Non-Clairvoyant",
            "Greedy-C",
            "Greedy-NC",
            "io_spread",
            "lower",
            ALL,
            placement="any",
        ),
        _Claim(
            "§VI-A1",
            "Greedy-Non-Clairvoyant still balances I/O better than Random-Placement",
            "Greedy-NC",
            "Random",
            "io_spread",
            "lower",
            ALL,
            placement="any",
        ),
    ]


def _mckp_claims(k: int | None, n: int | None, zero: bool) -> list[_Claim]:
    """§VI-A1: MCKP against every heuristic (and, with ``zero``, its zero-forwarder
    reading)."""
    one_each = k is not None and n is not None and k % n == 0
    mckp_note = (
        f"K = {k} is a multiple of N = {n}: the capacity rule (N ceil(K/N) slots) gives "
        "every application exactly one resource, so MCKP cannot favour a few here"
        if one_each
        else ""
    )
    out = []
    readings = {  # MCKP_NAMES -> (how the claim names it, note)
        "MCKP": ("", mckp_note),
        "MCKP-0": (
            "; MCKP with the zero-forwarder option",
            "MCKP-0: Bez et al.'s zero-forwarder option (n_j = 0 at b(0), exclusive "
            "resources), so MCKP favours a few applications at any K",
        ),
    }
    for name in MCKP_NAMES if zero else MCKP_NAMES[:1]:
        reading, note = readings[name]
        out += [
            _Claim(
                "§VI-A1",
                "MCKP performs worse than all the other studied policies "
                f"(Mean-I/O-SlowDown{reading})",
                other,
                name,
                "mean_slowdown",
                "lower",
                ALL,
                note=note,
            )
            for other in HEURISTICS
        ]
    return out


def _static_claim(dataset: str) -> _Claim:
    """§VI-C: Static on OSTs, and not on I/O nodes."""
    if dataset == "ost":
        return _Claim(
            "§VI-C",
            "Static's performance is excellent for OSTs (at most 15 % worse than TCPU)",
            "Static",
            "TCPU",
            "mean_slowdown",
            "no_higher",
            ALL,
            tol=15.0,
        )
    return _Claim(
        "§VI-C",
        "Static's excellent OST performance is not seen with I/O nodes "
        "(read: TCPU better than Static)",
        "TCPU",
        "Static",
        "mean_slowdown",
        "lower",
        ALL,
    )


def _robust_claims() -> list[_Claim]:
    """§VI-B: profile curves instead of exact ones change almost nothing."""
    return [
        _Claim(
            "§VI-B",
            f"{a} + {p} with profile curves: almost identical performance, the difference "
            "negligible (up to 4 % worse; read as at most 5 % worse, except extremely low "
            "I/O-load)",
            f"{a} + {p} (profile curves)",
            f"{a} + {p} (exact curves)",
            "mean_slowdown",
            "no_higher",
            NOT_LOWEST,
            tol=5.0,
            placement=p,
            study="robust",
        )
        for a, p in (("TCPU", "Greedy-NC"), ("BestBdw", "Greedy-NC"), ("BestBdw", "Greedy-C"))
    ]


def _diffs(df: pd.DataFrame, c: _Claim) -> pd.DataFrame:
    acc = df[df["study"] == "accurate"]
    keys = ["theta", "set"]
    if c.study == "robust":
        a_name = c.a.split(" + ")[0]
        both = df[(df["allocator"] == a_name) & (df["placement"] == c.placement)]
        rob, exact = both[both["study"] == "robust"], both[both["study"] == "accurate"]
        return paired_differences(rob, exact, c.metric, keys)
    if c.placement == "any":
        heur = acc[acc["allocator"].isin(HEURISTICS)]
        a, b = heur[heur["placement"] == c.a], heur[heur["placement"] == c.b]
        d = paired_differences(a, b, c.metric, [*keys, "allocator"])
        # one difference per application set: the mean over its allocators
        return d.groupby(keys, as_index=False).agg(
            io_load_sys=("io_load_sys", "first"), diff=("diff", "mean")
        )
    g = acc[acc["placement"].isin([c.placement, *MCKP_NAMES])]
    a, b = g[g["allocator"] == c.a], g[g["allocator"] == c.b]
    return paired_differences(a, b, c.metric, keys)


def _case_findings(case: str, df: pd.DataFrame, min_sets: int) -> list[Finding]:
    k = int(df["k"].iloc[0]) if "k" in df else None
    n = int(df["n_resources"].iloc[0]) if "n_resources" in df else None
    out = []
    zero = bool((df["allocator"] == MCKP_NAMES[1]).any())  # the zero-forwarder MCKP
    for c in _claims(str(df["dataset"].iloc[0]), k, n, zero):
        if c.study == "robust" and not (df["study"] == "robust").any():
            continue
        bins = _bins(_diffs(df, c), c.rule, c.tol, min_sets)
        verdict = _combine([bins[i].verdict for i in c.applies])
        out.append(
            Finding(
                case=case,
                section=c.section,
                claim=c.claim,
                a=c.a,
                b=c.b,
                metric=c.metric,
                rule=c.rule,
                tol=c.tol,
                bins=bins,
                applies=c.applies,
                verdict=verdict,
                note=c.note,
            )
        )
    return out


def conclusions(results: pd.DataFrame, *, min_sets: int = 10) -> list[Finding]:
    """Test the paper's conclusions on the rows of one or more studies (column ``case``,
    else ``dataset``); bins with fewer than ``min_sets`` paired sets give no verdict.

    ``results``: the rows of one or more studies (:func:`load_results`).
    """
    d = results if "case" in results else results.assign(case=results["dataset"])
    out: list[Finding] = []
    for case, df in d.groupby("case", sort=False):
        out += _case_findings(str(case), df, min_sets)
    return out


def findings_frame(findings: list[Finding]) -> pd.DataFrame:
    """One row per finding: case, section, claim, comparison, measured (paired
    differences with 95% intervals per load bin), holds, note.

    ``findings``: :func:`conclusions`' findings.
    """
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "case": f.case,
                "section": f.section,
                "claim": f.claim,
                "test": f"{f.metric}: 100 ({f.a} / {f.b} - 1), {f.rule}"
                + (f" {f.tol:g} %" if f.tol else ""),
                "measured": f.measured,
                "holds": f.verdict,
                "note": f.note,
            }
            for f in findings
        ],
        columns=["case", "section", "claim", "test", "measured", "holds", "note"],
    )
