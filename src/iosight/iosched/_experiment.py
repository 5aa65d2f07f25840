"""The simulation study of Bandet et al. (2024), §V-C/D and §VI: seeded, parallel, resumable.

One task is one (target load Theta, application set); its results (every
allocator x placement pair, MCKP, and the robustness runs of §VI-B) go to one
Parquet file under the output folder, and a task whose file exists is skipped.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from iosight._errors import IosightError, check_param, is_integer
from iosight._progress import Progress, ensure_progress
from iosight.iosched._allocators import ALLOCATORS
from iosight.iosched._curves import (
    FAMILY_CURVES,
    GRIDS,
    STATISTICS,
    CurveSet,
    load_curves_csv,
    load_forge,
    ost_curves,
    profile_estimates,
)
from iosight.iosched._metrics import evaluate
from iosight.iosched._model import n_sys, workload_io_load
from iosight.iosched._placement import PLACEMENTS, schedule
from iosight.iosched._simulate import SIMULATORS, simulate
from iosight.iosched._workload import check_load, generate_workload

FORGE_DIR = "datasets/bez_forge_io_forwarding_bandwidth"
#: Heuristic pairs of the robustness study (Bandet et al., 2024, Fig. 12).
ROBUST_PAIRS = (("TCPU", "Greedy-NC"), ("BestBdw", "Greedy-NC"), ("BestBdw", "Greedy-C"))


def default_forge_dir() -> Path:
    """Where the FORGE data is looked for when no folder is given: under
    ``$IOSIGHT_SHARED`` when set, else the data directory (``iosight data fetch
    forge-bandwidth``), else the first of ``./shared``, ``../shared`` and the
    ``shared`` folder beside an iosight source checkout that holds it."""
    if "IOSIGHT_SHARED" in os.environ:
        return Path(os.environ["IOSIGHT_SHARED"]) / FORGE_DIR
    from iosight.data import data_dir, dataset

    fetched = data_dir() / dataset("forge-bandwidth").folder  # `iosight data fetch`
    if fetched.is_dir():
        return fetched
    checkout = Path(__file__).resolve().parents[4]  # above src/iosight/iosched/x.py
    candidates = [Path("shared"), Path("../shared"), checkout / "shared"]
    found = [c / FORGE_DIR for c in candidates if (c / FORGE_DIR).is_dir()]
    return found[0] if found else Path("../shared") / FORGE_DIR


def resolve_curves(
    dataset: str,
    *,
    forge_dir: Path | None = None,
    statistic: str = "mean",
    grid: str = "interpolated",
) -> CurveSet:
    """Curves by name: ``io-nodes`` (FORGE data), ``ost`` (parametric), or a CSV path.

    ``dataset``: ``io-nodes``, ``ost`` or a CSV path; ``forge_dir``: where the FORGE data is
    (default: looked up); ``statistic``: the FORGE repetitions' statistic (``mean`` or
    ``median``); ``grid``: ``interpolated`` or ``measured`` resource counts.
    """
    if dataset == "io-nodes":
        return load_forge(forge_dir or default_forge_dir(), statistic=statistic, grid=grid)
    if dataset == "ost":
        return ost_curves()
    if dataset.endswith(".csv"):
        return load_curves_csv(Path(dataset))
    raise IosightError(f"unknown dataset {dataset!r}; use io-nodes, ost or a .csv of curves")


#: Loads are kept to 3 decimals (task seeds and file names are keyed by 1000 Theta).
LOAD_DECIMALS = 3
#: Most load levels one study may list (each runs ``sets`` tasks).
MAX_LOADS = 10_000


def parse_loads(spec: str) -> tuple[float, ...]:
    """Target loads from ``"a:b:step"`` (both ends included) or ``"a,b,c"``.

    Every number must be finite, loads positive, a range's step at least 0.001 (loads are
    kept to 3 decimals) and its end not below its start; a list may not repeat a load.

    ``spec``: the loads as text.
    """
    try:
        parts = [float(x) for x in spec.split(":" if ":" in spec else ",")]
    except ValueError:
        raise IosightError(f"loads must be a:b:step or a,b,c. Got {spec!r} instead.") from None
    if not all(math.isfinite(x) for x in parts):
        raise IosightError(f"loads must be finite numbers. Got {spec!r} instead.")
    if ":" in spec:
        if len(parts) != 3:
            raise IosightError(f"a load range is a:b:step. Got {spec!r} instead.")
        a, b, step = parts
        if step < 10**-LOAD_DECIMALS:
            raise IosightError(
                f"the step of a load range must be at least 0.001. Got {spec!r} instead."
            )
        if b < a:
            raise IosightError(f"the load range {spec!r} is empty: its end is below its start")
        count = math.floor((b - a) / step + 1e-9) + 1  # b included despite rounding
        if count > MAX_LOADS:
            raise IosightError(f"{spec!r} makes {count} loads; at most {MAX_LOADS} are allowed")
        vals = np.round(a + step * np.arange(count), LOAD_DECIMALS)
    else:
        vals = np.round(np.array(parts), LOAD_DECIMALS)
        if len(np.unique(vals)) != len(vals):
            raise IosightError(f"loads (to 3 decimals) must not repeat. Got {spec!r} instead.")
    if np.any(vals <= 0):
        raise IosightError(f"loads must be positive (to 3 decimals). Got {spec!r} instead.")
    return tuple(float(v) for v in vals)


def pairs(mckp_zero: bool = False) -> list[tuple[str, str]]:
    """Every allocator x placement pair, then the MCKP baseline (and its zero-forwarder
    reading "MCKP-0" when ``mckp_zero``)."""
    out = [(a, p) for a in ALLOCATORS.names() for p in PLACEMENTS.names()]
    return [*out, ("MCKP", "MCKP"), *([("MCKP-0", "MCKP-0")] if mckp_zero else [])]


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    """Settings of one study; ``asdict`` of it is stored beside the results.

    ``dataset``: the curves (:func:`resolve_curves`: ``io-nodes``, ``ost`` or a CSV path);
    ``loads``: the target I/O-loads theta; ``sets``: application sets per load; ``seed``: the
    random seed of the study; ``k``: applications per set; ``n_resources``: the platform's I/O
    resources N; ``q_cpu``: its compute resources Q_cpu; ``statistic``: the FORGE repetitions'
    statistic (``mean`` or ``median``); ``grid``: ``interpolated`` or ``measured`` resource
    counts; ``simulator``: ``events`` or ``timestep``; ``robustness``: also run the robustness
    study (heuristics given family curves); ``forge_dir``: where the FORGE data is (default:
    looked up).
    """

    dataset: str = "io-nodes"
    loads: tuple[float, ...] = tuple(np.round(np.arange(0.1, 1.51, 0.1), 3))
    sets: int = 100
    seed: int = 1
    k: int = 40
    n_resources: int = 20
    q_cpu: int = 480
    statistic: str = "mean"
    grid: str = "interpolated"
    simulator: str = "events"
    robustness: bool = True
    family_curves: str = "median"  # robustness study: "median" or "cubic" (Fig. 11)
    # also run MCKP with Bez et al.'s zero-forwarder option ("MCKP-0"), where the
    # curves have b(0) (the FORGE data); the other rows do not change
    mckp_zero: bool = True
    forge_dir: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """Check every setting, so that a run that starts does not stop on one."""
        for name in ("sets", "k", "n_resources", "q_cpu"):
            value = getattr(self, name)
            check_param(name, value, is_integer(value) and value >= 1, "a positive integer")
        check_param("seed", self.seed, is_integer(self.seed) and self.seed >= 0, "an integer >= 0")
        check_param("loads", self.loads, len(self.loads) > 0, "at least one load")
        for theta in self.loads:
            check_load("loads", theta, self.k, self.n_resources)
        check_param(
            "statistic", self.statistic, self.statistic in STATISTICS, " or ".join(STATISTICS)
        )
        check_param("grid", self.grid, self.grid in GRIDS, " or ".join(GRIDS))
        SIMULATORS.get(self.simulator)  # an unknown name is an error naming the known ones
        check_param(
            "family_curves",
            self.family_curves,
            self.family_curves in FAMILY_CURVES,
            "median or cubic",
        )

    def fingerprint(self) -> dict:
        """The settings a resumed run must share with the stored one (loads and sets may grow)."""
        d = asdict(self)
        for key in ("loads", "sets", "forge_dir"):  # may grow between resumed runs
            d.pop(key)
        return d


def task_seed(seed: int, theta: float, set_id: int) -> np.random.SeedSequence:
    """Seed of one task: ``SeedSequence(seed).spawn`` keyed by (1000 Theta, set), so a
    set does not depend on which other loads or sets are run."""
    return np.random.SeedSequence(seed, spawn_key=(int(round(theta * 1000)), set_id))


def run_task(cfg: ExperimentConfig, curves: CurveSet, theta: float, set_id: int) -> list[dict]:
    """Generate one application set and evaluate every heuristic pair on it."""
    combos = pairs(cfg.mckp_zero and curves.bw0 is not None)
    robust = ROBUST_PAIRS if cfg.robustness else ()
    gen, *streams = task_seed(cfg.seed, theta, set_id).spawn(1 + len(combos) + len(robust))
    w, idx = generate_workload(
        curves,
        theta=theta,
        k=cfg.k,
        n_resources=cfg.n_resources,
        q_cpu=cfg.q_cpu,
        rng=np.random.default_rng(gen),
    )
    load_sys = workload_io_load(w, n_sys(w.t_cpu, w.v_io, w.bw, w.n_resources))
    base = {
        "dataset": cfg.dataset,
        "theta": theta,
        "set": set_id,
        "io_load_sys": load_sys,
        "io_load_1": workload_io_load(w, np.ones(w.k, dtype=np.int64)),
    }
    estimate = profile_estimates(curves.bw, curves.profiles, method=cfg.family_curves)
    known = estimate[idx] if robust else None
    jobs = [(a, p, "accurate", None) for a, p in combos]
    jobs += [(a, p, "robust", known) for a, p in robust]
    rows = []
    for (alloc_name, place_name, study, bw_known), ss in zip(jobs, streams, strict=True):
        alloc, placement = schedule(
            alloc_name, place_name, w, np.random.default_rng(ss), known_bw=bw_known
        )
        sim = simulate(w, alloc, placement, simulator=cfg.simulator)
        rows.append(
            base
            | {"study": study, "allocator": alloc_name, "placement": place_name}
            | {"io_load_alloc": workload_io_load(w, alloc)}
            | evaluate(w, alloc, sim)
        )
    return rows


def _work(cfg: ExperimentConfig, curves: CurveSet, task: tuple[float, int, str]) -> str:
    """Run one task (target load, set, result file) and write its rows atomically."""
    import pandas as pd

    theta, set_id, path = task
    rows = run_task(cfg, curves, theta, set_id)
    tmp = f"{path}.tmp"
    pd.DataFrame(rows).to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return path


def task_path(out: Path, theta: float, set_id: int) -> Path:
    return out / f"theta{theta:.3f}_set{set_id:04d}.parquet"


def run_experiment(
    cfg: ExperimentConfig,
    out: Path,
    *,
    workers: int = 0,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Run (or resume) a study into ``out``; returns counts of tasks run and skipped.

    Tasks run on ``workers`` local processes (0: one per core) or on the Dask cluster
    at ``scheduler`` (:func:`iosight.parallel.map_items`; ``out`` must then be on a
    file system its workers share), each writing its own file; a task's random
    streams come from its (load, set), so the results do not depend on where it ran.

    ``cfg``: the study's settings; ``progress``: told of each task (default: silent).
    """
    from functools import partial

    from iosight.parallel import check_workers, map_items

    check_workers(workers)
    out = Path(out)
    # everything that can fail on the settings fails before the folder is claimed: a
    # config.json written for a run that cannot start would refuse the corrected one
    curves = resolve_curves(
        cfg.dataset,
        forge_dir=Path(cfg.forge_dir) if cfg.forge_dir else None,
        statistic=cfg.statistic,
        grid=cfg.grid,
    )
    meta = out / "config.json"
    if meta.exists():
        old = json.loads(meta.read_text())
        # keys added after a folder was written take the value that folder was run with
        before = {"family_curves": "cubic", "mckp_zero": False}
        old = ExperimentConfig().fingerprint() | before | old
        if old != cfg.fingerprint():
            raise IosightError(f"{out} holds results of another configuration: {old}")
    else:
        out.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps(cfg.fingerprint(), indent=1))
    todo = [
        (theta, s, str(task_path(out, theta, s)))
        for theta in cfg.loads
        for s in range(cfg.sets)
        if not task_path(out, theta, s).exists()
    ]
    bar = ensure_progress(progress)
    bar.start(len(todo), f"iosched {cfg.dataset}")
    map_items(partial(_work, cfg, curves), todo, workers=workers, scheduler=scheduler,
              on_done=lambda *_: bar.advance(1))  # fmt: skip
    bar.finish()
    n_all = len(cfg.loads) * cfg.sets
    return {"run": len(todo), "skipped": n_all - len(todo)}


def load_results(out: Path):
    """All task results under ``out`` as one DataFrame, with the study's K and N and a
    ``case`` label ("io-nodes, K=40, N=20") taken from its ``config.json``."""
    import pandas as pd

    files = sorted(Path(out).glob("theta*_set*.parquet"))
    if not files:
        raise IosightError(f"no results in {out}; run 'iosight iosched experiment' first")
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    meta = json.loads((Path(out) / "config.json").read_text())
    df["k"], df["n_resources"] = meta["k"], meta["n_resources"]
    grid = meta.get("grid", "interpolated")
    df["case"] = f"{meta['dataset']}, K={meta['k']}, N={meta['n_resources']}" + (
        f", {grid} n" if grid != "interpolated" else ""
    )
    return df
