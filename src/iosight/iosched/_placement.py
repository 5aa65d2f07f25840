"""Placement heuristics of Bandet et al. (2024), §IV-B and the MCKP baseline of Bez et al.

A placement is a K x N boolean matrix: ``place[j, r]`` when application j uses
resource r. Like allocators, each heuristic reads only its Table II inputs.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from iosight._errors import IosightError
from iosight._registry import Registry
from iosight.iosched._allocators import allocate, application_inputs
from iosight.iosched._model import Workload


class Placement:
    """Contract: ``place(alloc, inputs, n_resources, rng) -> K x N bool matrix``."""

    inputs_needed: ClassVar[tuple[str, ...]] = ()

    def place(
        self,
        alloc: np.ndarray,
        inputs: dict[str, np.ndarray],
        n_resources: int,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """Which resources each application uses: a k x n boolean matrix with ``alloc[j]``
        ones in row j.

        ``alloc``: resources per application; ``inputs``: the policy's Table II inputs;
        ``n_resources``: the platform's I/O resources N; ``rng``: the random generator (for the
        random policy).
        """
        raise NotImplementedError


PLACEMENTS: Registry[type[Placement]] = Registry("placement")
#: The MCKP baseline (allocates and places at once): n_j >= 1, and the zero-forwarder one.
MCKP_NAMES = ("MCKP", "MCKP-0")


def _round_robin(order: np.ndarray, alloc: np.ndarray, n_resources: int) -> np.ndarray:
    """Apps in ``order`` take the next ``alloc[j]`` resources, cycling over 0..N-1."""
    n = alloc[order]
    start = np.cumsum(n) - n
    app = np.repeat(order, n)
    res = (np.repeat(start, n) + _ranks_within(n)) % n_resources
    out = np.zeros((len(alloc), n_resources), dtype=bool)
    out[app, res] = True
    return out


def _ranks_within(n: np.ndarray) -> np.ndarray:
    """0, 1, ..., n_0 - 1, 0, 1, ..., n_1 - 1, ..."""
    return np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)


@PLACEMENTS.register("Random")
class RandomPlacement(Placement):
    """n_j distinct resources drawn uniformly at random for each application."""

    def place(self, alloc, inputs, n_resources, rng):
        ranks = np.argsort(np.argsort(rng.random((len(alloc), n_resources)), axis=1), axis=1)
        return ranks < alloc[:, None]


@PLACEMENTS.register("Greedy-NC")
class GreedyNonClairvoyant(Placement):
    """Apps by decreasing n_j (stable), resources handed out round-robin."""

    def place(self, alloc, inputs, n_resources, rng):
        order = np.argsort(-alloc, kind="stable")
        return _round_robin(order, alloc, n_resources)


@PLACEMENTS.register("Greedy-C")
class GreedyClairvoyant(Placement):
    """Apps by decreasing T_io/(T_cpu + T_io) at n_j, each onto the n_j resources of
    lowest expected occupancy (ties: lowest index)."""

    inputs_needed = ("v_io", "t_cpu", "b")

    def place(self, alloc, inputs, n_resources, rng):
        k = len(alloc)
        t_io = inputs["v_io"] / inputs["b"][np.arange(k), alloc - 1]
        ratio = t_io / (inputs["t_cpu"] + t_io)
        occ = np.zeros(n_resources)
        out = np.zeros((k, n_resources), dtype=bool)
        for j in np.argsort(-ratio, kind="stable"):
            chosen = np.argsort(occ, kind="stable")[: alloc[j]]
            out[j, chosen] = True
            occ[chosen] += ratio[j]
        return out


def place(
    name: str,
    alloc: np.ndarray,
    w: Workload,
    rng: np.random.Generator,
    known_bw: np.ndarray | None = None,
) -> np.ndarray:
    """Run the placement ``name`` with only its Table II inputs.

    ``alloc``: resources per application; ``w``: the workload; ``rng``: the random generator
    (for the random policy); ``known_bw``: the curves the heuristics know (default: the true
    ones).
    """
    p = PLACEMENTS.get(name)()
    inputs = application_inputs(w, p.inputs_needed, known_bw)
    out = p.place(np.asarray(alloc, dtype=np.int64), inputs, w.n_resources, rng)
    if not np.array_equal(out.sum(axis=1), alloc):
        raise AssertionError(f"placement {name} does not match the allocation")
    return out


def mckp(
    w: Workload, known_bw: np.ndarray | None = None, *, zero: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """MCKP baseline of Bez et al.: maximise sum_j b_j(n_j), then exclusive blocks.

    Exact dynamic programme over the resource count. Two readings:

    * ``zero=False`` (n_j >= 1, the model of Bandet et al. (2024), §III): for K > N exclusivity is
      impossible; the capacity is N * ceil(K / N) "slots", slot s being resource s mod
      N, so no resource holds more than ceil(K/N) applications. At K = 2N every
      application gets exactly one resource.
    * ``zero=True`` (Bez et al.'s zero-forwarder option): n_j = 0 is also a choice,
      worth b_j(0) (``w.bw0``, direct file-system access) and taking no resource; the
      capacity is N, so resources stay exclusive and MCKP can favour a few
      applications whatever K is.

    Reads only b, b(0) and the platform. Returns (allocation, placement).

    ``w``: the workload; ``known_bw``: the curves the baseline knows (default: the true ones).
    """
    bw = (w.bw if known_bw is None else known_bw)[:, : w.n_resources]
    k, n_res = w.k, w.n_resources
    if zero and w.bw0 is None:
        raise IosightError("MCKP's zero-forwarder option needs b(0) (direct access) per app")
    cap = n_res if zero else n_res * -(-k // n_res)
    neg = -np.inf
    best = np.full((k + 1, cap + 1), neg)
    best[0, 0] = 0.0
    choice = np.zeros((k, cap + 1), dtype=np.int64)
    for j in range(k):
        options = np.flatnonzero(w.allowed[j]) + 1
        if zero:
            options = np.concatenate([[0], options])
        for n in options:
            cand = np.full(cap + 1, neg)
            gain = w.bw0[j] if n == 0 else bw[j, n - 1]
            cand[n:] = best[j, : cap + 1 - n] + gain
            better = cand > best[j + 1]
            best[j + 1] = np.where(better, cand, best[j + 1])
            choice[j] = np.where(better, n, choice[j])
    c = int(np.argmax(best[k]))
    alloc = np.zeros(k, dtype=np.int64)
    for j in range(k - 1, -1, -1):
        alloc[j] = choice[j, c]
        c -= alloc[j]
    return alloc, _round_robin(np.arange(k), alloc, n_res)


def schedule(
    allocator: str,
    placement: str,
    w: Workload,
    rng: np.random.Generator,
    known_bw: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(allocation, placement) of one heuristic pair; ``allocator == "MCKP"`` runs the
    joint baseline, ``"MCKP-0"`` its zero-forwarder reading (``placement`` must then
    be the same name).

    ``allocator``: the allocation heuristic; ``w``: the workload; ``rng``: the random generator
    (for the random policies); ``known_bw``: the curves the heuristics know (default: the true
    ones).
    """
    if allocator in MCKP_NAMES or placement in MCKP_NAMES:
        if allocator != placement:
            joint = allocator if allocator in MCKP_NAMES else placement
            raise IosightError(
                f"{joint} allocates and places at once: use it as both allocator and placement"
                f" (got allocator {allocator}, placement {placement})"
            )
        return mckp(w, known_bw, zero=allocator == "MCKP-0")
    alloc = allocate(allocator, w, rng, known_bw)
    return alloc, place(placement, alloc, w, rng, known_bw)
