"""Top-k search: the jobs most similar to a given one, exactly, without comparing all.

Betke & Kunkel (2020), §7 (use case: find jobs similar to a given IO-intensive job).
The index bounds the edit distance from below with cheap vectorised counts, so
only jobs whose bound could still beat the k-th best are compared exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iosight._errors import IosightError, check_param
from iosight.similarity._codings import HEX_LEVELS, METRICS
from iosight.similarity._similarity import _POPCOUNT, CodingSet

_HIST_BINS = 64
_CHUNK = 64


@dataclass
class SearchResult:
    """Positions (into the indexed set) and similarities, best first; ``compared``
    counts the exact edit-distance comparisons made.

    ``index``: positions into the indexed set; ``similarity``: their similarities to the query.
    """

    index: np.ndarray
    similarity: np.ndarray
    compared: int


def _histograms(codings: CodingSet) -> np.ndarray:
    """Per job (and metric, for HEX) counts of symbol values.

    BIN codes 0..511 are hashed into 64 bins (code mod 64): merging symbols can only
    raise the shared count, so the bound stays a valid lower bound.
    """
    if codings.kind == "bin":
        rows = [np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32) for s in codings.parts[0]]
        h = np.zeros((len(rows), _HIST_BINS), dtype=np.int32)
        lens = np.array([len(r) for r in rows])
        owner = np.repeat(np.arange(len(rows)), lens)
        if owner.size:
            np.add.at(h, (owner, np.concatenate(rows) % _HIST_BINS), 1)
        return h[:, None, :]
    h = np.zeros((len(codings), len(METRICS), HEX_LEVELS), dtype=np.int32)
    for m, part in enumerate(codings.parts):
        rows = [np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32) for s in part]
        owner = np.repeat(np.arange(len(rows)), [len(r) for r in rows])
        if owner.size:
            np.add.at(h[:, m, :], (owner, np.concatenate(rows)), 1)
    return h


class SimilarityIndex:
    """An exact top-k index over codings of one kind (BIN eq. 1 or HEX_LEV eq. 2).

    ``codings``: the codings indexed, all of one kind.

    Notes
    -----
    For codings of lengths ``la``, ``lb`` sharing ``c`` symbols as multisets,
    ``lev >= max(la, lb) - c`` (each kept symbol is matched at most once), which
    includes the length bound ``|la - lb|``. Hence BIN similarity is at most
    ``c / max(la, lb)`` and HEX_LEV at most
    ``1 - sum_m (L - c_m) / (N L)``. Candidates are compared in order of that
    upper bound and the search stops when the next bound is below the k-th best
    similarity found: the result equals brute force, ties broken by position.
    """

    def __init__(self, codings: CodingSet) -> None:
        if len(codings) == 0:
            raise IosightError("cannot index an empty set of codings")
        self.codings = codings
        self.hist = _histograms(codings)

    def _upper_bounds(self, qhist: np.ndarray, qlen: int, qactive: int) -> np.ndarray:
        common = np.minimum(self.hist, qhist[None]).sum(axis=2)  # (n, parts)
        longest = np.maximum(self.codings.lengths, qlen).astype(float)
        if self.codings.kind == "bin":
            return common[:, 0] / longest
        both = self.codings.active | qactive
        on = (both[:, None] >> np.arange(len(METRICS))) & 1
        missing = ((longest[:, None] - common) * on).sum(axis=1)
        n = _POPCOUNT[both]
        return np.where(n > 0, 1.0 - missing / (np.maximum(n, 1) * longest), 1.0)

    def query(self, i: int, k: int = 20, *, exclude_self: bool = True) -> SearchResult:
        """The ``k`` codings most similar to coding ``i`` of the indexed set.

        ``exclude_self``: leave coding ``i`` itself out of the answer.
        """
        check_param("k", k, k >= 1, "a positive number of jobs")
        cs = self.codings
        ub = self._upper_bounds(self.hist[i], int(cs.lengths[i]), int(cs.active[i]))
        order = np.lexsort((np.arange(len(ub)), -ub))
        if exclude_self:
            order = order[order != i]
        found_idx: list[np.ndarray] = []
        found_sim: list[np.ndarray] = []
        kth, compared, start, size = -np.inf, 0, 0, max(_CHUNK, 4 * k)
        while start < len(order):
            if len(found_idx) and ub[order[start]] < kth - 1e-12:
                break
            chunk = order[start : start + size]
            size *= 2
            s = cs.similarities_to(i, chunk)
            compared += len(chunk)
            found_idx.append(chunk)
            found_sim.append(s)
            start += len(chunk)
            allsim = np.concatenate(found_sim)
            if len(allsim) >= k:
                kth = np.partition(allsim, len(allsim) - k)[len(allsim) - k]
        idx = np.concatenate(found_idx) if found_idx else np.zeros(0, dtype=np.int64)
        sim = np.concatenate(found_sim) if found_sim else np.zeros(0)
        best = np.lexsort((idx, -sim))[:k]
        return SearchResult(idx[best], sim[best], compared)


def brute_force_top_k(codings: CodingSet, i: int, k: int, *, exclude_self: bool = True):
    """Reference answer: compare coding ``i`` with every coding, best ``k`` first.

    ``codings``: the codings compared; ``exclude_self``: leave coding ``i`` itself out of the
    answer.
    """
    idx = np.arange(len(codings))
    if exclude_self:
        idx = idx[idx != i]
    sim = codings.similarities_to(i, idx)
    best = np.lexsort((idx, -sim))[:k]
    return SearchResult(idx[best], sim[best], len(idx))
