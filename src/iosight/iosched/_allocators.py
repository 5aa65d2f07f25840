"""Allocation heuristics (Bandet et al., 2024, §IV-A): how many I/O resources each
application gets.

Every allocator declares the application inputs it may read (Bandet et al., 2024, Table II);
:func:`allocate` hands it exactly those and nothing else.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from iosight._registry import Registry
from iosight.iosched._model import Workload, cpu_load, io_stress, n_perf, n_sys

#: Inputs an application can expose (columns of Table II); "argmax_b" is n_perf.
INPUTS = ("q", "v_io", "t_cpu", "argmax_b", "b")


class Allocator:
    """Contract: ``allocate(inputs, n_resources, q_cpu, allowed, rng) -> allocation``.

    ``inputs`` holds only the keys of ``inputs_needed``; ``allowed`` (K x M bool: which
    numbers of resources each application can use) and ``n_resources``, ``q_cpu``
    are platform facts every heuristic knows.
    """

    inputs_needed: ClassVar[tuple[str, ...]] = ()

    def allocate(
        self,
        inputs: dict[str, np.ndarray],
        n_resources: int,
        q_cpu: int,
        allowed: np.ndarray,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """Resources per application (an integer array of length k) from the policy's ``inputs``.

        ``n_resources``: the platform's I/O resources N; ``q_cpu``: its compute resources Q_cpu;
        ``allowed``: ``allowed[j, n - 1]``: application j may use n resources; ``rng``: the
        random generator (for the random policies).
        """
        raise NotImplementedError


ALLOCATORS: Registry[type[Allocator]] = Registry("allocator")


def application_inputs(w: Workload, names: tuple[str, ...], known_bw: np.ndarray | None = None):
    """The Table II inputs ``names`` of a workload; ``known_bw`` replaces the true curves
    by what the scheduler believes (robustness study, §VI-B)."""
    bw = w.bw if known_bw is None else known_bw
    full = {
        "q": lambda: w.q.copy(),
        "v_io": lambda: w.v_io.copy(),
        "t_cpu": lambda: w.t_cpu.copy(),
        "argmax_b": lambda: n_perf(bw, w.n_resources),
        "b": lambda: bw[:, : w.n_resources].copy(),
    }
    return {k: full[k]() for k in names}


def allocate(
    name: str,
    w: Workload,
    rng: np.random.Generator,
    known_bw: np.ndarray | None = None,
) -> np.ndarray:
    """Run the allocator ``name`` on a workload, giving it only its Table II inputs.

    ``w``: the workload; ``rng``: the random generator (for the random policies); ``known_bw``:
    the curves the heuristics know (default: the true ones).
    """
    alloc = ALLOCATORS.get(name)()
    inputs = application_inputs(w, alloc.inputs_needed, known_bw)
    out = alloc.allocate(inputs, w.n_resources, w.q_cpu, w.allowed.copy(), rng)
    out = np.asarray(out, dtype=np.int64)
    ok = out.shape == (w.k,) and bool(np.all((out >= 1) & (out <= w.n_max)))
    if not ok or not w.allowed[np.arange(w.k), out - 1].all():
        raise AssertionError(f"allocator {name} returned an invalid allocation {out}")
    return out


@ALLOCATORS.register("Random")
class RandomAllocator(Allocator):
    """A number of resources drawn uniformly among the allowed ones (the baseline)."""

    inputs_needed = ()

    def allocate(self, inputs, n_resources, q_cpu, allowed, rng):
        pick = rng.integers(0, allowed.sum(axis=1))  # the pick-th allowed n of each row
        rank = np.cumsum(allowed, axis=1) - 1
        return np.argmax(allowed & (rank == pick[:, None]), axis=1) + 1


@ALLOCATORS.register("Static")
class StaticAllocator(Allocator):
    """round(Q_j N / Q_cpu), at least 1; the nearest allowed n (ties: the smaller)."""

    inputs_needed = ("q",)

    def allocate(self, inputs, n_resources, q_cpu, allowed, rng):
        target = np.maximum(np.rint(inputs["q"] * n_resources / q_cpu), 1)
        n = np.arange(1, allowed.shape[1] + 1)
        dist = np.where(allowed, np.abs(n - target[:, None]), np.inf)
        return np.argmin(dist, axis=1) + 1


@ALLOCATORS.register("BestBdw")
class BestBdwAllocator(Allocator):
    """n_perf, Eq. (1): the fastest number of resources in isolation."""

    inputs_needed = ("argmax_b",)

    def allocate(self, inputs, n_resources, q_cpu, allowed, rng):
        return inputs["argmax_b"]


@ALLOCATORS.register("Nsys")
class NsysAllocator(Allocator):
    """pi_sys: n_sys, Eq. (2), the number that puts least stress on the I/O system."""

    inputs_needed = ("v_io", "t_cpu", "b")

    def allocate(self, inputs, n_resources, q_cpu, allowed, rng):
        return n_sys(inputs["t_cpu"], inputs["v_io"], inputs["b"], n_resources)


@ALLOCATORS.register("TCPU")
class TCPUAllocator(Allocator):
    """Algorithm 1 of Bandet et al. (2024), line by line.

    Notes
    -----
    As written, line 13 compares CPUload(i, n) with CPUload(i, pi~(i)), where
    pi~(i) is the last n that passed the test of line 11 in this sweep (line 15),
    so an application whose CPUload drops on the way to n_perf keeps searching.
    n_perf is derived from b (TCPU may read b). Loop 9 runs while n < n_perf
    (Lemma 1: n_sys <= n_perf, so this is the paper's n != n_perf).
    """

    inputs_needed = ("q", "v_io", "t_cpu", "b")

    def allocate(self, inputs, n_resources, q_cpu, allowed, rng):
        q, v, t, b = inputs["q"], inputs["v_io"], inputs["t_cpu"], inputs["b"]
        stress = io_stress(t, v, b)  # K x M, column n-1
        cpu = cpu_load(q, t, v, b)
        perf = n_perf(b, n_resources)
        k = len(q)
        rows = np.arange(k)
        pi = n_sys(t, v, b, n_resources)  # line 1
        while True:  # lines 2-3
            pi_t = pi.copy()  # line 4
            load_diff = np.full(k, -1.0)  # line 5
            init_load = stress[rows, pi - 1].sum() / n_resources  # line 6
            for i in range(k):  # line 7
                n = pi[i]  # line 8
                while n < perf[i] and load_diff[i] < 0:  # line 9
                    n += 1  # line 10
                    delta = (stress[i, n - 1] - stress[i, pi[i] - 1]) / n_resources
                    if init_load + delta <= 1:  # lines 11-12
                        load_diff[i] = cpu[i, n - 1] - cpu[i, pi_t[i] - 1]  # lines 13-14
                        pi_t[i] = n  # line 15
            idx = int(np.argmax(load_diff))  # line 16
            if load_diff[idx] < 0:  # line 17
                return pi  # lines 18, 21
            pi[idx] = pi_t[idx]  # line 20
