"""Synthetic file-per-process writes on a described write path (labelled synthetic).

Each run of a pattern sends its bytes through every stage of the platform: compute-node
injection, the forwarding stage(s) (routers; bridge nodes, links, I/O nodes), the network,
servers and targets striped as the file system does. A stage's time is the load on its
busiest component over that component's available bandwidth; the run takes the
bottleneck stage plus a share of the others, plus metadata time. Production interference
takes a random share of every storage component's bandwidth per run, stragglers slow a
few targets a lot, and a log-normal factor adds the rest of the noise. Runs of a pattern
repeat until the CLT test converges or 9 runs (Xie et al. (2019), §IV-A), like the paper's
sampling; patterns follow Tables III/IV (scales 1..512, burst sizes 1 MB..2.5 GB) and each
is placed as a block of nodes starting at a random node, as a scheduler would place it.

This is a model of a machine, not a measurement: every row carries ``synthetic = True``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import check_param, check_seed
from iosight._progress import Progress, ensure_progress
from iosight.perfmodel import Platform, WritePattern, place_nodes, target_bytes

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

MB = 1000**2
TRAIN_SCALES = (1, 2, 4, 8, 16, 32, 64, 128)
TEST_SCALES = (200, 256, 400, 512)
# burst-size ranges of Tables III/IV (MB) and stripe-count ranges of Table IV
SIZE_RANGES_MB = ((1, 5), (6, 25), (25, 100), (101, 250), (251, 500), (501, 1024), (1025, 2560))
STRIPE_RANGES = ((1, 4), (5, 8), (9, 16), (17, 32), (33, 64))

# bandwidths in bytes/s, metadata in operations/s; per component unless "network"
DEFAULT_RATES = {
    "lustre": {
        "compute": 1.4e9,
        "router": 2.6e9,
        "network": 8e11,
        "server": 4.0e9,
        "target": 0.55e9,
        "metadata": 12000.0,
    },
    "gpfs": {
        "compute": 1.6e9,
        "bridge": 1.8e9,
        "link": 1.8e9,
        "io_node": 3.0e9,
        "network": 2.4e11,
        "server": 5.0e9,
        "target": 0.7e9,
        "metadata": 6000.0,
        "subblock": 40000.0,
    },
}


@dataclass(frozen=True, kw_only=True)
class WriteSimConfig:
    """Settings of the synthetic write path; every random draw comes from ``seed``."""

    scales: tuple[int, ...] = TRAIN_SCALES + TEST_SCALES
    patterns_per_scale: int = 40
    confidence: float | None = None  # default: 0.9 Lustre, 0.98 GPFS (§IV-A)
    error: float = 0.1
    max_runs: int = 9
    rates: dict[str, float] = field(default_factory=dict)  # overrides DEFAULT_RATES
    interference: float = 0.6  # largest share of storage bandwidth taken by other jobs
    straggler_prob: float = 0.15  # chance per run that a few targets are very slow
    noise: float = 0.1  # sigma of the log-normal run-to-run factor
    seed: int = 0


def _draw_patterns(platform: Platform, cfg: WriteSimConfig, rng) -> list[tuple[WritePattern, int]]:
    """Patterns of Tables III/IV, each with the first node of its (block) allocation."""
    pats = []
    lustre = platform.filesystem == "lustre"
    for n in cfg.scales:
        check_param("scales", n, 1 <= n <= platform.nodes, f"within 1..{platform.nodes}")
        for _ in range(cfg.patterns_per_scale):
            lo, hi = SIZE_RANGES_MB[rng.integers(len(SIZE_RANGES_MB))]
            size = int(math.exp(rng.uniform(math.log(lo), math.log(hi))) * MB)
            m = int(rng.integers(1, platform.cores_per_node + 1))
            w = None
            if lustre:
                a, b = STRIPE_RANGES[rng.integers(len(STRIPE_RANGES))]
                w = int(min(rng.integers(a, b + 1), platform.storage.targets))
            first = int(rng.integers(0, platform.storage.targets))
            node0 = int(rng.integers(0, platform.nodes - n + 1))  # where the scheduler put it
            pats.append((WritePattern(n, m, size, w, first_target=first), node0))
    return pats


def _stage_times(platform: Platform, pat: WritePattern, nodes, rates) -> list[float]:
    """Time of the pattern's busiest component on each forwarding stage (no interference)."""
    mk = pat.cores * pat.size
    times = [mk / rates["compute"], pat.nodes * mk / rates["network"]]
    for st in platform.stages:
        groups = np.bincount(st.component(nodes, platform.nodes))
        times.append(groups.max() * mk / rates[st.name])
    return times


def simulate_writes(
    platform: Platform, cfg: WriteSimConfig = WriteSimConfig(), progress: Progress | None = None
) -> pd.DataFrame:
    """Runs of synthetic write patterns: one row per run (``write_time`` in seconds)."""
    import pandas as pd
    from scipy.stats import norm

    check_param(
        "patterns_per_scale",
        cfg.patterns_per_scale,
        cfg.patterns_per_scale >= 1,
        "a positive integer",
    )
    check_seed(cfg.seed)
    rates = {**DEFAULT_RATES[platform.filesystem], **cfg.rates}
    conf = cfg.confidence or (0.9 if platform.filesystem == "lustre" else 0.98)
    z = norm.ppf(0.5 + conf / 2)
    rng = np.random.default_rng(cfg.seed)
    patterns = _draw_patterns(platform, cfg, rng)
    sto = platform.storage
    server_of = sto.server_of(np.arange(sto.targets))
    prog = ensure_progress(progress)
    prog.start(len(patterns), f"simulating writes on {platform.name}")
    rows, clock = [], 0.0
    for pid, (pat, node0) in enumerate(patterns):
        nodes = place_nodes(platform, pat.nodes, first=node0)
        tb = target_bytes(platform, pat, seed=cfg.seed + pid)
        used = np.flatnonzero(tb)
        sb = np.bincount(server_of, weights=tb, minlength=sto.servers)
        fixed = _stage_times(platform, pat, nodes, rates)
        md = _metadata_time(platform, pat, rates)
        times: list[float] = []
        while len(times) < cfg.max_runs:
            t = _one_run(rng, cfg, sto, rates, (tb, used, sb, server_of), fixed, md)
            times.append(t)
            rows.append((pid, pat.nodes, pat.cores, pat.size, pat.stripes, pat.first_target,
                         len(times), clock, t))  # fmt: skip
            clock += t + 60.0
            r = len(times)
            if r >= 3 and z * np.std(times, ddof=1) / math.sqrt(r) <= cfg.error * np.mean(times):
                break
        prog.advance(1)
    prog.finish()
    columns = ["pattern_id", "nodes", "cores", "size", "stripes", "first_target", "run",
               "start_time", "write_time"]  # fmt: skip
    runs = pd.DataFrame(rows, columns=columns)
    runs["stripes"] = runs["stripes"].astype(float)
    runs["system"] = f"{platform.name} (synthetic)"
    runs["synthetic"] = True
    return runs


def _metadata_time(platform: Platform, pat, rates: dict) -> float:
    """Seconds of metadata work: one create per process, and on GPFS the partial
    blocks' subblock allocations."""
    md = pat.nodes * pat.cores / rates["metadata"]
    if platform.filesystem == "gpfs":
        sto = platform.storage
        sub = sto.block_size // sto.subblocks
        partial = math.ceil((pat.size % sto.block_size) / sub)
        md += pat.nodes * pat.cores * partial / rates["subblock"]
    return md


def _one_run(rng, cfg: WriteSimConfig, sto, rates: dict, load: tuple, fixed, md: float) -> float:
    """One run's write time under a random production load: the slowest stage, plus a
    share of the others, plus metadata, with log-normal noise. ``load``: the bytes per
    target, the targets used, the bytes per server and each target's server."""
    tb, used, sb, server_of = load
    u = rng.uniform(0, cfg.interference)  # production load during this run
    avail = 1.0 - u * rng.beta(2.0, 3.0, sto.targets)
    if rng.random() < cfg.straggler_prob:
        slow = rng.choice(sto.targets, max(1, sto.targets // 100), replace=False)
        avail[slow] /= rng.uniform(2.0, 8.0)
    t_target = float(np.max(tb[used] / (rates["target"] * avail[used])))
    per_server = np.bincount(server_of, minlength=sto.servers)
    s_avail = np.bincount(server_of, weights=avail, minlength=sto.servers) / per_server
    t_server = float(np.max(sb / (rates["server"] * s_avail)))
    stages = np.array([*fixed, t_target, t_server])
    t = md * (1 + 2 * u) + stages.max() + 0.15 * (stages.sum() - stages.max())
    return t * math.exp(rng.normal(0.0, cfg.noise * (1 + u)))


def runs_to_warehouse(
    wh: Warehouse,
    runs: pd.DataFrame,
    platform: Platform,
    *,
    seed: int = 0,
    epoch: float = 1.5e9,
) -> int:
    """Write runs as IOR-like Darshan tables (``jobs``, ``posix``, ``lustre``), synthetic.

    One job per run, one file per rank: every rank opens at a small offset from the job
    start and the last close lands at ``write_time``. Returns the number of jobs written.
    Meant for small run tables (tests, demo): it writes ``nodes * cores`` rows per run.
    """
    import hashlib

    import pyarrow as pa

    from iosight.darshan import jobs_schema

    check_seed(seed)
    rng = np.random.default_rng(seed)
    jobs, posix, lustre = [], [], []
    for r in runs.itertuples(index=False):
        ranks = int(r.nodes * r.cores)
        key = hashlib.sha1(f"synth-writes/{seed}/{r.pattern_id}/{r.run}".encode()).hexdigest()
        start = epoch + float(r.start_time)
        jobs.append(
            {
                "job_key": key,
                "source_path": f"synthetic://writes/{key[:12]}",
                "source_format": "synthetic",
                "log_version": "3.41",
                "lib_version": "3.4.4",
                "jobid": int(r.pattern_id * 100 + r.run),
                "uid": 0,
                "exe": "ior (synthetic)",
                "nprocs": ranks,
                "start_time": start,
                "end_time": start + r.write_time + 1,
                "run_time": r.write_time + 1,
                "modules": "POSIX,LUSTRE",
                "partial_modules": "",
                "partial": False,
                "synthetic": True,
                "metadata": "",
            }
        )
        rank = np.arange(ranks)
        opens = rng.uniform(0, 0.02 * r.write_time, ranks)
        closes = np.minimum(opens + r.write_time * rng.uniform(0.7, 1.0, ranks), r.write_time)
        closes[rng.integers(ranks)] = r.write_time
        opens[rng.integers(ranks)] = 0.0
        rec = rng.integers(1, 2**62, ranks)
        posix.append(
            pa.table(
                {
                    "job_key": [key] * ranks,
                    "rank": rank,
                    "record_id": rec,
                    "POSIX_BYTES_WRITTEN": np.full(ranks, int(r.size)),
                    "POSIX_F_OPEN_START_TIMESTAMP": opens + 0.0,
                    "POSIX_F_CLOSE_END_TIMESTAMP": closes + 0.0,
                }
            )
        )
        if platform.filesystem == "lustre" and not math.isnan(r.stripes):
            lustre.append(
                pa.table(
                    {
                        "job_key": [key] * ranks,
                        "rank": rank,
                        "record_id": rec,
                        "LUSTRE_COMP_STRIPE_COUNT": np.full(ranks, int(r.stripes)),
                    }
                )
            )
    job_table = pa.Table.from_pylist(
        jobs, schema=pa.schema([("job_key", pa.string()), *jobs_schema()])
    )
    batch = {"jobs": [job_table], "posix": posix}
    if lustre:
        batch["lustre"] = lustre
    wh.commit(batch)
    return len(jobs)


def simulate_samples(
    platform: Platform, cfg: WriteSimConfig = WriteSimConfig(), progress: Progress | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulated runs and the samples they group into (CLT test as in §IV-A)."""
    from iosight.perfmodel import DEFAULT_CONFIDENCE, group_runs

    runs = simulate_writes(platform, cfg, progress)
    conf = cfg.confidence or DEFAULT_CONFIDENCE[platform.filesystem]
    samples = group_runs(runs, confidence=conf, error=cfg.error, max_runs=cfg.max_runs)
    return runs, samples
