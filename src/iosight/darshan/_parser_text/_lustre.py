"""LUSTRE rows of a ``darshan-parser`` dump -> the ``lustre`` table (one row per
record and component)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from iosight._errors import CorruptLogError

if TYPE_CHECKING:
    import pyarrow as pa

_LUSTRE_PATTERNS = {"raid0": 0, "mdt": 2, "raid0,overstriped": 4, "foreign": 8, "N/A": -1}
_LUSTRE_FLAGS = (
    "stale prefrd prefwr offline init nosync extension parity compress partial nocompr neg"
).split()
_COMP = re.compile(r"LUSTRE_COMP(\d+)_(.+)")
_OST = re.compile(r"OST_ID_(\d+)")


def _lustre_value(counter: str, value: str) -> int:
    if counter.endswith("STRIPE_PATTERN"):
        if value in _LUSTRE_PATTERNS:
            return _LUSTRE_PATTERNS[value]
    if counter.endswith("_FLAGS"):
        if value == "N/A":
            return -1
        if value != "0" and all(f in _LUSTRE_FLAGS for f in value.split(",")):
            return sum(1 << _LUSTRE_FLAGS.index(f) for f in value.split(","))
    try:
        return int(value)
    except ValueError:
        raise CorruptLogError(f"non-numeric value in LUSTRE {counter}") from None


_LUSTRE_COMP_COUNTERS = tuple(
    f"LUSTRE_COMP_{c}"
    for c in "STRIPE_SIZE STRIPE_COUNT STRIPE_PATTERN FLAGS EXT_START EXT_END MIRROR_ID".split()
)
# a pre-3.4 record read as one component, as libdarshan-util 3.5 up-converts it
_LUSTRE_V1 = {"STRIPE_SIZE": "LUSTRE_COMP_STRIPE_SIZE", "STRIPE_WIDTH": "LUSTRE_COMP_STRIPE_COUNT"}
_LUSTRE_V1_DEFAULTS = {
    "LUSTRE_COMP_STRIPE_PATTERN": -1,
    "LUSTRE_COMP_FLAGS": -1,
    "LUSTRE_COMP_EXT_START": 0,
    "LUSTRE_COMP_EXT_END": -1,
    "LUSTRE_COMP_MIRROR_ID": -1,
}


def _lustre_table(rows: pa.Table) -> pa.Table:
    """LUSTRE rows -> one row per (record, component) with pool name and OST list.

    Components are numbered from 0 (darshan-parser prints ``COMP<n>`` from 1).
    Pre-3.4 rows (``LUSTRE_STRIPE_SIZE``, ``LUSTRE_STRIPE_WIDTH``,
    ``LUSTRE_OST_ID_<k>``) become component 0 with the values libdarshan-util
    3.5 gives such records; ``LUSTRE_OSTS``, ``LUSTRE_MDTS`` and
    ``LUSTRE_STRIPE_OFFSET`` have no place there and are dropped.
    """
    import pyarrow as pa

    out: dict[tuple[int, int, int], dict] = {}
    for rank, rid, counter, value in zip(
        *(rows[c].to_pylist() for c in ("rank", "record_id", "counter", "value")), strict=True
    ):
        m = _COMP.fullmatch(counter)
        comp, rest = (int(m.group(1)) - 1, m.group(2)) if m else (0, counter[len("LUSTRE_") :])
        if rest in ("NUM_COMPONENTS", "NUM_STRIPES", "OSTS", "MDTS", "STRIPE_OFFSET"):
            continue
        row = out.get((int(rank), int(rid), comp))
        if row is None:
            row = out[(int(rank), int(rid), comp)] = {"pool_name": "", "ost_ids": []}
            if not m:
                row |= _LUSTRE_V1_DEFAULTS
        if _OST.fullmatch(rest):
            row["ost_ids"].append(_lustre_value(counter, value))
        elif rest == "POOL_NAME":
            row["pool_name"] = "" if value == "N/A" else value
        elif m:
            row["LUSTRE_COMP_" + rest] = _lustre_value(counter, value)
        elif rest in _LUSTRE_V1:
            row[_LUSTRE_V1[rest]] = _lustre_value(counter, value)
        else:
            raise CorruptLogError(f"unknown LUSTRE counter {counter[:40]!r}")
    keys = list(out)
    cols: dict[str, pa.Array] = {
        "rank": pa.array([k[0] for k in keys], pa.int64()),
        "record_id": pa.array([k[1] for k in keys], pa.uint64()),
        "component": pa.array([k[2] for k in keys], pa.int64()),
    }
    for c in _LUSTRE_COMP_COUNTERS:
        cols[c] = pa.array([out[k].get(c, 0) for k in keys], pa.int64())
    cols["pool_name"] = pa.array([out[k]["pool_name"] for k in keys], pa.string())
    cols["ost_ids"] = pa.array([out[k]["ost_ids"] for k in keys], pa.list_(pa.int64()))
    return pa.table(cols)
