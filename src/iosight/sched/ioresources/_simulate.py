"""Simulators of shared I/O resources (004 §III-B, §V-B).

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
from iosight.sched.ioresources._model import Workload


@dataclass(frozen=True)
class SimResult:
    """What happened in [0, t_end]: I/O time L_j and volume moved per application,
    busy time per resource; ``first`` is the application that finished at t_end."""

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
    """Exact event-driven fair-share simulation (iosight's default)."""
    alloc = np.asarray(alloc, dtype=np.int64)
    _check(w, alloc, place)
    service, rate, cpu_phase, vol_phase = (a.tolist() for a in _per_phase(w, alloc))
    k, n_res = w.k, w.n_resources
    res_of = [np.flatnonzero(row).tolist() for row in place]
    active = [0] * n_res
    clock = [0.0] * n_res  # virtual time of each resource
    seen = [0.0] * n_res  # real time the clock was last advanced
    version = [0] * n_res
    tags: list[list[tuple[float, int]]] = [[] for _ in range(n_res)]
    busy = [0.0] * n_res
    busy_since = [0.0] * n_res
    left = w.phases.tolist()
    pending = [0] * k
    io_start = [0.0] * k
    io_time = [0.0] * k
    volume = [0.0] * k
    events = [(cpu_phase[j], 0, j, 0) for j in range(k)]
    heapq.heapify(events)
    push, pop = heapq.heappush, heapq.heappop

    def advance(r: int, t: float) -> None:
        if active[r]:
            clock[r] += (t - seen[r]) / active[r]
        seen[r] = t

    def reschedule(r: int, t: float) -> None:
        version[r] += 1
        push(events, (t + (tags[r][0][0] - clock[r]) * active[r], 1, r, version[r]))

    while True:
        t, kind, ident, ver = pop(events)
        if kind == 0:  # compute subphase of app `ident` ends: its I/O starts
            j = ident
            io_start[j] = t
            pending[j] = len(res_of[j])
            for r in res_of[j]:
                advance(r, t)
                push(tags[r], (clock[r] + service[j], j))
                if not active[r]:
                    busy_since[r] = t
                active[r] += 1
                reschedule(r, t)
            continue
        r = ident
        if ver != version[r]:
            continue
        advance(r, t)
        done = [pop(tags[r])[1]]
        eps = 1e-9 * (1.0 + abs(clock[r]))
        while tags[r] and tags[r][0][0] <= clock[r] + eps:
            done.append(pop(tags[r])[1])
        active[r] -= len(done)
        if active[r]:
            reschedule(r, t)
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
                return _close_events(t, j, locals())
            push(events, (t + cpu_phase[j], 0, j, 0))


def _close_events(t_end: float, first: int, st: dict) -> SimResult:
    """Add the partial I/O subphases and busy periods running at t_end."""
    remaining = np.zeros(len(st["pending"]))
    busy = np.array(st["busy"])
    for r, heap in enumerate(st["tags"]):
        st["advance"](r, t_end)
        for tag, j in heap:
            remaining[j] += tag - st["clock"][r]
        if st["active"][r]:
            busy[r] += t_end - st["busy_since"][r]
    pending = np.array(st["pending"]) > 0
    io_time = np.array(st["io_time"]) + np.where(pending, t_end - np.array(st["io_start"]), 0.0)
    n = np.array([len(x) for x in st["res_of"]])
    done = n * np.array(st["service"]) - remaining
    volume = np.array(st["volume"]) + np.where(pending, done * np.array(st["rate"]), 0.0)
    return SimResult(t_end, io_time, volume, busy, first)


@SIMULATORS.register("timestep")
def simulate_timestep(
    w: Workload, alloc: np.ndarray, place: np.ndarray, *, dt: float = 1.0
) -> SimResult:
    """The paper's time-stepped reference (§V-B): colliding applications alternate."""
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
    """Run the simulator ``simulator`` ("events" or "timestep")."""
    return SIMULATORS.get(simulator)(w, np.asarray(alloc, dtype=np.int64), place)
