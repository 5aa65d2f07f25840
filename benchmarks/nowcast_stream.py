"""Benchmark: the ``logs`` nowcast of the current bin, from analog rates or from a stream.

Under the ``logs`` regime, at the end ``T`` of bin t the landed logs hold only part of
bin t; the forecaster's nowcast adds an estimate of the rest, the bytes of the jobs that
had started and whose log had not landed by ``T``, at the rates of their analogs (the
last landed run of the same kind: ``iosight.bursts.unseen_bytes``, what ``logs``
forecasters are trained and served with). Darshan's LDMS stream carries those jobs' own bytes while
they run (issue #28): would it be the better nowcast?

On a warehouse's jobs (default /work/summit-clean: Summit 2021, 53,546 jobs, their logs
landing at their end), per 5-minute bin of the ``--direction``, each job's bytes spread
evenly over its run (as the stored timeline spreads job totals); truth: every job's
bytes in the bin; known: those of the jobs whose log landed by the bin's end. Compared
with the truth, per bin: the known part alone; the analog nowcast (known + analog
rates); a stream nowcast (known + the streamed bytes in the bin of the unlanded jobs
that stream, SIMULATED from their logs: each op on time, none lost) for a stream that
covers all jobs, half and a tenth of them (random jobs, ``--seed``). Errors as
``nowcast_accuracy`` reports them: Pearson correlation, ``sum |est - true| / sum true``,
and the burst F1 at the 1%-of-bins threshold of the truth (Saeedizade et al. (2023),
§IV). Wall and CPU time and the load average are printed.

    python benchmarks/nowcast_stream.py
    python benchmarks/nowcast_stream.py -w WAREHOUSE --direction read
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

WIDTH = 300.0


def per_job_bins(jobs, direction: str) -> tuple[np.ndarray, ...]:
    """Each job's bytes per bin it overlaps (job index, bin index, bytes, seconds of its
    run in the bin) and the first bin's start; a job of no duration puts its bytes in the
    bin of its start."""
    start = jobs["start_time"].to_numpy(np.float64)
    end = np.maximum(jobs["end_time"].to_numpy(np.float64), start)
    total = jobs[f"{direction}_bytes"].to_numpy(np.float64)
    origin = np.floor(start.min() / WIDTH) * WIDTH
    b0 = np.floor((start - origin) / WIDTH).astype(np.int64)
    b1 = np.maximum(np.ceil((end - origin) / WIDTH).astype(np.int64) - 1, b0)
    count = b1 - b0 + 1
    job = np.repeat(np.arange(len(start)), count)
    b = np.repeat(b0 - np.cumsum(count) + count, count) + np.arange(count.sum())
    lo = np.maximum(origin + b * WIDTH, start[job])
    hi = np.minimum(origin + (b + 1) * WIDTH, end[job])
    dur = end[job] - start[job]
    share = np.where(dur > 0, np.clip(hi - lo, 0, None) / np.where(dur > 0, dur, 1), 1.0)
    return job, b, total[job] * share, np.clip(hi - lo, 0, None), origin


def main() -> None:
    from iosight.bursts import analog_rates, label_bursts, load_jobs, nowcast_accuracy, unseen_bytes
    from iosight.warehouse import Warehouse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-w", "--warehouse", default="/work/summit-clean")  # only read
    parser.add_argument("--direction", default="write", choices=["read", "write"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    t0, c0 = time.perf_counter(), time.process_time()
    jobs = load_jobs(Warehouse(args.warehouse))
    jobs = jobs[jobs["start_time"].notna() & jobs["end_time"].notna()].reset_index(drop=True)
    job, b, v, secs, origin = per_job_bins(jobs, args.direction)
    n = int(b.max()) + 1
    ends = origin + (np.arange(n) + 1) * WIDTH
    landed = np.maximum(jobs["known_at"], jobs["start_time"]).to_numpy(np.float64)  # as the nowcast
    truth = np.bincount(b, weights=v, minlength=n)
    unlanded = landed[job] >= ends[b]  # not known before the end of its bin (as the nowcast)
    known = truth - np.bincount(b[unlanded], weights=v[unlanded], minlength=n)
    rate = known + unseen_bytes(jobs, ends - WIDTH, WIDTH, args.direction)
    analog = np.where(unlanded, analog_rates(jobs, args.direction)[job] * secs, 0.0)
    assert np.allclose(known + np.bincount(b, weights=analog, minlength=n), rate)  # per job
    threshold = label_bursts(truth).threshold
    rows = {"known only": known, "analog rates (served)": rate}
    rng = np.random.default_rng(args.seed)
    draw = rng.random(len(jobs))
    for cover in (1.0, 0.5, 0.1):
        streams = (draw < cover)[job] & unlanded
        streamed = known + np.bincount(b[streams], weights=v[streams], minlength=n)
        rows[f"stream of {cover:.0%} of jobs"] = streamed
        rest = np.bincount(b[~streams], weights=analog[~streams], minlength=n)
        rows[f"  {cover:.0%} + analogs for the rest"] = streamed + rest
    print(f"{len(jobs):,} jobs, {n:,} bins of {WIDTH:g} s, {args.direction}; unseen at the "
          f"bin's end: {1 - known.sum() / truth.sum():.1%} of the bytes; burst threshold "
          f"{threshold / WIDTH / 1e9:.2f} GB/s")  # fmt: skip
    print(f"{'nowcast':<28} {'corr':>6} {'rel. error':>11} {'burst F1':>9}")
    for name, est in rows.items():
        acc = nowcast_accuracy(est, truth, threshold)
        print(f"{name:<28} {acc['nowcast_corr']:>6.3f} {acc['nowcast_error']:>11.3f} "
              f"{acc['nowcast_f1']:>9.3f}")  # fmt: skip
    print(f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU; "
          f"load average after: {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
