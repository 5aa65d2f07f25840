"""Simulators of shared I/O resources (Bandet et al., 2024, §III-B, §V-B).

Both run the model from t = 0 until the first application finishes (the window
of §V-D in which the set of running applications is constant):

* ``events`` (default): exact fair sharing. Each I/O subphase on n resources is n
  transfers of V/(p n); a resource's capacity is split equally among the transfers
  on it. Per resource a virtual clock advances at 1/k(t) (k active transfers), so
  transfers finish in the order of fixed virtual tags; one heap per resource and a
  global event heap give O(log) work per event.
* ``timestep`` (the paper's reference): unit time steps; on a resource where several
  applications collide, the least recently served one transfers for the whole step
  (they alternate, one step each). Phases change on step boundaries.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from iosight._errors import check_param
from iosight._registry import Registry
from iosight.iosched._model import Workload, alloc_bandwidth


@dataclass(frozen=True)
class SimResult:
    """What happened in [0, t_end]: I/O time L_j and volume moved per application,
    busy time per resource; ``first`` is the application that finished at t_end.

    ``t_end``: the end of the simulated window (s); ``io_time``: I/O time L_j per application;
    ``volume``: volume moved per application; ``busy``: busy time per resource.
    """

    t_end: float
    io_time: np.ndarray
    volume: np.ndarray
    busy: np.ndarray
    first: int


class Simulator(Protocol):
    def __call__(self, w: Workload, alloc: np.ndarray, place: np.ndarray) -> SimResult: ...


SIMULATORS: Registry[Simulator] = Registry("simulator")


def _per_phase(w: Workload, alloc: np.ndarray):
    b_n = w.bw[np.arange(w.k), alloc - 1]
    service = (w.v_io / w.phases) / b_n  # exclusive seconds each transfer needs
    rate = b_n / alloc  # MB per exclusive second of one transfer
    return service, rate, w.t_cpu / w.phases, w.v_io / w.phases


def _check(w: Workload, alloc: np.ndarray, place: np.ndarray) -> None:
    ok = place.shape == (w.k, w.n_resources) and np.array_equal(place.sum(axis=1), alloc)
    check_param("place", place.shape, ok, "a K x N matrix with alloc[j] resources in row j")


@SIMULATORS.register("events")
def simulate_events(w: Workload, alloc: np.ndarray, place: np.ndarray) -> SimResult:
    """Exact event-driven fair-share simulation (iosight's default).

    Resource r keeps a virtual clock ``clock[r]`` (exclusive-use seconds each of its
    transfers has received), advanced lazily to real time t as
    ``clock += (t - seen) / active``; a transfer needing s seconds of exclusive use
    that starts at virtual time c ends when the clock reaches its tag c + s. The
    hot loop is inlined (plain lists, no calls) because it runs once per event.

    ``w``: the workload; ``alloc``: resources per application; ``place``: which resources each
    application uses (k x N).
    """
    alloc = np.asarray(alloc, dtype=np.int64)
    _check(w, alloc, place)
    st = _Events(w, alloc, place)
    service, cpu_phase, vol_phase, res_of = st.service, st.cpu_phase, st.vol_phase, st.res_of
    active, clock, seen, version, tags = st.active, st.clock, st.seen, st.version, st.tags
    busy, busy_since, left, pending = st.busy, st.busy_since, st.left, st.pending
    io_start, io_time, volume, k = st.io_start, st.io_time, st.volume, w.k
    events = [(cpu_phase[j], -1 - j, 0) for j in range(k)]  # (time, -1-app | resource, version)
    heapq.heapify(events)
    push, pop = heapq.heappush, heapq.heappop
    first = -1
    while first < 0:
        t, r, ver = pop(events)
        if r < 0:  # compute subphase of app -1-r ends: its I/O starts
            j = -1 - r
            io_start[j] = t
            pending[j] = len(res_of[j])
            for r in res_of[j]:
                a = active[r]
                if a:
                    clock[r] += (t - seen[r]) / a
                else:
                    busy_since[r] = t
                seen[r] = t
                push(tags[r], (clock[r] + service[j], j))
                active[r] = a = a + 1
                version[r] += 1
                push(events, (t + (tags[r][0][0] - clock[r]) * a, r, version[r]))
            continue
        if ver != version[r]:  # stale: resource r changed since this was pushed
            continue
        c = clock[r] = clock[r] + (t - seen[r]) / active[r]
        seen[r] = t
        heap = tags[r]
        done = [pop(heap)[1]]
        eps = 1e-9 * (1.0 + c)  # clocks are >= 0
        while heap and heap[0][0] <= c + eps:
            done.append(pop(heap)[1])
        active[r] = a = active[r] - len(done)
        if a:
            version[r] += 1
            push(events, (t + (heap[0][0] - c) * a, r, version[r]))
        else:
            busy[r] += t - busy_since[r]
        for j in done:
            pending[j] -= 1
            if pending[j]:
                continue
            io_time[j] += t - io_start[j]
            volume[j] += vol_phase[j]
            left[j] -= 1
            if left[j] == 0:
                first = j
                break
            push(events, (t + cpu_phase[j], -1 - j, 0))
    return st.close(t, first)


class _Events:
    """The state of :func:`simulate_events`: plain lists per resource and per
    application, which its loop binds to locals and updates in place."""

    def __init__(self, w: Workload, alloc: np.ndarray, place: np.ndarray) -> None:
        self.alloc = alloc
        per_phase = (a.tolist() for a in _per_phase(w, alloc))
        self.service, self.rate, self.cpu_phase, self.vol_phase = per_phase
        k, n_res = w.k, w.n_resources
        cols = np.nonzero(place)[1].tolist()  # row-major: app j's resources are contiguous
        ends = np.cumsum(alloc).tolist()
        self.res_of = [cols[e - n : e] for e, n in zip(ends, alloc.tolist(), strict=True)]
        self.active, self.version = [0] * n_res, [0] * n_res
        self.clock, self.seen = [0.0] * n_res, [0.0] * n_res
        self.tags: list[list[tuple[float, int]]] = [[] for _ in range(n_res)]
        self.busy, self.busy_since = [0.0] * n_res, [0.0] * n_res
        self.left, self.pending = w.phases.tolist(), [0] * k
        self.io_start, self.io_time, self.volume = [0.0] * k, [0.0] * k, [0.0] * k

    def close(self, t: float, first: int) -> SimResult:
        """The result when the window closes at ``t``: the I/O subphases and busy
        periods still running count up to ``t``."""
        remaining = np.zeros(len(self.pending))
        for r, heap in enumerate(self.tags):
            if self.active[r]:
                c = self.clock[r] + (t - self.seen[r]) / self.active[r]
                self.busy[r] += t - self.busy_since[r]
                for tag, j in heap:
                    remaining[j] += tag - c
        in_io = np.array(self.pending) > 0
        moved = self.alloc * np.array(self.service) - remaining
        return SimResult(
            t_end=t,
            io_time=np.array(self.io_time) + np.where(in_io, t - np.array(self.io_start), 0.0),
            volume=np.array(self.volume) + np.where(in_io, moved * np.array(self.rate), 0.0),
            busy=np.array(self.busy),
            first=first,
        )


@SIMULATORS.register("timestep")
def simulate_timestep(
    w: Workload, alloc: np.ndarray, place: np.ndarray, *, dt: float = 1.0
) -> SimResult:
    """The paper's time-stepped reference (§V-B): colliding applications alternate.

    ``w``: the workload; ``alloc``: resources per application; ``place``: which resources each
    application uses (k x N); ``dt``: the time step (s).
    """
    check_param("dt", dt, dt > 0, "positive")
    alloc = np.asarray(alloc, dtype=np.int64)
    _check(w, alloc, place)
    service, rate, cpu_phase, vol_phase = _per_phase(w, alloc)
    k, n_res = w.k, w.n_resources
    tr_app, tr_res = np.nonzero(place)
    rem = np.zeros(len(tr_app))
    last = np.full(len(tr_app), -1.0)
    in_io = np.zeros(k, dtype=bool)
    cpu_left = cpu_phase.copy()
    left = w.phases.copy()
    io_start = np.zeros(k)
    io_time = np.zeros(k)
    volume = np.zeros(k)
    busy = np.zeros(n_res)
    tol = 1e-9 * dt
    t = 0.0
    while True:
        start = ~in_io & (cpu_left <= tol)
        if start.any():
            in_io |= start
            io_start[start] = t
            rem = np.where(start[tr_app], service[tr_app], rem)
        idx = np.flatnonzero(in_io[tr_app] & (rem > tol))
        if idx.size:
            order = np.lexsort((tr_app[idx], last[idx], tr_res[idx]))
            res_sorted = tr_res[idx[order]]
            first_of = np.r_[True, res_sorted[1:] != res_sorted[:-1]]
            served = idx[order[first_of]]
            rem[served] -= dt
            last[served] = t
            busy[tr_res[served]] += dt
        cpu_left = np.where(in_io, cpu_left, cpu_left - dt)
        t += dt
        open_tr = np.bincount(tr_app, weights=rem > tol, minlength=k)
        end = in_io & (open_tr == 0)
        if end.any():
            io_time[end] += t - io_start[end]
            volume[end] += vol_phase[end]
            left[end] -= 1
            in_io &= ~end
            cpu_left = np.where(end, cpu_phase, cpu_left)
            if (left == 0).any():
                first = int(np.flatnonzero(left == 0)[0])
                done = alloc * service - np.bincount(
                    tr_app, weights=np.maximum(rem, 0.0), minlength=k
                )
                io_time += np.where(in_io, t - io_start, 0.0)
                volume += np.where(in_io, done * rate, 0.0)
                return SimResult(t, io_time, volume, busy, first)


def simulate(
    w: Workload, alloc: np.ndarray, place: np.ndarray, *, simulator: str = "events"
) -> SimResult:
    """Run the simulator ``simulator`` ("events" or "timestep").

    iosight's reading of the zero-forwarder option: applications on 0 resources reach
    the file system directly, through one extra resource that they alone share fairly
    (its capacity for application j is b_j(0), measured alone, as b_j(n) is); it is
    left out of the returned busy times, which cover the N resources.

    ``w``: the workload; ``alloc``: resources per application; ``place``: which resources each
    application uses (k x N).
    """
    alloc = np.asarray(alloc, dtype=np.int64)
    zero = alloc == 0
    if not zero.any():
        return SIMULATORS.get(simulator)(w, alloc, place)
    bw = np.where(zero[:, None], np.nan, w.bw)
    bw[zero, 0] = alloc_bandwidth(w, alloc)[zero]
    ext = Workload(
        q=w.q,
        phases=w.phases,
        t_cpu=w.t_cpu,
        v_io=w.v_io,
        bw=bw,
        n_resources=w.n_resources + 1,
        q_cpu=w.q_cpu,
    )
    res = SIMULATORS.get(simulator)(ext, np.maximum(alloc, 1), np.hstack([place, zero[:, None]]))
    return SimResult(res.t_end, res.io_time, res.volume, res.busy[:-1], res.first)
