"""Synthetic DKRZ-like monitoring: jobs from known classes, 5 s samples, nine metrics.

What the paper could not do (Betke & Kunkel (2020), §4.2: "there are no tools that can
assess the cluster quality automatically") needs jobs whose class is known.
Each class is a recipe of I/O phases (when, which metrics, how intense, on how
many nodes); each job draws its run time, node count, phase timing, intensity,
node participation and occasional stray bursts, so runs of one class differ as
re-runs on a busy machine do (§1). All rows are marked synthetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param, check_seed
from iosight._progress import Progress, ensure_progress
from iosight.similarity import METRIC_INDEX, METRICS, SEGMENT_S, Categories

if TYPE_CHECKING:
    import pandas as pd

    from iosight.warehouse import Warehouse

INTERVAL_S = 5.0
FILE_SYSTEMS = ("lustre01", "lustre02")
_MIB = 2.0**20
MAX_JOBS = 1_000_000  # every job's segments are held in memory until the end
#: Split points of the synthetic site (ops/s, bytes/s): LowIO below, CriticalIO from.
SYNTH_SPLITS: dict[str, tuple[float, float]] = {
    **{m: (50.0, 1000.0) for m in METRICS if m.startswith("md_")},
    "read_calls": (200.0, 5000.0),
    "write_calls": (200.0, 5000.0),
    "read_bytes": (50 * _MIB, 1024 * _MIB),
    "write_bytes": (50 * _MIB, 1024 * _MIB),
}


@dataclass(frozen=True)
class Phase:
    """Activity of some metrics: at the ``start``, the ``end``, ``all`` along, or
    ``periodic`` (every ``period_s``), each burst ``length_s`` long, at category
    ``level`` (1 HighIO, 4 CriticalIO) on a fraction ``nodes`` of the job's nodes."""

    metrics: tuple[str, ...]
    where: str
    level: int
    length_s: float = 600.0
    period_s: float = 0.0
    nodes: float = 1.0


@dataclass(frozen=True)
class JobClass:
    """A known job class: its phases, run-time range (s) and node-count range."""

    name: str
    phases: tuple[Phase, ...]
    runtime_s: tuple[float, float]
    nodes: tuple[int, int]


_R = ("md_read", "read_bytes", "read_calls")
_W = ("write_bytes", "write_calls")
CLASSES: tuple[JobClass, ...] = (
    JobClass("idle", (), (300, 28_800), (1, 8)),
    JobClass("checkpoint", (Phase(_W, "periodic", 4, 300, 3600),), (7_200, 28_800), (8, 64)),
    JobClass("read-input", (Phase(_R, "start", 4, 600),), (1_800, 14_400), (1, 16)),
    JobClass(
        "read-compute-write",
        (Phase(_R, "start", 1, 900), Phase(_W, "end", 4, 600)),
        (3_600, 21_600),
        (2, 32),
    ),
    # the temporal mirror of read-compute-write: same metrics and durations, opposite
    # order, which no profile can tell apart (the paper's argument for time series)
    JobClass(
        "write-compute-read",
        (Phase(_W, "start", 4, 600), Phase(_R, "end", 1, 900)),
        (3_600, 21_600),
        (2, 32),
    ),
    JobClass(
        "metadata-storm",
        (Phase(("md_file_create", "md_file_delete", "md_other"), "all", 4, nodes=0.25),),
        (1_200, 7_200),
        (1, 4),
    ),
    JobClass(
        "read-calls-heavy",
        (Phase(("read_calls",), "all", 4, nodes=0.5), Phase(("md_read",), "all", 1)),
        (3_600, 28_800),
        (16, 64),
    ),
    JobClass(
        "post-processing",
        (Phase(("md_read", "read_bytes"), "all", 1), Phase(_W, "end", 1, 600)),
        (600, 3_600),
        (1, 2),
    ),
    JobClass("write-stream", (Phase(_W, "all", 1),), (1_800, 10_800), (4, 32)),
    JobClass("final-dump", (Phase(("write_bytes",), "end", 4, 600),), (1_200, 14_400), (1, 64)),
    JobClass(
        "md-periodic",
        (Phase(("md_mod", "md_other"), "periodic", 1, 300, 1200),),
        (3_600, 14_400),
        (1, 8),
    ),
    JobClass(
        "read-write-alternating",
        (Phase(_R[1:], "periodic", 1, 600, 2400), Phase(_W, "periodic", 1, 600, 1200)),
        (4_800, 19_200),
        (2, 16),
    ),
    JobClass(
        "small-files",
        (
            Phase(("md_file_create", "write_calls"), "start", 1, 600),
            Phase(("md_file_create", "md_file_delete"), "end", 1, 600),
        ),
        (900, 7_200),
        (1, 4),
    ),
)


def synth_categories() -> Categories:
    """The synthetic site's split points (the "config" of §3, not quantiles)."""
    return Categories(SYNTH_SPLITS)


def _loguniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _windows(phase: Phase, runtime: float, rng: np.random.Generator) -> list[tuple[float, float]]:
    length = phase.length_s * rng.uniform(0.7, 1.3)
    if phase.where == "all":
        return [(0.0, runtime)]
    if phase.where == "start":
        return [(rng.uniform(0, 60), length)]
    if phase.where == "end":
        return [(max(0.0, runtime - length - rng.uniform(0, 60)), runtime)]
    period = phase.period_s * rng.uniform(0.9, 1.1)
    first = rng.uniform(0.3, 1.0) * period
    return [(t, t + length) for t in np.arange(first, runtime, period)]


def _job_samples(cls: JobClass, rng: np.random.Generator, keep_raw: bool):
    """One job's 5 s samples, reduced to segment means.

    Returns ``(n_t, n_nodes, means, raw)``: ``means[(fs, metric)]`` is a (nodes,
    segments) array of segment means; ``raw`` (only with ``keep_raw``) lists
    ``(fs, metric, nodes, sample indices, values)``. Samples are drawn only where
    something is active; all other samples are zero. A last partial segment is the
    mean of the samples it has (docs/methods.md §3).
    """
    runtime = min(_loguniform(rng, *cls.runtime_s), 8 * 3600.0)
    n_nodes = int(round(_loguniform(rng, cls.nodes[0], cls.nodes[1] + 0.999)))
    n_nodes = max(1, min(n_nodes, cls.nodes[1]))
    n_t = int(runtime // INTERVAL_S) + 1
    per_seg = int(SEGMENT_S // INTERVAL_S)
    n_seg = -(-n_t // per_seg)
    counts = np.full(n_seg, per_seg, dtype=float)
    counts[-1] = n_t - (n_seg - 1) * per_seg
    fs_main = 0 if rng.random() < 0.8 else 1
    means: dict[tuple[int, int], np.ndarray] = {}
    raw: list = []
    intensity = rng.lognormal(0.0, 0.3)

    def put(fs: int, mi: int, nodes: np.ndarray, i0: int, values: np.ndarray) -> None:
        i1 = i0 + values.shape[1]
        segs = np.arange(i0 // per_seg, (i1 - 1) // per_seg + 1)
        sums = np.add.reduceat(values, np.maximum(segs * per_seg, i0) - i0, axis=1)
        arr = means.setdefault((fs, mi), np.zeros((n_nodes, n_seg)))
        arr[np.ix_(nodes, segs)] += sums / counts[segs]
        if keep_raw:
            raw.append((fs, mi, nodes, np.arange(i0, i1), values))

    def add(fs: int, metric: str, level: int, nodes: np.ndarray, t0: float, t1: float) -> None:
        lo, hi = SYNTH_SPLITS[metric]
        base = hi * rng.uniform(1.5, 4.0) if level >= 4 else lo * rng.uniform(3.0, 12.0)
        i0 = max(0, int(np.ceil(t0 / INTERVAL_S)))
        i1 = min(n_t, int(np.ceil(t1 / INTERVAL_S)))
        if i1 <= i0:
            return
        noise = np.exp(0.4 * rng.standard_normal((len(nodes), i1 - i0), dtype=np.float32))
        put(fs, METRIC_INDEX[metric], nodes, i0, base * intensity * noise.astype(float))

    for phase in cls.phases:
        k = max(1, int(round(phase.nodes * n_nodes)))
        for t0, t1 in _windows(phase, runtime, rng):
            nodes = np.sort(rng.choice(n_nodes, size=k, replace=False))
            for m in phase.metrics:
                add(fs_main, m, phase.level, nodes, t0, t1)
    if rng.random() < 0.15:  # a stray burst on one node
        t0 = rng.uniform(0, runtime)
        m = METRICS[rng.integers(len(METRICS))]
        add(int(rng.integers(2)), m, 1, np.array([rng.integers(n_nodes)]), t0, t0 + 300)
    for _ in range(rng.poisson(2)):  # LowIO background all along, below every split point
        fs, mi, node = int(rng.integers(2)), int(rng.integers(len(METRICS))), rng.integers(n_nodes)
        level = SYNTH_SPLITS[METRICS[mi]][0] * rng.uniform(0.01, 0.2)
        put(fs, mi, np.array([node]), 0, np.full((1, n_t), level))
    return n_t, n_nodes, means, raw


def generate_monitoring(
    job_count: int,
    *,
    seed: int = 1,
    classes: tuple[JobClass, ...] = CLASSES,
    samples_path: str | Path | None = None,
    progress: Progress | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Generate ``job_count`` labelled jobs and reduce them to 10-minute segments.

    Parameters
    ----------
    job_count : int
        Number of jobs (at most ``MAX_JOBS``); classes are drawn uniformly.
    seed : int, default 1
        Seed; each job has its own spawned stream, so job ``i`` does not depend on
        ``job_count``.
    samples_path : path, optional
        Also write the raw 5 s samples in long format (Parquet: ``job, node, fs,
        metric, time, value``; non-zero samples plus one zero sample per node and
        file system at the first and last instants) for ``similarity import``. Only
        sensible for small runs.

    Returns
    -------
    (series, jobs)
        ``series``: ``job, node, fs, metric, segment, value`` (non-zero means);
        ``jobs``: ``job, jobid, n_segments, n_nodes, n_fs, label``.
    """
    import pandas as pd

    check_param(
        "job_count", job_count, 1 <= job_count <= MAX_JOBS, f"a number of jobs in 1..{MAX_JOBS}"
    )
    check_seed(seed)
    if samples_path is not None and Path(samples_path).suffix != ".parquet":
        raise IosightError(
            f"{samples_path}: the raw samples are written as Parquet: name a .parquet file"
        )
    prog = ensure_progress(progress)
    prog.start(job_count, "synthetic monitoring")
    per_seg = int(SEGMENT_S // INTERVAL_S)
    streams = np.random.SeedSequence(seed).spawn(job_count)
    jobs, parts, raw = [], [], []
    for i, ss in enumerate(streams):
        rng = np.random.default_rng(ss)
        cls = classes[int(rng.integers(len(classes)))]
        n_t, n_nodes, means, samples = _job_samples(cls, rng, samples_path is not None)
        key = f"synth-{i + 1:07d}"
        jobs.append((key, i + 1, -(-n_t // per_seg), n_nodes, len(FILE_SYSTEMS), cls.name))
        for (fs, mi), arr in means.items():
            node, seg = np.nonzero(arr > 0)
            parts.append((key, node, fs, mi, seg, arr[node, seg]))
        for fs, mi, nodes, idx, values in samples:
            nn = np.repeat(nodes, len(idx))
            raw.append((key, nn, fs, mi, np.tile(idx * INTERVAL_S, len(nodes)), values.ravel()))
        if samples_path is not None:
            for t_edge in (0.0, (n_t - 1) * INTERVAL_S):
                for fs in range(len(FILE_SYSTEMS)):
                    nn = np.arange(n_nodes)
                    raw.append((key, nn, fs, 0, np.full(n_nodes, t_edge), np.zeros(n_nodes)))
        if (i + 1) % 1000 == 0 or i + 1 == job_count:
            prog.advance((i % 1000) + 1 if i + 1 == job_count else 1000)
    prog.finish()
    series = _long(parts, "segment")
    if samples_path is not None:
        _long(raw, "time").to_parquet(samples_path, index=False)
    job_df = pd.DataFrame(jobs, columns=["job", "jobid", "n_segments", "n_nodes", "n_fs", "label"])
    return series, job_df


def _long(parts: list, tcol: str) -> pd.DataFrame:
    """Concatenate per-job pieces into a long frame with categorical strings."""
    import pandas as pd

    if not parts:
        return pd.DataFrame(columns=["job", "node", "fs", "metric", tcol, "value"])
    sizes = [len(p[1]) for p in parts]
    nodes = np.concatenate([p[1] for p in parts])
    keys = [p[0] for p in parts]
    uniq = list(dict.fromkeys(keys))
    at = {k: i for i, k in enumerate(uniq)}
    return pd.DataFrame(
        {
            "job": pd.Categorical.from_codes(np.repeat([at[k] for k in keys], sizes), uniq),
            "node": pd.Categorical.from_codes(
                nodes, [f"n{i}" for i in range(int(nodes.max()) + 1)] if nodes.size else []
            ),
            "fs": pd.Categorical.from_codes(
                np.repeat([p[2] for p in parts], sizes), list(FILE_SYSTEMS)
            ),
            "metric": pd.Categorical.from_codes(
                np.repeat([p[3] for p in parts], sizes), list(METRICS)
            ),
            tcol: np.concatenate([p[4] for p in parts]),
            "value": np.concatenate([p[5] for p in parts]),
        }
    )


def synth_monitoring(
    wh: Warehouse,
    job_count: int,
    *,
    seed: int = 1,
    samples_path: str | Path | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Generate jobs into the warehouse (``sim_jobs``, ``sim_series``, synthetic) with
    the site's split points in ``sim_categories``, then build their codings and
    profiles; returns counts per class."""
    from iosight.similarity import build_codings, store_categories, store_series

    series, jobs = generate_monitoring(
        job_count, seed=seed, samples_path=samples_path, progress=progress
    )
    store_series(wh, series, jobs, source="synthetic", synthetic=True)
    store_categories(wh, synth_categories(), "synthetic site config")
    build_codings(wh)
    return jobs["label"].value_counts().sort_index().to_dict()
