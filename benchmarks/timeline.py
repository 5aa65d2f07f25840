"""Benchmark: the system-level timeline, binning step and end to end, against fair baselines.

1. Binning (in memory): N SYNTHETIC records (heavy-tailed durations over 6 months) into
   5-minute bins with ``iosight.timeline.bin_intervals`` (overlap spread) against what a
   competent user writes with numpy: a difference-array binning (first/last bins with
   ``bincount``, the bins between through a cumulative sum; O(records + bins)) and the
   expansion with ``np.repeat`` + ``np.bincount``. A per-row pandas ``apply`` runs on a
   sample as a labelled weak baseline. Times are the median process CPU time of 5 runs;
   all bins must agree.
2. End to end: ``build_timeline`` on SYNTHETIC facility warehouses (POSIX records of
   4 files per job, 1 M and 10 M records, committed in batches of 250,000 records as an
   ingest would); each build runs in its own process, which reports records/s (wall and
   CPU) and its peak RSS (``VmHWM``; nothing traced). The build streams chunks of about
   ``CHUNK_JOBS`` jobs, so peak RSS should stay flat from 1 M to 10 M records.
3. Incremental (``--summit DIR``, the real Summit 2021 job totals): the year less its
   last hour of jobs (by end time, when their logs would land) ingested and its timeline
   built, then the last hour ingested; ``update_timeline`` (the new jobs only) against
   ``rebuild_timeline`` (the whole year), each on a fresh copy (flushed to disk before
   the clock starts), in this process after a warm-up, wall and CPU medians of
   ``--repeat`` runs, and the two timelines compared; the imports an update needs are
   timed apart, in a fresh Python each. Following: the same hour added as ``ingest
   --follow`` adds it, by the process that updated the timeline with the batch before
   (the 8 jobs that ended last before the hour): on a fresh copy of the year less both
   with its timeline built, that batch ingested, the timeline updated and the hour
   ingested, untimed, then the update timed. ``--steps N``
   then times N more (cold) updates step by step (each step's own CPU; the wrappers add
   a few microseconds a call).

    python benchmarks/timeline.py              # 10 M records; warehouses of 1 M and 10 M
    python benchmarks/timeline.py --quick      # 1 M records; warehouses of 0.2 M and 1 M
    python benchmarks/timeline.py --only-incremental --summit "$(iosight data path summit-2021)"
    python benchmarks/timeline.py --only-incremental --summit DIR --repeat 9 --steps 40
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WIDTH = 300.0
SPAN = 180 * 86400.0
EPOCH = 1.7e9


def make_records(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    start = rng.uniform(0, SPAN, n)
    dur = np.where(rng.random(n) < 0.1, 0.0, rng.lognormal(np.log(120), 2.0, n))
    end = np.minimum(start + dur, SPAN)
    values = np.column_stack(
        [rng.lognormal(17, 2, n), rng.poisson(100, n).astype(float), rng.exponential(1.0, n)]
    )
    return start, end, values


def touched(s, e):
    b0 = np.floor(s / WIDTH).astype(np.int64)
    b1 = np.where(e > s, np.ceil(e / WIDTH).astype(np.int64) - 1, b0)
    return b0, np.maximum(b1, b0)


def difference_array(s, e, v, n_bins):
    """Fair baseline: first/last bins directly, the bins between via a difference array."""
    b0, b1 = touched(s, e)
    d = e - s
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d > 0)
    one = b1 == b0
    f0 = np.where(one, 1.0, ((b0 + 1) * WIDTH - s) * inv)
    fl = np.where(one, 0.0, (e - b1 * WIDTH) * inv)
    mid = np.where(b1 - b0 > 1, WIDTH * inv, 0.0)
    out = np.empty((n_bins, v.shape[1]))
    for c in range(v.shape[1]):
        x = v[:, c]
        diff = np.bincount(b0 + 1, x * mid, n_bins + 1) - np.bincount(b1, x * mid, n_bins + 1)
        out[:, c] = (np.bincount(b0, x * f0, n_bins) + np.bincount(b1, x * fl, n_bins)
                     + np.cumsum(diff)[:n_bins])  # fmt: skip
    return out


def difference_array_blocks(s, e, v, n_bins, block=1 << 17):
    """The difference array in blocks of rows of iosight's size (does blocking alone win?)."""
    out = np.zeros((n_bins, v.shape[1]))
    for lo in range(0, len(s), block):
        out += difference_array(s[lo : lo + block], e[lo : lo + block], v[lo : lo + block], n_bins)
    return out


def repeat_bincount(s, e, v, n_bins, chunk=2_000_000):
    """Second fair baseline: expand (record, bin) pairs with np.repeat, sum with bincount."""
    out = np.zeros((n_bins, v.shape[1]))
    for lo in range(0, len(s), chunk):
        ss, ee, vv = s[lo : lo + chunk], e[lo : lo + chunk], v[lo : lo + chunk]
        b0, b1 = touched(ss, ee)
        n = b1 - b0 + 1
        rows = np.repeat(np.arange(len(n)), n)
        bins = b0[rows] + np.arange(rows.size) - np.repeat(np.cumsum(n) - n, n)
        lo_t = bins * WIDTH
        ov = np.minimum(ee[rows], lo_t + WIDTH) - np.maximum(ss[rows], lo_t)
        d = (ee - ss)[rows]
        frac = np.where(d > 0, np.clip(ov, 0, None) / np.where(d > 0, d, 1), 1.0)
        for c in range(v.shape[1]):
            out[:, c] += np.bincount(bins, vv[rows, c] * frac, n_bins)
    return out


def pandas_bins(start, end, values, n_bins):
    """Weak baseline: per-record bin lists with ``apply``, ``explode``, ``groupby().sum()``."""
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


def agree(a: np.ndarray, b: np.ndarray) -> bool:
    """Same bins up to rounding: 1e-9 of each column's largest bin (empty bins may hold
    cumulative-sum residue of order 1e-16 of it)."""
    return bool(np.all(np.abs(a - b) <= 1e-9 * np.abs(b).max(axis=0)))


def cpu_median(fn, *args, repeat=5):
    times, out = [], None
    for _ in range(repeat):
        t = time.process_time()
        out = fn(*args)
        times.append(time.process_time() - t)
    return out, statistics.median(times)


def make_facility(path: Path, records: int, seed: int, chunk: int = 250_000) -> None:
    """A SYNTHETIC facility warehouse: jobs of 4 POSIX records over 6 months, committed
    ``chunk`` records at a time, job keys shaped like content hashes."""
    import pyarrow as pa

    from iosight.warehouse import Warehouse

    wh = Warehouse(path, create=True)
    rng = np.random.default_rng(seed)
    for lo in range(0, records, chunk):
        n = min(chunk, records - lo)
        jobs = n // 4
        # keys spread like ingest's content hashes: unique, in no order (an odd multiplier
        # permutes 64-bit integers), so no key range follows the commit order
        idx = np.arange(lo // 4, lo // 4 + jobs, dtype=np.uint64)
        key = np.char.mod("%016x", idx * np.uint64(0x9E3779B97F4A7C15))
        start = EPOCH + rng.uniform(0, SPAN, jobs)
        run = rng.lognormal(np.log(3600), 1.0, jobs)
        job = np.repeat(np.arange(jobs), 4)
        t0 = rng.uniform(0, 1, 4 * jobs) * run[job]
        t1 = t0 + rng.uniform(0, 1, 4 * jobs) * (run[job] - t0)
        w = rng.random(4 * jobs) < 0.5
        cols = {"job_key": key[job], "rank": np.full(4 * jobs, -1),
                "record_id": pa.array(rng.integers(0, 2**63, 4 * jobs), pa.uint64())}  # fmt: skip
        for d, on in (("READ", ~w), ("WRITE", w)):
            name = "WRITTEN" if d == "WRITE" else "READ"
            cols[f"POSIX_BYTES_{name}"] = np.where(on, rng.lognormal(20, 2, 4 * jobs), 0.0)
            cols[f"POSIX_{d}S"] = np.where(on, rng.poisson(50, 4 * jobs), 0)
            cols[f"POSIX_F_{d}_TIME"] = np.where(on, rng.exponential(5, 4 * jobs), 0.0)
            cols[f"POSIX_F_{d}_START_TIMESTAMP"] = np.where(on, t0, 0.0)
            cols[f"POSIX_F_{d}_END_TIMESTAMP"] = np.where(on, t1, 0.0)
        wh.commit(
            {
                "jobs": [pa.table({"job_key": key, "start_time": start, "end_time": start + run})],
                "posix": [pa.table(cols)],
            }
        )


def peak_rss_mib() -> float:
    """This process's peak RSS: ``VmHWM`` (ru_maxrss would carry the parent's over exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_child(path: str) -> None:
    """Run in a fresh process: build the timeline, print JSON with times and peak RSS."""
    from iosight.timeline import build_timeline
    from iosight.warehouse import Warehouse

    wh = Warehouse(path)
    records = int(wh.sql("select count(*) as n from posix")["n"].iloc[0])
    t, c = time.perf_counter(), time.process_time()
    table = build_timeline(wh, bin_width=WIDTH)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    rss = peak_rss_mib()
    print(json.dumps({"records": records, "bins": table.num_rows, "wall": wall, "cpu": cpu,
                      "rss_mib": rss}))  # fmt: skip


def known_child(path: str) -> None:
    """Run in a fresh process: the stored timeline's known-at sums (``known_sums``, what
    ``bursts train --information logs`` computes), print JSON with times and peak RSS."""
    from iosight.timeline import known_sums
    from iosight.warehouse import Warehouse

    wh = Warehouse(path)
    t, c = time.perf_counter(), time.process_time()
    rows = len(known_sums(wh))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    print(json.dumps({"rows": rows, "wall": wall, "cpu": cpu, "rss_mib": peak_rss_mib()}))


def run_child(flag: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, flag, str(path)], check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def print_known(path: Path) -> None:
    """``known_sums`` of the warehouse's stored timeline, in its own process."""
    k = run_child("--known-child", path)
    print(f"  known-at sums (bursts --information logs): {k['rows']:,} rows in "
          f"{k['wall']:.2f} s wall, {k['cpu']:.2f} s CPU; peak RSS {k['rss_mib']:,.0f} MiB; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip


def end_to_end(sizes: list[int], seed: int, workdir: str | None) -> None:
    rss = []
    if workdir:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for n in sizes:
            path = Path(tmp) / f"wh{n}"
            t = time.perf_counter()
            make_facility(path, n, seed)
            made = time.perf_counter() - t
            r = run_child("--child", path)
            print(f"  {r['records']:>11,} records ({made:.0f} s to generate): "
                  f"{r['records'] / r['wall']:>10,.0f} records/s wall, "
                  f"{r['records'] / r['cpu']:>10,.0f} records/s CPU; {r['bins']:,} bins; "
                  f"peak RSS {r['rss_mib']:,.0f} MiB; load {os.getloadavg()[0]:.1f}")  # fmt: skip
            rss.append(r["rss_mib"])
            print_known(path)
    if len(rss) > 1:
        print(f"  peak RSS from {sizes[0]:,} to {sizes[-1]:,} records: "
              f"{100 * (rss[-1] / rss[0] - 1):+.1f}%")  # fmt: skip


def _split_summit(src: Path, out: Path) -> tuple[dict[str, Path], int]:
    """Summit's job totals as files: ``year``, the year less its last hour (by end time),
    and ``hour``, that hour; ``early`` and ``before``, ``year`` less as many jobs as the
    hour holds, the last to end, and those (the batch that landed before the hour's);
    returns them and how many jobs the last hour holds."""
    import pandas as pd

    df = pd.concat([pd.read_parquet(p) for p in sorted(src.glob("*.parquet"))], ignore_index=True)
    late = df["end_time"] > df["end_time"].max() - 3600
    before = df.index.isin(df[~late].nlargest(int(late.sum()), "end_time").index)
    parts = {"year": ~late, "hour": late, "early": ~late & ~before, "before": before}
    paths = {name: out / name / f"{name}.parquet" for name in parts}
    for name, rows in parts.items():
        paths[name].parent.mkdir()
        df[rows].to_parquet(paths[name])
    return paths, int(late.sum())


def _timed(fn, wh_path: Path, scratch: Path, before=None) -> tuple[float, float, object]:
    """Wall and CPU seconds of ``fn`` on a fresh copy of the warehouse at ``wh_path``
    (after ``before`` on it, untimed, when given)."""
    import shutil

    from iosight.warehouse import Warehouse

    shutil.rmtree(scratch, ignore_errors=True)
    wh = Warehouse(shutil.copytree(wh_path, scratch))
    if before is not None:
        before(wh)
    os.sync()  # the copy on disk first: a commit's fsync would otherwise write it too
    t, c = time.perf_counter(), time.process_time()
    fn(wh)
    return time.perf_counter() - t, time.process_time() - c, wh


# what an update imports, timed in a fresh process (not part of the update's own time)
_IMPORTS = (
    "import time; t = time.perf_counter(); "
    "from iosight.timeline import update_timeline; from iosight.warehouse import Warehouse; "
    "import pandas, pyarrow.compute, pyarrow.parquet; print(time.perf_counter() - t)"
)


def import_seconds(repeat: int) -> float:
    """Median wall seconds of importing what an update uses, each in a fresh Python."""
    runs = [subprocess.run([sys.executable, "-c", _IMPORTS], capture_output=True, text=True,
                           check=True).stdout for _ in range(repeat)]  # fmt: skip
    return statistics.median(float(r) for r in runs)


#: what ``--steps`` times apart in an update: where each is looked up, and its name
_STEPS = {
    "iosight.timeline._update:_Parquet.__init__": "open the Parquet files (newest run, new batch)",
    "iosight.timeline._update:_Parquet.read": "read their columns",
    "iosight.timeline._update:_read": "  one table a kind of file, absent columns null",
    "iosight.timeline._update:run_files": "list the files: the timeline's runs",
    "iosight.timeline._update:source_files": "list the files: the tables it reads",
    "iosight.timeline._update:digest": "  their names, sizes and times",
    "iosight.timeline._update:_narrow": "  the new batch's io_totals",
    "iosight.timeline._update:_PlainJobs.__init__": "the new jobs' times and totals as arrays",
    "iosight.timeline._update:_PlainJobs.bin": "bin the new jobs, count the active ones",
    "iosight.timeline._update:_plain_span": "the dense span from the quartile windows",
    "iosight.timeline._update:stored_quartiles": "  the windows read",
    "iosight.timeline._update:_add_stored": "add the stored run's bins",
    "iosight.timeline._update:assemble": "the rewritten run as a table",
    "iosight.warehouse._store:write_parquet": "encode it (Parquet, in memory)",
    "iosight.warehouse._store:Warehouse.replace_file": "write it, fsync, rename it over the old",
    "iosight.warehouse._store:Warehouse._acquire": "take the write lock",
}


def _timed_steps(clock: dict) -> list:
    """Wrap each of :data:`_STEPS` to add its CPU seconds, less those of the steps it
    calls, to ``clock``; returns what to put back."""
    import importlib

    stack, undo = [], []

    def wrap(fn, label):
        def timed(*args, **kwargs):
            c = time.process_time()
            stack.append(0.0)
            try:
                return fn(*args, **kwargs)
            finally:
                spent, inner = time.process_time() - c, stack.pop()
                clock[label] = clock.get(label, 0.0) + spent - inner
                if stack:
                    stack[-1] += spent
        return timed

    for where, label in _STEPS.items():
        module, _, name = where.partition(":")
        owner = importlib.import_module(module)
        *path, attr = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        undo.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, wrap(getattr(owner, attr), label))
    return undo


def steps(wh_path: Path, scratch: Path, repeat: int) -> list[str]:
    """The CPU of each step of an update (:data:`_STEPS`, exclusive), medians of
    ``repeat`` updates, each on a fresh copy flushed to disk, after a warm-up: the lines
    to print."""
    from iosight.timeline import update_timeline

    per, clock = [], {}
    undo = _timed_steps(clock)
    try:
        for i in range(repeat + 1):
            clock.clear()
            wall, cpu, _ = _timed(update_timeline, wh_path, scratch)
            if i:
                per.append({**clock, "total": cpu})
    finally:
        for owner, attr, fn in undo:
            setattr(owner, attr, fn)
    med = {k: statistics.median(p.get(k, 0.0) for p in per) for k in [*_STEPS.values(), "total"]}
    rest = med["total"] - sum(v for k, v in med.items() if k != "total")
    lines = [f"  an update step by step (CPU, exclusive, median of {repeat} updates one after "
             f"another; load {os.getloadavg()[0]:.1f}):"]  # fmt: skip
    lines += [f"    {label:<48} {1000 * med[label]:6.2f} ms" for label in _STEPS.values()]
    lines.append(f"    {'the rest (Python between the steps, metadata)':<48} {1000 * rest:6.2f} ms")
    return [*lines, f"    {'in all':<48} {1000 * med['total']:6.2f} ms"]


def incremental(summit: Path, repeat: int, workdir: str | None, n_steps: int = 0) -> None:
    """One hour of Summit jobs added to the year's timeline: update against rebuild."""
    from iosight.timeline import load_timeline, rebuild_timeline, update_timeline
    from iosight.warehouse import Warehouse, ingest

    if workdir:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        files, n_hour = _split_summit(summit, Path(tmp))
        base = _built(Path(tmp) / "base", files["year"], files["hour"])
        print(f"  the year less its last hour: {base.jobs().shape[0] - n_hour:,} jobs; "
              f"the last hour: {n_hour:,} jobs")  # fmt: skip
        following = _built(Path(tmp) / "following", files["early"], files["before"])

        def follow(wh):  # the batch before, as follow mode adds it; then the hour lands
            update_timeline(wh)
            ingest([files["hour"]], wh, workers=1)

        runs = {"update": [], "rebuild": [], "follow": []}
        kinds = (("update", update_timeline, base, None), ("rebuild", rebuild_timeline, base, None),
                 ("follow", update_timeline, following, follow))  # fmt: skip
        for i in range(repeat + 1):  # the first is a warm-up (imports, DuckDB)
            for name, fn, source, before in kinds:
                wall, cpu, wh = _timed(fn, source.path, Path(tmp) / name, before)
                if i:
                    runs[name].append((wall, cpu))
                if name == "rebuild":
                    want = load_timeline(wh)
        same = [_same_bins(load_timeline(Warehouse(Path(tmp) / k)), want)
                for k in ("update", "follow")]  # fmt: skip
        by_step = steps(base.path, Path(tmp) / "steps", n_steps) if n_steps else []
    _print_incremental(runs, repeat, same)
    for line in by_step:
        print(line)


def _built(path: Path, year: Path, hour: Path):
    """A warehouse at ``path`` of the job totals ``year``, its timeline built, then those
    of ``hour`` ingested (the timeline not updated)."""
    from iosight.timeline import build_timeline
    from iosight.warehouse import Warehouse, ingest

    wh = Warehouse(path, create=True)
    ingest([year], wh, workers=1)
    build_timeline(wh)
    ingest([hour], wh, workers=1)
    return wh


def _same_bins(got, want) -> tuple[bool, float]:
    """Whether two timelines have the same bins and active jobs, and their largest sum
    difference as a share of the column's largest bin."""
    from iosight.timeline import VALUE_COLUMNS

    same = got[["bin_start", "active_jobs"]].equals(want[["bin_start", "active_jobs"]])
    err = max(float(np.abs(got[c] - want[c]).max() / max(np.abs(want[c]).max(), 1e-300))
              for c in VALUE_COLUMNS)  # fmt: skip
    return same, err


def _print_incremental(runs: dict, repeat: int, same: list[tuple[bool, float]]) -> None:
    """The incremental figures: medians of ``runs`` (wall, CPU) and ``same`` (update's
    and follow's bins against the rebuild's)."""
    med = {k: [statistics.median(x[j] for x in v) for j in (0, 1)] for k, v in runs.items()}
    (uw, uc), (rw, rc), (fw, fc) = med["update"], med["rebuild"], med["follow"]
    print(f"  update_timeline (the hour):  {1000 * uw:8.1f} ms wall, {1000 * uc:8.1f} ms CPU")
    print(f"  rebuild_timeline (the year): {1000 * rw:8.1f} ms wall, {1000 * rc:8.1f} ms CPU")
    print(f"  update is {rw / uw:.1f}x faster (wall), {rc / uc:.1f}x (CPU); median of {repeat}; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"  following (the hour, after this process's update of the batch before, as "
          f"ingest --follow):\n    {1000 * fw:8.1f} ms wall, {1000 * fc:8.1f} ms CPU: "
          f"{rw / fw:.1f}x (wall), {rc / fc:.1f}x (CPU) the rebuild")  # fmt: skip
    print(f"  imports (not counted above; a fresh Python, median of 3): "
          f"{1000 * import_seconds(3):.0f} ms wall")  # fmt: skip
    for label, (ok, err) in zip(("update", "following"), same, strict=True):
        print(f"  same bins and active jobs ({label}): {ok}; largest sum difference: {err:.1e} "
              "of the column's largest bin")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--records", type=int, default=10_000_000, help="records for binning")
    p.add_argument("--pandas-records", type=int, default=20_000, help="sample for pandas")
    p.add_argument("--facility", default="1000000,10000000", help="warehouse sizes (records)")
    p.add_argument("--quick", action="store_true", help="1 M records; warehouses 0.2 M, 1 M")
    p.add_argument("--workdir", default=None, help="where the synthetic warehouses go")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--summit", type=Path, help="Summit job totals (darshan_total/): part 3")
    p.add_argument("--only-incremental", action="store_true", help="part 3 only")
    p.add_argument("--repeat", type=int, default=5, help="timed runs of part 3")
    p.add_argument("--steps", type=int, default=0, help="part 3: time this many updates "
                   "step by step too (their CPU, each step apart)")  # fmt: skip
    p.add_argument("--known", type=Path, help="a warehouse with a stored timeline: time "
                   "its known-at sums only (e.g. a Summit warehouse)")  # fmt: skip
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--known-child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return build_child(a.child)
    if a.known_child:
        return known_child(a.known_child)
    if a.known:
        print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
        return print_known(a.known)
    if a.only_incremental:
        if not a.summit:
            p.error("--only-incremental needs --summit")
        print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
        print("Summit 2021 (real): one hour of jobs added to the year's timeline")
        return incremental(a.summit, a.repeat, a.workdir, a.steps)
    if a.quick:
        a.records, a.pandas_records, a.facility = 1_000_000, 5_000, "200000,1000000"
    from iosight.timeline import bin_intervals

    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    n_bins = int(SPAN // WIDTH) + 1
    start, end, values = make_records(a.records, a.seed)

    def ours(s, e, v):
        return bin_intervals(s, e, v, width=WIDTH, n_bins=n_bins, spread="overlap")

    got, t_ours = cpu_median(ours, start, end, values)
    diff, t_diff = cpu_median(difference_array, start, end, values, n_bins)
    blocks, t_blocks = cpu_median(difference_array_blocks, start, end, values, n_bins)
    rep, t_rep = cpu_median(repeat_bincount, start, end, values, n_bins)
    m = a.pandas_records
    ref, t_pd = cpu_median(pandas_bins, start[:m], end[:m], values[:m], n_bins, repeat=1)
    same = all(agree(x, y) for x, y in ((got, diff), (got, blocks), (got, rep),
                                       (ours(start[:m], end[:m], values[:m]), ref)))  # fmt: skip
    n = a.records
    print(f"SYNTHETIC records, binning only ({n:,} records, {n_bins:,} bins, CPU s, median of 5):")
    print(f"  iosight bin_intervals:        {t_ours:7.2f} s = {n / t_ours:>12,.0f} records/s")
    print(f"  fair: difference array:       {t_diff:7.2f} s = {n / t_diff:>12,.0f} records/s; "
          f"iosight is {t_diff / t_ours:.2f}x")  # fmt: skip
    print(f"  fair: difference array, blocks: {t_blocks:5.2f} s = {n / t_blocks:>12,.0f} rec/s; "
          f"iosight is {t_blocks / t_ours:.2f}x")  # fmt: skip
    print(f"  fair: numpy repeat+bincount:  {t_rep:7.2f} s = {n / t_rep:>12,.0f} records/s; "
          f"iosight is {t_rep / t_ours:.2f}x")  # fmt: skip
    print(f"  (weak) pandas apply, {m:,}:  {t_pd:7.2f} s = {m / t_pd:>12,.0f} records/s; "
          f"iosight is {(n / t_ours) / (m / t_pd):,.0f}x")  # fmt: skip
    print(f"  same bins (all five): {same}")
    sizes = [int(x) for x in a.facility.split(",") if x]
    print("SYNTHETIC facility, build_timeline end to end (query + binning + write):")
    end_to_end(sizes, a.seed, a.workdir)
    if a.summit:
        print("Summit 2021 (real): one hour of jobs added to the year's timeline")
        incremental(a.summit, a.repeat, a.workdir, a.steps)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
