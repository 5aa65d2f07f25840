"""Benchmark: ``bursts train`` with its defaults against the plain training a competent
user would write with the same features.

Runs, on one warehouse with a timeline (the Summit 2021 year in docs/bursts.md), in one
process:

1. today's default: :func:`iosight.bursts.train_bursts` with its defaults (lead mode,
   feature set 4, every model, decision cuts tuned on a validation slice, robust choice
   against persistence, no hyper-parameter search, tasks on every core as threads) and
   the forecasters (24 leads per direction) saved;
2. the fair baseline: the same feature matrices (``make_dataset``, feature set 4, the
   same horizons and directions, built outside the timer) and the same five model
   families written directly with scikit-learn and XGBoost at their library defaults
   (iosight's forest and XGBoost use other hyper-parameters, ``iosight.bursts.MODELS``),
   each fitted on the whole training part with every core its library offers
   (``n_jobs=os.cpu_count()`` for the forest and XGBoost), one task after another,
   predicting a burst where the probability reaches 0.5; no forecaster saved (so it
   does less work than the default).

It prints wall time, CPU time (every thread) and their ratio for each, the wall-time
ratio, the load average seen before and after (the machine may be shared), and, per
direction and lead, the F1 of persistence, of the default's candidate chosen on
validation and of the baseline's best model on the test part.

    python benchmarks/bursts_train.py -w summit-wh
    python benchmarks/bursts_train.py -w summit-wh --quick   # leads 30 and 120 min only
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def _run(label: str, fn) -> tuple[float, float, object]:
    load = os.getloadavg()
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    print(
        f"{label}: wall {wall:,.1f} s, CPU {cpu:,.1f} s ({cpu / wall:.2f} cores busy); "
        f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    return wall, cpu, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--warehouse", required=True, help="warehouse with a timeline")
    ap.add_argument("--quick", action="store_true", help="leads 30 and 120 min only")
    ap.add_argument("--skip-baseline", action="store_true", help="only the new default")
    args = ap.parse_args()

    from iosight.bursts import load_forecaster, load_jobs, make_dataset, train_bursts
    from iosight.timeline import load_timeline
    from iosight.warehouse import Warehouse

    horizons = [30, 120] if args.quick else [5, 15, 30, 60, 120]
    src = Warehouse(args.warehouse)
    print(f"{os.cpu_count()} cores; horizons {horizons} min; warehouse {src.path}")
    with tempfile.TemporaryDirectory() as tmp:
        # the new default saves forecasters: train on a copy so the warehouse is untouched
        wh = Warehouse(os.path.join(tmp, "wh"), create=True)
        for name in ("jobs", "job_totals", "timeline", "posix", "stdio"):
            if src.has_table(name):
                wh.write_table(name, src.table(name))
        new_wall, new_cpu, res = _run(
            "default train (parallel, set 4, cuts + robust choice on validation, saved)",
            lambda: train_bursts(wh, horizons=horizons),
        )
        for name in res.saved:  # the saved forecasters' test F1 per lead against persistence
            m = load_forecaster(wh, name).metadata["test_metrics"]
            gain = {int(lead): v["f1"] - v["persistence_f1"] for lead, v in m.items()}
            worse = [lead for lead, g in gain.items() if g < 0]
            print(f"  saved {name}: {len(gain)} leads, worse than persistence on test at "
                  f"{len(worse)} {worse}, min gain {min(gain.values()):+.3f}, "
                  f"max gain {max(gain.values()):+.3f}")  # fmt: skip
    ev = res.evaluation
    for (d, h), g in ev.groupby(["direction", "horizon_min"]):
        g = g.set_index("model")
        models = g.drop(index=["persistence", "time_of_day", "chosen"])
        best = models["f1"].idxmax()
        print(
            f"  {d:5s} {h:5.0f} min: persistence F1 {g.loc['persistence', 'f1']:.3f}, "
            f"chosen ({g.loc['chosen', 'chosen']}) {g.loc['chosen', 'f1']:.3f}, "
            f"best model on test {best} {models.loc[best, 'f1']:.3f}"
        )
    if args.skip_baseline:
        return
    df, jobs = load_timeline(src), load_jobs(src)
    tasks = {(d, h): make_dataset(df, direction=d, feature_set=4, mode="lead", horizon_min=h,
                                  jobs=jobs)
             for d in ("read", "write") for h in horizons}  # fmt: skip
    base_wall, base_cpu, f1s = _run(
        "fair baseline (same features, sklearn/XGBoost fitted directly, n_jobs=cores)",
        lambda: {key: _plain_models(ds) for key, ds in tasks.items()},
    )
    for (d, h), scores in f1s.items():
        best = max(scores, key=scores.get)
        print(
            f"  {d:5s} {h:5.0f} min: baseline best on test {best} {scores[best]:.3f} "
            f"({', '.join(f'{n} {v:.3f}' for n, v in scores.items())})"
        )
    print(f"wall-time ratio baseline / default: {base_wall / new_wall:.2f}x; "
          f"CPU-time ratio: {base_cpu / new_cpu:.2f}x")  # fmt: skip


def _plain_models(ds) -> dict[str, float]:
    """Test F1 of the five models fitted the plain way on the task's training part."""
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler
    from sklearn.tree import DecisionTreeClassifier
    from xgboost import XGBClassifier

    cores = os.cpu_count()
    models = {
        "logreg": LogisticRegression(max_iter=15000),
        "naive_bayes": GaussianNB(),
        "tree": DecisionTreeClassifier(random_state=0),
        "forest": RandomForestClassifier(50, random_state=0, n_jobs=cores),
        "xgboost": XGBClassifier(n_jobs=cores, random_state=0),
    }
    tr, te = slice(0, ds.n_train), slice(ds.n_train, None)
    y, yt = ds.y[tr] > 0, ds.y[te] > 0
    out = {"persistence": f1_score(yt, ds.current[te] > 0)}
    for name, est in models.items():
        log = FunctionTransformer(lambda x: np.sign(x) * np.log1p(np.abs(x)))
        pipe = make_pipeline(log, StandardScaler(), est).fit(ds.X[tr], y)
        out[name] = f1_score(yt, pipe.predict(ds.X[te]))
    return out


if __name__ == "__main__":
    main()
