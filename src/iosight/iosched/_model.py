"""Platform and application model of Bandet, Boito, Pallez (2024), §III.

A :class:`Workload` holds K applications as arrays (one row per application) so that
the characteristic values of every application are computed at once.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from iosight._errors import IosightError, check_param, is_integer


def _is_count(value: object) -> bool:
    """An integer >= 1 that fits the model's int64 arrays (bool is no count)."""
    return is_integer(value) and 1 <= int(value) < 2**63


def _is_real(value: object, low: float, *, strict: bool = False) -> bool:
    """A finite real number >= ``low`` (> ``low`` when ``strict``; bool is no number)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return False
    return math.isfinite(value) and (value > low if strict else value >= low)


@dataclass(frozen=True)
class Application:
    """One application of Table I of Bandet et al. (2024).

    Parameters
    ----------
    q : int
        Compute resources Q_j.
    phases : int
        Number of phases p_j (compute subphase, then I/O subphase).
    t_cpu : float
        Accumulated compute time T_cpu (s), split equally over the phases.
    v_io : float
        Accumulated I/O volume V_io (MB), split equally over the phases.
    bw : array of float
        Bandwidth b(n) in MB/s for n = 1, 2, ..., len(bw) I/O resources; NaN marks an
        n that may not be allocated (not measured); b(1) is required.
    name : str
        The application's name.
    profile : str
        Its profile family (Ascent, Descent, Peak, Neutral), when known.
    """

    q: int
    phases: int
    t_cpu: float
    v_io: float
    bw: np.ndarray
    name: str = ""
    profile: str = ""

    def __post_init__(self) -> None:
        for name in ("q", "phases"):
            value = getattr(self, name)
            check_param(name, value, _is_count(value), "a positive integer")
        check_param("t_cpu", self.t_cpu, _is_real(self.t_cpu, 0), "a finite number >= 0")
        check_param("v_io", self.v_io, _is_real(self.v_io, 0, strict=True), "a finite number > 0")
        try:
            bw = np.asarray(self.bw, dtype=float)
        except (TypeError, ValueError):
            bw = np.full(0, np.nan)  # not numbers: refused below, shown as given
        known = ~np.isnan(bw)
        ok = bw.ndim == 1 and bw.size >= 1 and bool(known[0])
        ok = ok and bool(np.all(np.isfinite(bw[known]) & (bw[known] > 0)))
        shown = bw.tolist() if bw.size else self.bw
        check_param("bw", shown, ok, "finite positive bandwidths b(1), b(2), ... (NaN: not usable)")
        object.__setattr__(self, "bw", bw)


@dataclass(frozen=True)
class Workload:
    """K applications on a platform of N I/O resources and Q_cpu compute resources.

    ``bw`` is a K x M matrix, ``bw[j, n - 1] = b_j(n)``; entries past an application's
    curve, or at unmeasured n of a measured-only grid, are NaN. Application j may use
    n resources when ``allowed[j, n - 1]`` (b_j(n) known and n <= N).

    ``q``: compute resources Q_j per application; ``phases``: phases p_j per application;
    ``t_cpu``: accumulated compute time per application (s); ``v_io``: accumulated I/O volume
    per application (MB); ``n_resources``: the platform's I/O resources N; ``q_cpu``: its
    compute resources Q_cpu; ``profile``: the applications' profile families, when known;
    ``names``: the applications' names; ``bw0``: b_j(0) per application (direct file-system
    access), when known.
    """

    q: np.ndarray
    phases: np.ndarray
    t_cpu: np.ndarray
    v_io: np.ndarray
    bw: np.ndarray
    n_resources: int
    q_cpu: int
    profile: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    bw0: np.ndarray | None = None
    allowed: np.ndarray = field(init=False)
    n_max: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        check_param("n_resources", self.n_resources, self.n_resources >= 1, "a positive integer")
        k = len(self.q)
        if not (len(self.phases) == len(self.t_cpu) == len(self.v_io) == self.bw.shape[0] == k):
            raise IosightError("workload arrays must all have one entry per application")
        if k == 0:
            raise IosightError("a workload needs at least one application")
        allowed = np.isfinite(self.bw[:, : self.n_resources])
        if not allowed[:, 0].all():
            raise IosightError("every application needs b(1)")
        n_max = allowed.shape[1] - np.argmax(allowed[:, ::-1], axis=1)
        object.__setattr__(self, "allowed", allowed)
        object.__setattr__(self, "n_max", n_max.astype(np.int64))
        check_param("q_cpu", self.q_cpu, _is_count(self.q_cpu), "a positive integer")
        if self.bw0 is not None:
            bw0 = np.asarray(self.bw0, dtype=float)
            ok = bw0.shape == (k,) and bool(np.all(bw0 > 0))
            check_param("bw0", bw0.shape, ok, "one positive b(0) per application")
            object.__setattr__(self, "bw0", bw0)

    @property
    def k(self) -> int:
        """The number of applications."""
        return len(self.q)

    @classmethod
    def from_apps(cls, apps: list[Application], n_resources: int, q_cpu: int) -> Workload:
        """Stack applications into arrays (curves NaN-padded to the longest).

        ``apps``: the applications; ``n_resources``: the platform's I/O resources N; ``q_cpu``:
        its compute resources Q_cpu.
        """
        if not apps:
            raise IosightError("a workload needs at least one application")
        m = max(a.bw.size for a in apps)
        bw = np.full((len(apps), m), np.nan)
        for j, a in enumerate(apps):
            bw[j, : a.bw.size] = a.bw
        return cls(
            q=np.array([a.q for a in apps], dtype=np.int64),
            phases=np.array([a.phases for a in apps], dtype=np.int64),
            t_cpu=np.array([a.t_cpu for a in apps], dtype=float),
            v_io=np.array([a.v_io for a in apps], dtype=float),
            bw=bw,
            n_resources=n_resources,
            q_cpu=q_cpu,
            profile=tuple(a.profile for a in apps),
            names=tuple(a.name or f"app{j}" for j, a in enumerate(apps)),
        )


def alloc_bandwidth(w: Workload, alloc: np.ndarray) -> np.ndarray:
    """b_j(n_j) of an allocation; n_j = 0 (direct file-system access) reads b_j(0)."""
    alloc = np.asarray(alloc, dtype=np.int64)
    b = w.bw[np.arange(w.k), np.maximum(alloc, 1) - 1]
    if (alloc == 0).any():
        if w.bw0 is None:
            raise IosightError("an application got 0 I/O resources but b(0) is unknown")
        b = np.where(alloc == 0, w.bw0, b)
    return b


def _usable(bw: np.ndarray, n_resources: int) -> np.ndarray:
    """``bw`` cut to at most ``n_resources`` columns, NaN where n is not allowed."""
    return np.atleast_2d(np.asarray(bw, dtype=float))[:, :n_resources]


def io_time(v_io: np.ndarray, bw: np.ndarray) -> np.ndarray:
    """Congestion-free I/O time T_cf_io(n) = V_io / b(n) for every n (K x M), §III-B.

    ``v_io``: I/O volume per application (MB); ``bw``: the applications' curves (K x M, MB/s).
    """
    return np.asarray(v_io, dtype=float)[:, None] / np.atleast_2d(bw)


def io_stress(t_cpu: np.ndarray, v_io: np.ndarray, bw: np.ndarray) -> np.ndarray:
    """I/O-Stress(j, n) = n T_io(n) / (T_cpu + T_io(n)) for n = 1..M (K x M), §III-B.

    ``t_cpu``: compute time per application (s); ``v_io``: I/O volume per application (MB);
    ``bw``: the applications' curves (K x M, MB/s).
    """
    t_io = io_time(v_io, bw)
    n = np.arange(1, t_io.shape[1] + 1)
    return n * t_io / (np.asarray(t_cpu, dtype=float)[:, None] + t_io)


def cpu_load(q: np.ndarray, t_cpu: np.ndarray, v_io: np.ndarray, bw: np.ndarray) -> np.ndarray:
    """CPUload(j, n) = Q_j T_cpu / (T_cpu + T_io(n)) (K x M), §IV-A.

    ``q``: compute resources per application; ``t_cpu``: compute time per application (s);
    ``v_io``: I/O volume per application (MB); ``bw``: the applications' curves (K x M, MB/s).
    """
    t_io = io_time(v_io, bw)
    t_cpu = np.asarray(t_cpu, dtype=float)[:, None]
    return np.asarray(q, dtype=float)[:, None] * t_cpu / (t_cpu + t_io)


def n_perf(bw: np.ndarray, n_resources: int) -> np.ndarray:
    """n_perf = argmax_n b(n), Eq. (1); ties go to the smallest n (iosight's reading).

    ``bw``: the applications' curves (K x M, MB/s); ``n_resources``: the platform's I/O
    resources N.
    """
    b = _usable(bw, n_resources)
    return np.nanargmax(b, axis=1) + 1


def n_sys(t_cpu: np.ndarray, v_io: np.ndarray, bw: np.ndarray, n_resources: int) -> np.ndarray:
    """n_sys = argmin_n I/O-Stress(j, n), Eq. (2); ties go to the smallest n.

    ``t_cpu``: compute time per application (s); ``v_io``: I/O volume per application (MB);
    ``bw``: the applications' curves (K x M, MB/s); ``n_resources``: the platform's I/O
    resources N.
    """
    s = io_stress(t_cpu, v_io, _usable(bw, n_resources))
    return np.nanargmin(s, axis=1) + 1


def io_load(
    t_cpu: np.ndarray, v_io: np.ndarray, bw: np.ndarray, alloc: np.ndarray, n_resources: int
) -> float:
    """I/O-load(pi) = (1/N) sum_j I/O-Stress(j, pi_j), Eq. (3).

    ``t_cpu``: compute time per application (s); ``v_io``: I/O volume per application (MB);
    ``bw``: the applications' curves (K x M, MB/s); ``alloc``: resources per application;
    ``n_resources``: the platform's I/O resources N.
    """
    alloc = np.asarray(alloc, dtype=np.int64)
    b = np.atleast_2d(bw)[np.arange(len(alloc)), alloc - 1]
    return _load_at(t_cpu, v_io, b, alloc, n_resources)


def workload_io_load(w: Workload, alloc: np.ndarray) -> float:
    """:func:`io_load` of an allocation of a :class:`Workload`; an application on 0
    resources (direct file-system access) puts no stress on the N resources.

    ``w``: the workload; ``alloc``: resources per application.
    """
    alloc = np.asarray(alloc, dtype=np.int64)
    return _load_at(w.t_cpu, w.v_io, alloc_bandwidth(w, alloc), alloc, w.n_resources)


def _load_at(t_cpu, v_io, b: np.ndarray, alloc: np.ndarray, n_resources: int) -> float:
    """Eq. (3) given each application's bandwidth ``b`` at its allocation ``alloc``."""
    t_io = np.asarray(v_io, dtype=float) / b
    return float(np.sum(alloc * t_io / (np.asarray(t_cpu, dtype=float) + t_io)) / n_resources)
