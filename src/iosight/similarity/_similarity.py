"""Levenshtein similarity of codings: BIN (eq. 1) and HEX_LEV (eq. 2).

Betke & Kunkel (2020), §4.1, read as in ``docs/methods.md`` §3. Codes become
characters (``chr(code)``) so rapidfuzz's C++ Levenshtein does every edit
distance; nothing here loops over characters in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iosight._errors import IosightError
from iosight.similarity._codings import METRICS

_POPCOUNT = np.array([bin(i).count("1") for i in range(1 << len(METRICS))], dtype=np.int64)


def _text(codes: Sequence[int] | np.ndarray) -> str:
    return "".join(map(chr, np.asarray(codes, dtype=np.int64).tolist()))


def bin_similarity(a: Sequence[int], b: Sequence[int]) -> float:
    """``1 - lev(A, B) / max(len A, len B)`` (eq. 1); [1,2,3,4] vs [1,2,3,4,5] -> 0.8.

    ``a``: one job's binary codes; ``b``: the other's.
    """
    from rapidfuzz.distance import Levenshtein

    la, lb = len(a), len(b)
    if la == 0 or lb == 0:
        raise IosightError("codings must have at least one segment")
    return 1.0 - Levenshtein.distance(_text(a), _text(b)) / max(la, lb)


def hex_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """``1 - sum_m lev(A_m, B_m) / (N * L_B)`` (eq. 2), ``L_B >= L_A``.

    ``a``: one job's (9, length) hex levels; ``b``: the other's.

    Notes
    -----
    iosight's reading (docs/methods.md §3): N counts the metrics that are non-zero in
    either job and the sum runs over those metrics, so the value is the mean of
    the per-metric similarities over them; two all-zero codings have similarity 1.
    """
    from rapidfuzz.distance import Levenshtein

    a, b = np.atleast_2d(a), np.atleast_2d(b)
    if a.shape[0] != b.shape[0]:
        raise IosightError("hex codings must have the same number of metrics")
    if a.shape[1] == 0 or b.shape[1] == 0:
        raise IosightError("codings must have at least one segment")
    active = a.any(axis=1) | b.any(axis=1)
    n = int(active.sum())
    if n == 0:
        return 1.0
    dist = sum(
        Levenshtein.distance(_text(x), _text(y))
        for x, y, on in zip(a, b, active, strict=True)
        if on
    )
    return 1.0 - dist / (n * max(a.shape[1], b.shape[1]))


@dataclass
class CodingSet:
    """Many codings of one kind, ready for batched rapidfuzz comparisons.

    ``parts`` holds one list of strings per compared sequence: one for BIN, nine
    (one per metric) for HEX_LEV; ``active`` is the 9-bit mask of non-zero metrics
    (HEX) and ``lengths`` the number of segments.

    ``kind``: ``bin`` or ``hex``, which similarity (eq. 1 or eq. 2) compares them.
    """

    kind: str
    parts: list[list[str]]
    lengths: np.ndarray
    active: np.ndarray

    @classmethod
    def from_bin(cls, codings: Sequence[np.ndarray]) -> CodingSet:
        """A set of binary codings (one string per job).

        ``codings``: one array of codes per job.
        """
        strings = [_text(c) for c in codings]
        lengths = np.array([len(c) for c in codings], dtype=np.int64)
        return cls("bin", [strings], lengths, np.ones(len(strings), dtype=np.int64))

    @classmethod
    def from_hex(cls, codings: Sequence[np.ndarray]) -> CodingSet:
        """A set of hex codings (one string per job and metric), with each job's active metrics.

        ``codings``: one (9, length) array of hex levels per job.
        """
        parts = [[_text(c[m]) for c in codings] for m in range(len(METRICS))]
        lengths = np.array([c.shape[1] for c in codings], dtype=np.int64)
        bits = 1 << np.arange(len(METRICS), dtype=np.int64)
        active = np.array([int((c.any(axis=1) * bits).sum()) for c in codings], dtype=np.int64)
        return cls("hex", parts, lengths, active)

    def __len__(self) -> int:
        return len(self.lengths)

    def key(self, i: int) -> str:
        """A hashable identity of coding ``i`` (equal codings, equal keys)."""
        return "\x00\x01".join(p[i] for p in self.parts)

    def similarities(
        self, i: int, choices: list[list[str]], lengths: np.ndarray, active: np.ndarray
    ) -> np.ndarray:
        """Exact similarity of coding ``i`` to each of the given choices.

        ``choices`` are per-part lists of strings (the shape of ``parts``), with
        their ``lengths`` and ``active`` masks.
        """
        from rapidfuzz import process
        from rapidfuzz.distance import Levenshtein

        if len(lengths) == 0:
            return np.zeros(0)
        dist = np.zeros(len(lengths), dtype=np.int64)
        both = active | self.active[i]
        for m, (part, cand) in enumerate(zip(self.parts, choices, strict=True)):
            d = process.cdist([part[i]], cand, scorer=Levenshtein.distance, dtype=np.int32)[0]
            # HEX: only metrics non-zero in either job count (docs/methods.md §3)
            dist += d if self.kind == "bin" else np.where(both >> m & 1, d, 0)
        longest = np.maximum(lengths, self.lengths[i])
        if self.kind == "bin":
            return 1.0 - dist / longest
        n = _POPCOUNT[both]
        return np.where(n > 0, 1.0 - dist / (np.maximum(n, 1) * longest), 1.0)

    def similarities_to(self, i: int, idx: np.ndarray) -> np.ndarray:
        """Exact similarity of coding ``i`` to codings ``idx`` of this set."""
        idx = np.asarray(idx, dtype=np.int64)
        sel = idx.tolist()
        choices = [[p[j] for j in sel] for p in self.parts]
        return self.similarities(i, choices, self.lengths[idx], self.active[idx])
