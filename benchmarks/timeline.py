"""Benchmark: binning I/O records into a timeline, iosight vs straightforward pandas.

Generates N synthetic records (start, end, bytes, operations, I/O time; heavy-tailed
durations over a 6-month span), bins them into 5-minute bins with
``iosight.timeline.bin_intervals`` (overlap spread), and with a straightforward pandas
version (per-record bin lists with ``apply``, ``explode``, ``groupby().sum()``) on a
sample, then prints records/s of both, their ratio, peak traced memory of each and the
process's peak RSS, and checks that both give the same bins on the sample.

    python benchmarks/timeline.py              # 10 million records
    python benchmarks/timeline.py --quick      # 1 million, < 60 s
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc

import numpy as np

WIDTH = 300.0
SPAN = 180 * 86400.0


def make_records(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    start = rng.uniform(0, SPAN, n)
    dur = np.where(rng.random(n) < 0.1, 0.0, rng.lognormal(np.log(120), 2.0, n))
    end = np.minimum(start + dur, SPAN)
    values = np.column_stack(
        [rng.lognormal(17, 2, n), rng.poisson(100, n).astype(float), rng.exponential(1.0, n)]
    )
    return start, end, values


def pandas_bins(start: np.ndarray, end: np.ndarray, values: np.ndarray, n_bins: int):
    """What one writes first with pandas: per-record bins and weights, explode, group."""
    import pandas as pd

    df = pd.DataFrame({"start": start, "end": end, "b": values[:, 0], "o": values[:, 1],
                       "t": values[:, 2]})  # fmt: skip

    def spread(row):
        first = int(row.start // WIDTH)
        last = first if row.end <= row.start else int(np.ceil(row.end / WIDTH)) - 1
        bins = list(range(first, max(last, first) + 1))
        if row.end <= row.start:
            return bins, [1.0]
        w = [(min(row.end, (b + 1) * WIDTH) - max(row.start, b * WIDTH)) / (row.end - row.start)
             for b in bins]  # fmt: skip
        return bins, w

    parts = df.apply(spread, axis=1, result_type="expand")
    df["bin"], df["w"] = parts[0], parts[1]
    long = df.explode(["bin", "w"])
    w = long["w"].astype(float)
    out = pd.DataFrame({"bin": long["bin"].astype(int), "b": long["b"] * w, "o": long["o"] * w,
                        "t": long["t"] * w}).groupby("bin").sum()  # fmt: skip
    return out.reindex(range(n_bins), fill_value=0.0).to_numpy()


def timed(fn, *args):
    tracemalloc.start()
    t = time.perf_counter()
    out = fn(*args)
    dt = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, dt, peak


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--records", type=int, default=10_000_000, help="records for iosight")
    p.add_argument("--pandas-records", type=int, default=100_000, help="sample for pandas")
    p.add_argument("--quick", action="store_true", help="1M records, 5k for pandas (< 60 s)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.quick:
        a.records, a.pandas_records = 1_000_000, 5_000
    from iosight.timeline import bin_intervals

    n_bins = int(SPAN // WIDTH) + 1
    start, end, values = make_records(a.records, a.seed)

    def ours(s, e, v):
        return bin_intervals(s, e, v, width=WIDTH, n_bins=n_bins, spread="overlap")

    got, t_ours, mem_ours = timed(ours, start, end, values)
    rss_ours = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert np.allclose(got.sum(axis=0), values.sum(axis=0), rtol=1e-9)
    m = a.pandas_records
    ref, t_pd, mem_pd = timed(pandas_bins, start[:m], end[:m], values[:m], n_bins)
    same = np.allclose(ours(start[:m], end[:m], values[:m]), ref, rtol=1e-9, atol=1e-6)
    r_ours, r_pd = a.records / t_ours, m / t_pd
    print(f"iosight bin_intervals: {a.records:,} records in {t_ours:.2f} s = {r_ours:,.0f} "
          f"records/s; peak traced memory {mem_ours / 2**20:,.0f} MiB (inputs "
          f"{(start.nbytes + end.nbytes + values.nbytes) / 2**20:,.0f} MiB not included); "
          f"process peak RSS {rss_ours:,.0f} MiB")  # fmt: skip
    print(f"pandas apply/explode:  {m:,} records in {t_pd:.2f} s = {r_pd:,.0f} records/s; "
          f"peak traced memory {mem_pd / 2**20:,.0f} MiB")  # fmt: skip
    print(f"speed ratio (records/s): {r_ours / r_pd:,.1f}x; same bins on the sample: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
