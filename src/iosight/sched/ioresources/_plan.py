"""Scheduling one set of applications described in a YAML file (the CLI's library side).

File format::

    q_cpu: 480                 # compute resources of the machine (default: sum of q)
    apps:
      - name: climate
        q: 240                 # compute resources Q_j
        phases: 10             # p_j
        t_cpu: 3000            # accumulated compute time, s
        v_io: 200000           # accumulated I/O volume, MB
        bandwidth: [100, 180, 240, 250]   # b(1), b(2), ... in MB/s; null: n not usable
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iosight._errors import IosightError, check_param
from iosight._registry import Registry
from iosight.sched.ioresources._allocators import ALLOCATORS
from iosight.sched.ioresources._metrics import evaluate, slowdowns
from iosight.sched.ioresources._model import (
    Application,
    Workload,
    io_stress,
    n_perf,
    n_sys,
    workload_io_load,
)
from iosight.sched.ioresources._placement import PLACEMENTS, schedule
from iosight.sched.ioresources._simulate import simulate


def canonical(registry: Registry, name: str) -> str:
    """The registered spelling of ``name``, case-insensitively (``greedy-nc``)."""
    names = [*registry.names(), "MCKP"]
    for n in names:
        if n.lower() == name.lower():
            return n
    raise IosightError(f"unknown {registry.family} {name!r}; choose one of: {', '.join(names)}")


def load_apps_yaml(path: Path, n_resources: int) -> Workload:
    """Read applications from YAML (format in this module's docstring)."""
    import yaml

    path = Path(path)
    if not path.exists():
        raise IosightError(f"application file {path} does not exist")
    doc = yaml.safe_load(path.read_text()) or {}
    apps_doc = doc.get("apps") if isinstance(doc, dict) else None
    if not apps_doc:
        raise IosightError(f"{path}: needs a non-empty 'apps' list")
    apps = []
    for i, a in enumerate(apps_doc):
        missing = {"q", "phases", "t_cpu", "v_io", "bandwidth"} - set(a)
        if missing:
            raise IosightError(f"{path}: app {i} lacks {sorted(missing)}")
        apps.append(
            Application(
                q=int(a["q"]),
                phases=int(a["phases"]),
                t_cpu=float(a["t_cpu"]),
                v_io=float(a["v_io"]),
                bw=np.array([np.nan if b is None else b for b in a["bandwidth"]], dtype=float),
                name=str(a.get("name", f"app{i}")),
            )
        )
    q_cpu = int(doc.get("q_cpu", sum(a.q for a in apps)))
    return Workload.from_apps(apps, n_resources=n_resources, q_cpu=q_cpu)


def plan(
    w: Workload, allocator: str, placement: str, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Allocate and place: (allocation, placement matrix, per-app columns, label)."""
    allocator = canonical(ALLOCATORS, allocator)
    placement = "MCKP" if allocator == "MCKP" else canonical(PLACEMENTS, placement)
    alloc, pl = schedule(allocator, placement, w, np.random.default_rng(seed))
    rows = np.arange(w.k)
    stress = io_stress(w.t_cpu, w.v_io, w.bw)
    table = {
        "app": list(w.names),
        "q": w.q,
        "n": alloc,
        "resources": [" ".join(map(str, np.flatnonzero(r))) for r in pl],
        "n_perf": n_perf(w.bw, w.n_resources),
        "n_sys": n_sys(w.t_cpu, w.v_io, w.bw, w.n_resources),
        "io_stress": stress[rows, alloc - 1],
    }
    label = allocator if allocator == "MCKP" else f"{allocator} + {placement}"
    return alloc, pl, table, label


def allocate_apps(path: Path, n_resources: int, allocator: str, placement: str, seed: int = 0):
    """Schedule the applications of a YAML file: (per-app DataFrame, I/O-load); the
    frame's ``attrs["schedule"]`` names the heuristics used."""
    import pandas as pd

    check_param("resources", n_resources, n_resources >= 1, "a positive integer")
    w = load_apps_yaml(path, n_resources)
    alloc, _, table, label = plan(w, allocator, placement, seed=seed)
    df = pd.DataFrame(table)
    df.attrs["schedule"] = label
    return df, workload_io_load(w, alloc)


def simulate_apps(
    path: Path,
    n_resources: int,
    allocator: str,
    placement: str,
    *,
    simulator: str = "events",
    seed: int = 0,
):
    """Schedule then simulate a YAML file: (per-app DataFrame, metrics dict)."""
    import pandas as pd

    check_param("resources", n_resources, n_resources >= 1, "a positive integer")
    w = load_apps_yaml(path, n_resources)
    alloc, pl, table, label = plan(w, allocator, placement, seed=seed)
    sim = simulate(w, alloc, pl, simulator=simulator)
    s = slowdowns(w, alloc, sim)
    table |= {"io_time_s": sim.io_time, "rho": s["rho"], "rho_io": s["rho_io"]}
    metrics = {"io_load": workload_io_load(w, alloc)} | evaluate(w, alloc, sim)
    df = pd.DataFrame(table)
    df.attrs["schedule"] = label
    return df, metrics
