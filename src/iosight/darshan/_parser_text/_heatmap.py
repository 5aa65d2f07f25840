"""HEATMAP rows of a ``darshan-parser`` dump -> the ``heatmap`` table (a row per bin with
bytes, as the binary readers build it: :func:`~iosight.darshan._record_tables.heatmap_table`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import CorruptLogError
from iosight.darshan._parser_text._rows import _as, _records
from iosight.darshan._record_tables import heatmap_table

if TYPE_CHECKING:
    import pyarrow as pa


def _heatmap_table(rows: pa.Table) -> pa.Table:
    """HEATMAP rows -> ``module, rank, record_id, bin, nbins, bin_width, bin_start,
    read/write bytes``, bins without bytes left out.

    A record prints ``HEATMAP_F_BIN_WIDTH_SECONDS`` then ``HEATMAP_READ_BIN_<k>``
    and ``HEATMAP_WRITE_BIN_<k>`` for every bin; its name is ``heatmap:<MODULE>``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    rank = _as(rows["rank"], pa.int64(), "HEATMAP rank")
    rid = _as(rows["record_id"], pa.uint64(), "HEATMAP record id")
    rec, first = _records(rank, rid)
    counter = rows["counter"]
    is_width = pc.equal(counter, "HEATMAP_F_BIN_WIDTH_SECONDS").to_numpy(zero_copy_only=False)
    ops = {}
    for op in ("READ", "WRITE"):
        prefix = f"HEATMAP_{op}_BIN_"
        sel = np.flatnonzero(pc.starts_with(counter, prefix).to_numpy(zero_copy_only=False))
        names = pc.utf8_slice_codeunits(counter.take(pa.array(sel)), len(prefix))
        ops[op] = (sel, _as(names, pa.int64(), "HEATMAP bin"))
    n_known = is_width.sum() + sum(len(sel) for sel, _ in ops.values())
    if n_known != len(counter):
        raise CorruptLogError("unknown HEATMAP counter in parser output")
    n = len(first)
    width = np.zeros(n)
    wsel = np.flatnonzero(is_width)
    width[rec[wsel]] = _as(rows["value"].take(pa.array(wsel)), pa.float64(), "HEATMAP width")
    nbins = np.zeros(n, np.int64)
    for sel, bins in ops.values():
        np.maximum.at(nbins, rec[sel], bins + 1)
    start = np.cumsum(nbins) - nbins
    out = {}
    for op, (sel, bins) in ops.items():
        values = np.zeros(nbins.sum(), np.int64)
        values[start[rec[sel]] + bins] = _as(rows["value"].take(pa.array(sel)), pa.int64(), op)
        out[op] = values
    ids, named = rid[first], rows["name"].take(pa.array(first)).to_pylist()
    names = dict(zip(ids.tolist(), named, strict=True))
    return heatmap_table(ids, rank[first], width, nbins, out["WRITE"], out["READ"], names)
