"""How the iosight predictor's design is chosen: walk-forward scores on the training part.

Every design choice of the deployable write-time predictor (``iosight.perfmodel.
OnlineSettings``) is scored here on each TOKIO-ABC system's *training part* only (the
first 70% of the year; predictions from its 30% quantile of start times on, refitted
monthly as in deployment): share of runs within 30%, beside the online median (the
trivial baseline) on the same runs. The test period is never read
(``training_walk_forward``); the deployment choice rules are compared on their
validation shares only. Each design is run with three seeds of the boosted trees,
so the spread shows what is noise.

    python benchmarks/perfmodel_design.py                      # finds ../shared/datasets
    python benchmarks/perfmodel_design.py --tokio a.csv.gz --tokio b.csv.gz --seeds 1

Decision rule (the previous revision's noise level, 0.5 points): a change is adopted
when the mean over the six systems rises over the design it changes for every seed (the
same seed gives the same trees, so the seeds pair) and by more than 0.5 points averaged
over the seeds; otherwise the design it changes stays.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

#: name -> OnlineSettings fields; the first is the previous revision's offset (with this
#: revision's features), the last adopted.
DESIGNS = {
    "30-run offset, no session estimate": {"offset_runs": 30, "session": "none"},
    "5-run offset": {"offset_runs": 5, "session": "none"},
    "20-run offset": {"offset_runs": 20, "session": "none"},
    "every earlier run as offset + session": {"offset_runs": 10**6},
    "10-run offset": {"offset_runs": 10, "session": "none"},
    "10-run offset + session (any scale)": {"offset_runs": 10, "session": "any scale"},
    "10-run offset + session, no shift c": {"offset_runs": 10, "shift": False},
    "adopted: 10-run offset + session (same scale)": {},
}
FILES = (
    "cori-summaries_2017-02-14-2018-02-15.csv.gz",
    "edison-summaries_2017-02-14-2018-02-15.csv.gz",
    "mira-summaries_2017-02-14_2018-02-15.csv.gz",
)


def main() -> None:
    from iosight.perfmodel import OnlineSettings, tokio_samples, training_walk_forward

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "shared", "datasets", "tokio_abc_year_in_life")
    ap.add_argument("--tokio", action="append", help="TOKIO-ABC summary file (repeat)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the boosted trees")
    args = ap.parse_args()
    paths = args.tokio or [os.path.join(default, f) for f in FILES]
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    t0 = time.perf_counter()
    data = {}
    for path in paths:
        s = tokio_samples(path)
        data |= {name: s[s["system"] == name] for name in s["system"].unique()}
    systems = list(data)
    print("within 30% on the training part's walk forward; systems:", " / ".join(systems))
    runs = {  # design -> per seed, per system: the walk forward's within-30% shares
        design: [
            [training_walk_forward(data[n], n, OnlineSettings(seed=seed, **f)) for n in systems]
            for seed in range(args.seeds)
        ]
        for design, f in DESIGNS.items()
    }
    # no design changes the online median's n_prev: any run's baseline is every run's
    base = [r["online median"] for r in next(iter(runs.values()))[0]]
    print(f"{'online median (baseline)':48s}", _row(base))
    session_alone(data)
    for design, per_seed in runs.items():
        shares = [[r["iosight predictor"] for r in seed] for seed in per_seed]
        seeds = ", ".join(f"{100 * np.mean(s):.2f}" for s in shares)
        print(f"{design:48s}", _row(np.mean(shares, axis=0)), f"(per seed: {seeds})")
    choice_rules(data)
    print(f"{time.perf_counter() - t0:.0f} s; load average at end: {os.getloadavg()[0]:.2f}")


def session_alone(data) -> None:
    """The same-session estimate on its own, on the scored training runs that have one,
    beside the online median on the same runs: why its learned weight differs by system."""
    from iosight.perfmodel import DESIGN_START_SHARE, causal_features, tokio_split

    for name, s in data.items():
        train, _ = tokio_split(s, name)
        f = causal_features(train)
        first = np.quantile(train["start_time"].to_numpy(float), DESIGN_START_SHARE)
        rows = (train["start_time"].to_numpy() >= first) & f["log session estimate"].notna()
        y = train["write_time"].to_numpy(float)[rows]
        est = np.exp(f["log session estimate"].to_numpy()[rows])
        med = f["online median"].to_numpy()[rows]
        print(
            f"  {name}: same-session estimate on {rows.sum()} of "
            f"{(train['start_time'].to_numpy() >= first).sum()} runs: within 30% "
            f"{100 * _within(est, y):.1f} (online median on the same runs "
            f"{100 * _within(med, y):.1f})"
        )


def choice_rules(data) -> None:
    """What iosight deploys under the previous rule (three windows over the last 30% of
    the training part) and the adopted one (seven over the last 70%): validation shares
    of the three candidates only (the test columns are not printed)."""
    from iosight.perfmodel import CANDIDATES, DEPLOYED, deployable_comparison, evaluate_tokio

    paper = {name: evaluate_tokio(s, name, families=("lasso",)) for name, s in data.items()}
    for share, windows in ((0.3, 3), (0.7, 7)):
        print(f"deployment choice on {windows} windows over the last {share:.0%} of training:")
        for name, s in data.items():
            cmp = deployable_comparison(s, name, paper[name], share=share, windows=windows)
            cmp = cmp[cmp["test_set"] == "all"].set_index("method")
            vals = " / ".join(f"{100 * cmp.loc[m, 'validation_within_30']:.1f}" for m in CANDIDATES)
            rows = int(cmp.loc[DEPLOYED, "validation_rows"])
            print(
                f"  {name}: paper / median / predictor {vals} on {rows} rows -> "
                f"{cmp.loc[DEPLOYED, 'chosen']}"
            )


def _within(pred, y) -> float:
    """Share within 30%, by the rule every perfmodel table uses (Formula 2)."""
    from iosight.perfmodel import accuracy, relative_errors

    return accuracy(relative_errors(pred, y))["within_30"]


def _row(shares) -> str:
    return " / ".join(f"{100 * v:.1f}" for v in shares) + f"  mean {100 * np.mean(shares):.2f}"


if __name__ == "__main__":
    main()
