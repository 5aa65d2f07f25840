"""Named numpy columns: the frames the rules read and the findings they return.

The rules are vectorised over many jobs, which numpy does alone; pandas (a third of a
second to import, more than the rest of ``iosight job``) is not needed. Where the
rules used pandas before, the results here are the same: per-group sums are correctly
rounded (:func:`group_sum`), as pandas' Kahan-compensated ``groupby().sum()`` nearly
always is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np


class Table:
    """Equal-length named columns (numpy arrays; strings as object arrays, missing
    values as None or NaN): the subset of a DataFrame the rules use."""

    def __init__(self, columns: Mapping[str, np.ndarray]):
        self._cols = {name: np.asarray(v) for name, v in columns.items()}

    @classmethod
    def fetch(cls, rel) -> Table:
        """The rows of a DuckDB relation (or executed statement) as numpy columns: an
        integer column with a missing value becomes floats with NaN (pandas holds it as
        ``Int64``; the rules that write such a column's values write them whole)."""
        return cls({name: _unmasked(v) for name, v in rel.fetchnumpy().items()})

    @classmethod
    def empty(cls, names: Iterable[str]) -> Table:
        """No rows, the columns ``names`` (of objects)."""
        return cls({name: np.zeros(0, dtype=object) for name in names})

    @property
    def columns(self) -> list[str]:
        """The column names, in order."""
        return list(self._cols)

    def __len__(self) -> int:
        return len(next(iter(self._cols.values()))) if self._cols else 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self._cols[name]

    def __setitem__(self, name: str, values) -> None:
        if isinstance(values, str):  # one string for every row: objects, as pandas has
            values = np.full(len(self), values, dtype=object)
        values = np.asarray(values)
        self._cols[name] = np.full(len(self), values) if values.ndim == 0 else values

    def copy(self) -> Table:
        """A table of the same columns (arrays copied)."""
        return Table({name: v.copy() for name, v in self._cols.items()})

    def take(self, rows: np.ndarray) -> Table:
        """The rows ``rows`` (indices or a boolean mask), in that order."""
        return Table({name: v[rows] for name, v in self._cols.items()})

    def isnull(self, name: str) -> np.ndarray:
        """Per row, whether column ``name`` is missing (None or NaN)."""
        return _isnull(self._cols[name])

    def num(self, name: str) -> np.ndarray:
        """Column ``name`` as floats, 0 where missing (``fillna(0)``)."""
        v = self._cols[name]
        return np.where(_isnull(v), 0.0, v).astype(float) if len(v) else np.zeros(0)

    def contains(self, name: str, text: str) -> np.ndarray:
        """Per row, whether the string column ``name`` holds ``text`` (not where missing)."""
        return np.array([v is not None and text in v for v in self._cols[name]], dtype=bool)

    @classmethod
    def concat(cls, tables: list[Table]) -> Table:
        """The rows of ``tables`` (same columns) one after the other."""
        names = tables[0].columns
        return cls({n: np.concatenate([t[n] for t in tables]) for n in names})


def _isnull(v: np.ndarray) -> np.ndarray:
    if v.dtype.kind == "f":
        return np.isnan(v)
    if v.dtype.kind == "O":
        return np.array([x is None or (isinstance(x, float) and x != x) for x in v], dtype=bool)
    return np.zeros(len(v), bool)


def _unmasked(v: np.ndarray) -> np.ndarray:
    """A fetched column with its missing values (a masked array's) as NaN (numbers,
    which makes integers floats) or None (strings, booleans)."""
    if not isinstance(v, np.ma.MaskedArray):
        return v
    mask = np.ma.getmaskarray(v)
    if not mask.any():
        return v.data
    if v.dtype.kind in "iuf":
        return np.where(mask, np.nan, v.data.astype(float))
    out = v.data.astype(object)
    out[mask] = None
    return out


def group_sum(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per group ``0 .. n-1``, the sum of ``values`` (NaN skipped), correctly rounded.

    A group of whole numbers (below 2**53), or with at most one non-zero value, adds
    exactly in any order: one ``bincount``. Any other group (times over several files)
    is summed by :func:`math.fsum`, so its sum does not depend on the order of the rows
    (pandas' Kahan-compensated ``groupby().sum()``, which the rules used, gives the same
    sum but in rare last-bit cases, and depends on the order).
    """
    values = np.where(np.isnan(values), 0.0, np.asarray(values, float))
    out = np.bincount(groups, values, minlength=n).astype(float)
    if np.all(values == np.floor(values)) and np.abs(values).sum() < 2**53:
        return out
    several = np.bincount(groups, values != 0, minlength=n) > 1
    rows = np.flatnonzero(several[groups])
    if len(rows):
        rows = rows[np.argsort(groups[rows], kind="stable")]
        g = groups[rows]
        cuts = np.flatnonzero(np.r_[True, g[1:] != g[:-1], True])
        for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            out[g[lo]] = math.fsum(values[rows[lo:hi]].tolist())
    return out
