"""A finding's evidence as one JSON object, written as pandas' ``to_json`` writes it.

The stored evidence was written by pandas (``orient="records", lines=True``); it is
written the same way here, character for character, without importing pandas: floats
with at most 10 decimals (ujson's ``double_precision``), ``%.10g`` beyond 1e16 or below
1e-15, integers whole, NaN as null, strings with ``/`` and non-ASCII escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

_DECIMALS = 10
_SCALE = 10.0**_DECIMALS
_BIG = 1e16 - 1  # 1e16 as a double: ujson's "thres_max"
_TINY = 1e-15


def evidence_json(columns: Mapping[str, np.ndarray], n: int) -> list[str]:
    """One JSON object per row of the equal-length ``columns`` (``n`` rows)."""
    if not columns:
        return ["{}"] * n
    cells = [[json.dumps(name) + ":" + v for v in _values(col)] for name, col in columns.items()]
    return ["{" + ",".join(row) + "}" for row in zip(*cells, strict=True)]


def _values(col: np.ndarray) -> list[str]:
    kind = col.dtype.kind
    if kind == "f":
        return _doubles(col.astype(float))
    if kind in "iu":
        return [str(v) for v in col.tolist()]
    if kind == "b":
        return ["true" if v else "false" for v in col.tolist()]
    return [_text(v) for v in col.tolist()]


def _text(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return _doubles(np.array([v]))[0]
    return json.dumps(str(v)).replace("/", "\\/")


def _doubles(v: np.ndarray) -> list[str]:
    """ujson's ``Buffer_AppendDoubleUnchecked`` (pandas' vendored encoder), vectorised."""
    a = np.abs(v)
    finite = np.isfinite(v)
    a = np.where(finite, a, 0.0)
    whole = np.floor(a)
    tmp = (a - whole) * _SCALE
    frac = np.floor(tmp)
    diff = tmp - frac
    odd = np.fmod(frac, 2) == 1
    frac = frac + ((diff > 0.5) | ((diff == 0.5) & ((frac == 0) | odd)))
    roll = frac >= _SCALE
    frac, whole = np.where(roll, 0.0, frac), whole + roll
    out = []
    for x, f, w, fin in zip(v.tolist(), frac.tolist(), whole.tolist(), finite.tolist(),
                            strict=True):  # fmt: skip
        if not fin:
            out.append("null")
        elif abs(x) > _BIG or (x != 0 and abs(x) < _TINY):
            out.append(f"{x:.{_DECIMALS}g}")
        else:
            digits = f"{int(f):0{_DECIMALS}d}".rstrip("0") or "0"
            out.append(f"{'-' if x < 0 else ''}{int(w)}.{digits}")
    return out
