"""SimplifiedDensity on a million real-derived codings vs a plain-Python Levenshtein.

The 100,000 DKRZ Mistral binary codings (../shared/datasets/dkrz_mistral_bcoding_100k)
are each repeated ten times; every copy but the first gets, with probability 1/2,
one small random edit (substitute, insert or delete one segment, new codes drawn
from the data set's own codes). The stream is shuffled with a seed and clustered
with SimplifiedDensity (BIN_ALL, SIM 0.7; zero jobs set aside as in the paper).
The fair baseline is the same algorithm with rapidfuzz's C++ Levenshtein and a dict
of codings already seen, on the first n jobs of the stream (CPU time; the weak
baseline, a pure-Python dynamic-programming Levenshtein, is a labelled extra line);
labels are checked against iosight's.

    python benchmarks/similarity.py            # 1,000,000 codings
    python benchmarks/similarity.py --quick    # 100,000 codings, < 60 s
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("IOSIGHT_SHARED", Path(__file__).resolve().parents[2] / "shared"))
DEFAULT_CSV = SHARED / "datasets/dkrz_mistral_bcoding_100k/coding_job_abs_mode_False.csv"


def make_stream(csv: Path, copies: int, seed: int) -> list[np.ndarray]:
    """The real codings, ``copies`` times each, small random edits, shuffled."""
    import pandas as pd

    from iosight.similarity import bin_from_text

    df = pd.read_csv(csv, dtype={"coding": str}).sort_values("jobid", kind="stable")
    base = [bin_from_text(t) for t in df["coding"]]
    pool = np.concatenate(base)
    rng = np.random.default_rng(seed)
    out = []
    for c in range(copies):
        for codes in base:
            if c == 0 or rng.random() < 0.5:
                out.append(codes)
                continue
            x = codes.copy()
            kind = rng.integers(3)
            pos = int(rng.integers(len(x)))
            new = pool[rng.integers(len(pool))]
            if kind == 0:
                x[pos] = new
            elif kind == 1:
                x = np.insert(x, pos, new)
            elif len(x) > 1:
                x = np.delete(x, pos)
            out.append(x)
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def plain_levenshtein(a: list[int], b: list[int]) -> int:
    """Textbook dynamic programming, pure Python."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def plain_density(codings: list[list[int]], sim: float) -> list[int]:
    """The paper's SimplifiedDensity, written plainly: first centroid with sim >= SIM."""
    centroids: list[list[int]] = []
    labels = []
    for c in codings:
        for k, cen in enumerate(centroids):
            if 1 - plain_levenshtein(c, cen) / max(len(c), len(cen)) >= sim - 1e-9:
                labels.append(k)
                break
        else:
            labels.append(len(centroids))
            centroids.append(c)
    return labels


def rapidfuzz_density(codings: list[np.ndarray], sim: float) -> list[int]:
    """Fair baseline: the same loop with rapidfuzz's C++ Levenshtein and a dict of codings
    already seen (a repeated coding takes its first copy's label without any comparison)."""
    from rapidfuzz.distance import Levenshtein

    centroids: list[str] = []
    seen: dict[str, int] = {}
    labels = []
    dist = Levenshtein.distance
    for c in codings:
        text = "".join(map(chr, c.tolist()))
        k = seen.get(text)
        if k is None:
            n = len(text)
            for j, cen in enumerate(centroids):
                if 1 - dist(text, cen) / max(n, len(cen)) >= sim - 1e-9:
                    k = j
                    break
            else:
                k = len(centroids)
                centroids.append(text)
            seen[text] = k
        labels.append(k)
    return labels


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--csv", type=Path, default=DEFAULT_CSV, help="DKRZ codings CSV")
    p.add_argument("--copies", type=int, default=10, help="copies of each real coding")
    p.add_argument("--sim", type=float, default=0.7)
    p.add_argument("--baseline-jobs", type=int, default=3000, help="jobs for the Python baseline")
    p.add_argument("--fair-jobs", default="10000,100000", help="sizes for the rapidfuzz loop")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="1 copy, 1,000 baseline jobs (< 60 s)")
    args = p.parse_args(argv)
    if args.quick:
        args.copies, args.baseline_jobs, args.fair_jobs = 1, 1000, "10000,30000"
    if not args.csv.is_file():
        print(f"no codings file at {args.csv}", file=sys.stderr)
        return 1
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from iosight.similarity import CodingSet, simplified_density

    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    t0 = time.perf_counter()
    stream = make_stream(args.csv, args.copies, args.seed)
    live = [c for c in stream if c.any()]
    print(
        f"codings: {len(stream):,} ({args.copies} x real DKRZ, small random edits, seed "
        f"{args.seed}); zero jobs set aside: {len(stream) - len(live):,}; "
        f"clustered: {len(live):,}  [prepared in {time.perf_counter() - t0:.1f} s]"
    )
    t0 = time.perf_counter()
    cs = CodingSet.from_bin(live)
    res = simplified_density(cs, args.sim)
    ours = time.perf_counter() - t0
    sizes = res.sizes()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"iosight SimplifiedDensity SIM {args.sim}: {len(live):,} jobs in {ours:.1f} s = "
        f"{len(live) / ours:,.0f} jobs/s; clusters {res.n_clusters:,} "
        f"(>=2 jobs: {(sizes >= 2).sum():,}, >=10: {(sizes >= 10).sum():,}); "
        f"peak RSS {rss:,.0f} MiB; cores {os.cpu_count()}"
    )
    n = min(args.baseline_jobs, len(live))
    sub = [c.tolist() for c in live[:n]]
    t0 = time.perf_counter()
    plain = plain_density(sub, args.sim)
    base = time.perf_counter() - t0
    t0 = time.perf_counter()
    check = simplified_density(CodingSet.from_bin(live[:n]), args.sim)
    ours_sub = time.perf_counter() - t0
    same = bool((np.asarray(plain) == check.labels).all())
    print(
        f"plain Python Levenshtein, first {n:,} jobs: {base:.1f} s = {n / base:,.0f} jobs/s; "
        f"iosight on the same {n:,}: {ours_sub:.2f} s = {n / ours_sub:,.0f} jobs/s; "
        f"same labels: {same}"
    )
    print(
        f"ratio (jobs/s, iosight full run / plain Python on its subset): "
        f"{(len(live) / ours) / (n / base):,.0f}x; same-subset ratio: {base / ours_sub:,.0f}x"
    )
    print("fair baseline: the same loop with rapidfuzz Levenshtein + dict of codings seen "
          "(first n jobs of the stream; CPU s)")  # fmt: skip
    for n in [int(x) for x in args.fair_jobs.split(",") if x]:
        n = min(n, len(live))
        t0 = time.process_time()
        fair = rapidfuzz_density(live[:n], args.sim)
        t_fair = time.process_time() - t0
        t0 = time.process_time()
        mine = simplified_density(CodingSet.from_bin(live[:n]), args.sim)
        t_mine = time.process_time() - t0
        ok = bool((np.asarray(fair) == mine.labels).all())
        same = same and ok
        print(f"  {n:>9,} jobs: rapidfuzz loop {t_fair:7.2f} s, iosight {t_mine:6.2f} s; "
              f"iosight is {t_fair / t_mine:.1f}x; same labels: {ok}")  # fmt: skip
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0 if same else 2


if __name__ == "__main__":
    raise SystemExit(main())
