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
from iosight._shipped import read_path_or_shipped
from iosight.iosched._allocators import ALLOCATORS
from iosight.iosched._metrics import evaluate, slowdowns
from iosight.iosched._model import (
    Application,
    Workload,
    io_stress,
    n_perf,
    n_sys,
    workload_io_load,
)
from iosight.iosched._placement import PLACEMENTS, schedule
from iosight.iosched._simulate import simulate

_PACKAGE = "iosight.iosched"  # ships examples/example-apps.yaml


def canonical(registry: Registry, name: str) -> str:
    """The registered spelling of ``name``, case-insensitively (``greedy-nc``)."""
    names = [*registry.names(), "MCKP"]
    for n in names:
        if n.lower() == name.lower():
            return n
    raise IosightError(f"unknown {registry.family} {name!r}; choose one of: {', '.join(names)}")


def load_apps_yaml(path: str | Path, n_resources: int) -> Workload:
    """Read applications from YAML (format in this module's docstring), a file or a
    shipped example by name (``example-apps``); every problem is one
    :class:`IosightError` naming the file, the application and the field."""
    import yaml

    text, source = read_path_or_shipped(path, _PACKAGE, "examples", ".yaml", "application")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise IosightError(f"{source}: invalid YAML: {_yaml_problem(err)}") from None
    apps_doc = doc.get("apps") if isinstance(doc, dict) else None
    if not isinstance(apps_doc, list) or not apps_doc:
        raise IosightError(f"{source}: needs a non-empty 'apps' list")
    apps = [_read_app(source, i, a) for i, a in enumerate(apps_doc)]
    q_cpu = _yaml_number(doc.get("q_cpu", sum(a.q for a in apps)))
    try:
        return Workload.from_apps(apps, n_resources=n_resources, q_cpu=q_cpu)
    except IosightError as err:
        raise IosightError(f"{source}: {err}") from None


def _yaml_problem(err: Exception) -> str:
    """A YAML parser error on one line: the problem and where it is."""
    problem = getattr(err, "problem", None) or " ".join(str(err).split())
    mark = getattr(err, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def _yaml_number(value: object) -> object:
    """A YAML scalar as the number it spells: PyYAML leaves ``2e5`` (no dot) a string,
    and ``4.0`` counts as the integer 4. Anything else is returned as is, for
    :class:`Application` to refuse."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _read_app(source: str, i: int, entry: object) -> Application:
    """Application ``i`` of the file, or the error naming it and its field."""
    fields = ("q", "phases", "t_cpu", "v_io", "bandwidth")
    if not isinstance(entry, dict):
        raise IosightError(
            f"{source}: app {i} must be a mapping with {', '.join(fields)}. Got {entry!r} instead."
        )
    label = f"app {i} ({entry['name']})" if "name" in entry else f"app {i}"
    missing = set(fields) - set(entry)
    if missing:
        raise IosightError(f"{source}: {label} lacks {sorted(missing)}")
    bandwidth = entry["bandwidth"]
    try:
        check_param(
            "bandwidth",
            bandwidth,
            isinstance(bandwidth, list),
            "a list b(1), b(2), ... in MB/s (null: n not usable)",
        )
        return Application(
            q=_yaml_number(entry["q"]),
            phases=_yaml_number(entry["phases"]),
            t_cpu=_yaml_number(entry["t_cpu"]),
            v_io=_yaml_number(entry["v_io"]),
            bw=[np.nan if b is None else _yaml_number(b) for b in bandwidth],
            name=str(entry.get("name", f"app{i}")),
        )
    except IosightError as err:
        raise IosightError(f"{source}: {label}: {err}") from None


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


def allocate_apps(
    path: str | Path, n_resources: int, allocator: str, placement: str, seed: int = 0
):
    """Schedule the applications of a YAML file or shipped example (:func:`load_apps_yaml`):
    (per-app DataFrame, I/O-load); the frame's ``attrs["schedule"]`` names the heuristics
    used.

    ``path``: the applications' YAML file, or a shipped example's name; ``n_resources``: the
    platform's I/O resources N; ``allocator``: the allocation heuristic; ``placement``: the
    placement heuristic; ``seed``: the random seed.
    """
    import pandas as pd

    check_param("resources", n_resources, n_resources >= 1, "a positive integer")
    w = load_apps_yaml(path, n_resources)
    alloc, _, table, label = plan(w, allocator, placement, seed=seed)
    df = pd.DataFrame(table)
    df.attrs["schedule"] = label
    return df, workload_io_load(w, alloc)


def simulate_apps(
    path: str | Path,
    n_resources: int,
    allocator: str,
    placement: str,
    *,
    simulator: str = "events",
    seed: int = 0,
):
    """Schedule then simulate a YAML file: (per-app DataFrame, metrics dict).

    ``path``: the applications' YAML file, or a shipped example's name; ``n_resources``: the
    platform's I/O resources N; ``allocator``: the allocation heuristic; ``placement``: the
    placement heuristic; ``simulator``: ``events`` or ``timestep``; ``seed``: the random seed.
    """
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
