"""A synthetic HPC facility: months of jobs with POSIX/STDIO records, written to a warehouse.

Clearly synthetic (``jobs.synthetic = True``, ``source_format = 'synthetic'``). Populations:

- **regular jobs**: Poisson arrivals whose rate follows a daily cycle (peak mid-afternoon
  UTC), a weekly one (weekends at 60%) and a per-month level; heavy-tailed sizes (log-normal
  process counts) and run times (log-normal, 1 min to 48 h); each reads its input early,
  writes its output late, some write intermediate results, and all write a little STDIO;
- **checkpoint writers**: campaigns of back-to-back 12-hour jobs that write a checkpoint
  every 45-180 minutes;
- **analysis campaigns**: 2-6 days of many read-heavy jobs, about two a month;
- **storms**: rare 5-15 minute floods of large writes from hundreds of jobs;
- **maintenance**: one 6-12 hour window a month in which no job starts.

Generated one week at a time from ``numpy.random.SeedSequence(seed)`` streams and committed
in batches, so six months need little memory; the same seed gives the same warehouse.
The statistics it aims at are those the paper reports for Blue Waters (§IV): swings of
more than 100x in hourly rates and bursts that mostly last one or two 5-minute bins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import check_param, check_seed
from iosight._progress import Progress, ensure_progress

if TYPE_CHECKING:
    import pyarrow as pa

    from iosight.warehouse import Warehouse

DAY = 86400.0
WEEK = 7 * DAY
MB = 1e6
_POPULATIONS = ("regular", "checkpoint", "analysis", "storm")
MAX_MONTHS = 120.0  # ten years
LAST_START = 7_258_118_400.0  # 2200-01-01: every simulated time stays a valid timestamp
# one simulated week is held in memory: ~3 kB per job, so <= 700k jobs (~2 GB) a week
MAX_JOBS_PER_DAY = 100_000.0


@dataclass(frozen=True, kw_only=True)
class FacilityConfig:
    """Settings of the synthetic facility; every rate is per day unless named otherwise."""

    months: float = 6.0
    seed: int = 1
    start: str = "2024-01-01"
    jobs_per_day: float = 1500.0
    checkpoint_campaigns_per_month: float = 3.0
    analysis_campaigns_per_month: float = 2.0
    storms_per_month: float = 3.0
    maintenance_per_month: float = 1.0


@dataclass(frozen=True)
class FacilitySummary:
    """What was written: jobs and records per population, and the time span."""

    jobs: dict[str, int]
    posix_records: int
    stdio_records: int
    start_time: float
    end_time: float


@dataclass(frozen=True)
class _Schedule:
    """Campaigns and windows drawn once for the whole period (epoch seconds)."""

    month_level: np.ndarray  # per 30-day month, multiplies the regular arrival rate
    ckpt: np.ndarray  # (n, 5): start, end, period s, nprocs, bytes per proc
    analysis: np.ndarray  # (n, 2): start, end
    storms: np.ndarray  # (n, 3): start, duration, jobs
    maintenance: np.ndarray  # (n, 2): start, end


def _draw_schedule(cfg: FacilityConfig, t0: float, t1: float, rng: np.random.Generator):
    months = (t1 - t0) / (30 * DAY)

    def starts(rate: float) -> np.ndarray:
        return np.sort(rng.uniform(t0, t1, rng.poisson(rate * months)))

    c = starts(cfg.checkpoint_campaigns_per_month)
    ckpt = np.column_stack(
        [
            c,
            c + rng.uniform(3, 20, c.size) * DAY,
            rng.uniform(45, 180, c.size) * 60,
            2 ** rng.integers(9, 14, c.size),
            rng.lognormal(np.log(200 * MB), 0.3, c.size),
        ]
    )
    a = starts(cfg.analysis_campaigns_per_month)
    s = starts(cfg.storms_per_month)
    m = starts(cfg.maintenance_per_month)
    return _Schedule(
        month_level=rng.lognormal(0, 0.5, int(np.ceil(months)) + 1),
        ckpt=ckpt,
        analysis=np.column_stack([a, a + rng.uniform(2, 6, a.size) * DAY]),
        storms=np.column_stack(
            [s, rng.uniform(5, 15, s.size) * 60, rng.integers(100, 300, s.size)]
        ),
        maintenance=np.column_stack([m, m + rng.uniform(6, 12, m.size) * 3600]),
    )


def _in_windows(t: np.ndarray, windows: np.ndarray) -> np.ndarray:
    if windows.size == 0:
        return np.zeros(t.shape, bool)
    return ((t[:, None] >= windows[:, 0]) & (t[:, None] < windows[:, 1])).any(axis=1)


def _poisson_arrivals(rate_per_hour: np.ndarray, hours: np.ndarray, rng) -> np.ndarray:
    counts = rng.poisson(rate_per_hour)
    return np.repeat(hours, counts) + rng.uniform(0, 3600, counts.sum())


class _Batch:
    """Jobs and records of one week, grown population by population."""

    def __init__(self) -> None:
        self.jobs: dict[str, list[np.ndarray]] = {
            k: [] for k in ("start", "run", "nprocs", "population")
        }
        self.recs: dict[str, list[np.ndarray]] = {
            k: [] for k in ("job", "stdio", "rank", "rb", "rs", "re", "wb", "ws", "we")
        }
        self.n = 0

    def add_jobs(self, start, run, nprocs, population: str) -> np.ndarray:
        idx = self.n + np.arange(start.size)
        self.jobs["start"].append(start)
        self.jobs["run"].append(run)
        self.jobs["nprocs"].append(nprocs.astype(np.int64))
        self.jobs["population"].append(np.full(start.size, _POPULATIONS.index(population)))
        self.n += start.size
        return idx

    def add_records(
        self, job, *, stdio=False, rank=-1, rb=0.0, rs=0.0, re=0.0, wb=0.0, ws=0.0, we=0.0
    ) -> None:
        n = np.asarray(job).size
        for key, v in (
            ("job", job),
            ("stdio", stdio),
            ("rank", rank),
            ("rb", rb),
            ("rs", rs),
            ("re", re),
            ("wb", wb),
            ("ws", ws),
            ("we", we),
        ):
            self.recs[key].append(np.broadcast_to(np.asarray(v), (n,)).copy())

    def arrays(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        def cat(d):
            return {k: np.concatenate(v) if v else np.array([]) for k, v in d.items()}

        return cat(self.jobs), cat(self.recs)


def _regular(b: _Batch, sch: _Schedule, w0, w1, t_origin, cfg, rng) -> None:
    hours = np.arange(w0, w1, 3600.0)
    h = (hours % DAY) / 3600.0
    weekday = ((hours // DAY) + 3) % 7  # 1970-01-01 was a Thursday: 0 = Monday
    level = sch.month_level[((hours - t_origin) // (30 * DAY)).astype(int)]
    rate = cfg.jobs_per_day / 24 * (1 + 0.7 * np.cos(2 * np.pi * (h - 15) / 24))
    rate = rate * np.where(weekday >= 5, 0.6, 1.0) * level
    start = _poisson_arrivals(rate, hours, rng)
    start = start[~_in_windows(start, sch.maintenance)]
    n = start.size
    nprocs = np.clip(np.round(rng.lognormal(3.0, 1.5, n)), 1, 65536)
    run = np.clip(rng.lognormal(np.log(2400), 1.2, n), 60, 2 * DAY)
    idx = b.add_jobs(start, run, nprocs, "regular")
    f_in, f_out = rng.uniform(0.01, 0.2, n), rng.uniform(0.01, 0.2, n)
    b.add_records(
        idx, rank=-1, rb=nprocs * rng.lognormal(np.log(50 * MB), 1.5, n), rs=0.0, re=f_in * run
    )
    b.add_records(
        idx,
        rank=-1,
        wb=nprocs * rng.lognormal(np.log(30 * MB), 1.8, n),
        ws=(1 - f_out) * run,
        we=run,
    )
    mid = rng.random(n) < 0.4
    b.add_records(
        idx[mid],
        rank=0,
        wb=nprocs[mid] * rng.lognormal(np.log(5 * MB), 1.0, mid.sum()),
        ws=0.1 * run[mid],
        we=0.9 * run[mid],
    )
    b.add_records(
        idx, stdio=True, rank=0, wb=rng.lognormal(np.log(0.5 * MB), 1.5, n), ws=0.0, we=run
    )


def _checkpoints(b: _Batch, sch: _Schedule, w0, w1, rng) -> None:
    job_len = 12 * 3600.0
    for c0, c1, period, nprocs, per_proc in sch.ckpt:
        starts = np.arange(c0, c1, job_len)
        starts = starts[(starts >= w0) & (starts < w1)]
        if starts.size == 0:
            continue
        idx = b.add_jobs(
            starts, np.full(starts.size, job_len), np.full(starts.size, nprocs), "checkpoint"
        )
        k = int(job_len // period)
        job = np.repeat(idx, k)
        at = np.tile(np.arange(1, k + 1) * period, idx.size) + rng.normal(0, 60, job.size)
        dur = rng.uniform(120, 360, job.size)
        b.add_records(
            job,
            rank=-1,
            wb=nprocs * per_proc * rng.lognormal(0, 0.1, job.size),
            ws=np.clip(at, 0, job_len),
            we=np.clip(at + dur, 0, job_len),
        )
        b.add_records(idx, rank=-1, rb=nprocs * per_proc, rs=0.0, re=300.0)


def _analysis(b: _Batch, sch: _Schedule, w0, w1, rng) -> None:
    hours = np.arange(w0, w1, 3600.0)
    active = _in_windows(hours, sch.analysis) & ~_in_windows(hours, sch.maintenance)
    start = _poisson_arrivals(np.where(active, 10.0, 0.0), hours, rng)
    n = start.size
    nprocs = 2 ** rng.integers(6, 10, n)
    run = rng.uniform(1, 6, n) * 3600
    idx = b.add_jobs(start, run, nprocs, "analysis")
    b.add_records(
        idx, rank=-1, rb=nprocs * rng.lognormal(np.log(2000 * MB), 1.0, n), rs=0.0, re=run
    )
    b.add_records(idx, rank=0, wb=rng.lognormal(np.log(100 * MB), 1.0, n), ws=0.95 * run, we=run)


def _storms(b: _Batch, sch: _Schedule, w0, w1, rng) -> None:
    for s0, dur, njobs in sch.storms:
        if not w0 <= s0 < w1:
            continue
        n = int(njobs)
        start = s0 + rng.uniform(0, 60, n)
        nprocs = 2 ** rng.integers(8, 12, n)
        idx = b.add_jobs(start, np.full(n, dur), nprocs, "storm")
        b.add_records(
            idx,
            rank=-1,
            wb=nprocs * rng.lognormal(np.log(100 * MB), 0.5, n),
            ws=0.0,
            we=dur * rng.uniform(0.5, 1.0, n),
        )


def _tables(batch: _Batch, window: int, cfg: FacilityConfig, rng) -> dict[str, pa.Table]:
    """Arrow tables (jobs, posix, stdio, job_totals) of one week, warehouse contract columns."""
    import pyarrow as pa

    jobs, recs = batch.arrays()
    n = jobs["start"].size
    keys = np.array([f"syn-{cfg.seed}-{window:04d}-{i:06d}" for i in range(n)])
    pop = np.array(_POPULATIONS)[jobs["population"].astype(int)]
    meta = {
        p: json.dumps({"generator": "iosight.synth.facility", "population": p, "seed": cfg.seed})
        for p in _POPULATIONS
    }
    job_table = pa.table(
        {
            "job_key": keys,
            "source_path": np.full(n, f"synthetic://facility/seed={cfg.seed}"),
            "source_format": np.full(n, "synthetic"),
            "log_version": np.full(n, "3.41"),
            "lib_version": np.full(n, "synthetic"),
            "jobid": (window * 1_000_000 + np.arange(n)).astype(np.int64),
            "uid": rng.integers(1000, 1400, n).astype(np.int64),
            "exe": np.char.add("synthetic-", pop),
            "nprocs": jobs["nprocs"],
            "start_time": jobs["start"],
            "end_time": jobs["start"] + jobs["run"],
            "run_time": jobs["run"],
            "modules": np.full(n, "POSIX,STDIO"),
            "partial_modules": np.full(n, ""),
            "partial": np.zeros(n, bool),
            "synthetic": np.ones(n, bool),
            "metadata": np.array([meta[p] for p in pop]),
        }
    )
    job = recs["job"].astype(np.int64)
    nprocs = jobs["nprocs"][job]
    rb, wb = np.round(recs["rb"]), np.round(recs["wb"])
    # transfer sizes around 1 MiB; bandwidth grows with the square root of the processes
    xfer = rng.lognormal(np.log(2**20), 1.0, job.size)
    bw = 200 * MB * np.sqrt(nprocs) * rng.lognormal(0, 0.3, job.size)
    cols = {
        "BYTES_READ": rb.astype(np.int64),
        "BYTES_WRITTEN": wb.astype(np.int64),
        "READS": np.where(rb > 0, np.ceil(rb / xfer), 0).astype(np.int64),
        "WRITES": np.where(wb > 0, np.ceil(wb / xfer), 0).astype(np.int64),
        "OPENS": np.ones(job.size, np.int64),
        "F_READ_TIME": rb / bw,
        "F_WRITE_TIME": wb / bw,
        "F_META_TIME": rng.exponential(0.05, job.size),
        "F_READ_START_TIMESTAMP": np.where(rb > 0, recs["rs"], 0.0),
        "F_READ_END_TIMESTAMP": np.where(rb > 0, recs["re"], 0.0),
        "F_WRITE_START_TIMESTAMP": np.where(wb > 0, recs["ws"], 0.0),
        "F_WRITE_END_TIMESTAMP": np.where(wb > 0, recs["we"], 0.0),
    }
    out = {"jobs": job_table}
    totals: dict[str, np.ndarray] = {"job_key": keys}
    is_stdio = recs["stdio"].astype(bool)
    for layer, mask in (("POSIX", ~is_stdio), ("STDIO", is_stdio)):
        t = {
            "job_key": keys[job[mask]],
            "rank": recs["rank"][mask].astype(np.int64),
            "record_id": rng.integers(0, 2**63, mask.sum(), dtype=np.uint64),
        }
        t.update({f"{layer}_{c}": v[mask] for c, v in cols.items()})
        out[layer.lower()] = pa.table(t)
        for c in ("BYTES_READ", "BYTES_WRITTEN", "READS", "WRITES", "F_READ_TIME", "F_WRITE_TIME"):
            totals[f"total_{layer}_{c}"] = np.bincount(
                job[mask], weights=cols[c][mask], minlength=n
            )
    out["job_totals"] = pa.table(totals)
    return out


def generate_facility(
    warehouse: Warehouse,
    config: FacilityConfig | None = None,
    *,
    progress: Progress | None = None,
) -> FacilitySummary:
    """Write a synthetic facility into ``warehouse`` (tables ``jobs``, ``posix``, ``stdio``,
    ``job_totals``), one committed batch per simulated week.

    Parameters
    ----------
    warehouse : Warehouse
    config : FacilityConfig, optional
        Length (``months`` of 30 days), ``seed``, start date and population rates.
    progress : Progress, optional
        Advanced once per week.
    """
    from iosight.timeline import parse_time

    cfg = config or FacilityConfig()
    check_param(
        "months", cfg.months, 0 < cfg.months <= MAX_MONTHS, f"in (0, {MAX_MONTHS:g}] months"
    )
    check_param(
        "jobs_per_day",
        cfg.jobs_per_day,
        0 < cfg.jobs_per_day <= MAX_JOBS_PER_DAY,
        f"in (0, {MAX_JOBS_PER_DAY:g}] (one week is held in memory)",
    )
    check_seed(cfg.seed)
    t0 = parse_time(cfg.start)
    check_param("start", cfg.start, 0 <= t0 < LAST_START, "a date from 1970 to 2199")
    t1 = t0 + cfg.months * 30 * DAY
    streams = np.random.SeedSequence(cfg.seed).spawn(2)
    schedule = _draw_schedule(cfg, t0, t1, np.random.default_rng(streams[0]))
    windows = np.arange(t0, t1, WEEK)
    week_seeds = streams[1].spawn(windows.size)
    counts = dict.fromkeys(_POPULATIONS, 0)
    n_posix = n_stdio = 0
    prog = ensure_progress(progress)
    prog.start(windows.size, "synthetic facility (weeks)")
    for i, w0 in enumerate(windows):
        w1 = min(w0 + WEEK, t1)
        rng = np.random.default_rng(week_seeds[i])
        batch = _Batch()
        _regular(batch, schedule, w0, w1, t0, cfg, rng)
        _checkpoints(batch, schedule, w0, w1, rng)
        _analysis(batch, schedule, w0, w1, rng)
        _storms(batch, schedule, w0, w1, rng)
        tables = _tables(batch, i, cfg, rng)
        warehouse.commit({name: [t] for name, t in tables.items()})
        pops = np.bincount(np.concatenate(batch.jobs["population"]), minlength=4)
        for p, c in zip(_POPULATIONS, pops, strict=True):
            counts[p] += int(c)
        n_posix += tables["posix"].num_rows
        n_stdio += tables["stdio"].num_rows
        prog.advance(1, jobs=sum(counts.values()))
    prog.finish()
    return FacilitySummary(counts, n_posix, n_stdio, t0, t1)
