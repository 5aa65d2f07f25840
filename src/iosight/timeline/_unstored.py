"""The timeline of the jobs known at a time, computed and returned, not stored."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import check_param
from iosight.timeline._binning import check_spread
from iosight.timeline._build import CHUNK_JOBS, _check_width, accumulate, assemble

if TYPE_CHECKING:
    import pyarrow as pa

    from iosight.warehouse import Warehouse


def known_timeline(
    warehouse: Warehouse,
    as_of: float | None = None,
    *,
    bin_width: float = 300.0,
    spread: str = "overlap",
) -> pa.Table | None:
    """The timeline of every job known by ``as_of`` (all jobs: None), as
    :func:`~iosight.timeline.build_timeline` with ``span="all"`` and ``as_of`` would
    build it, without writing it (the stored ``timeline`` stays as it is), or None when
    no job is known then. What the live timeline adds its live rows to.

    ``warehouse``: the warehouse holding the jobs; ``bin_width``: the bin width (s); ``spread``:
    ``overlap`` or ``equal``.
    """
    _check_width(bin_width)
    check_spread(spread)
    ok = as_of is None or (isinstance(as_of, numbers.Real) and bool(np.isfinite(as_of)))
    check_param("as_of", as_of, ok, "a finite time in epoch seconds")
    if not warehouse.has_table("jobs"):
        return None
    acc = accumulate(warehouse, None, None, (0, 1), (float(bin_width), spread), CHUNK_JOBS,
                     None, as_of=as_of)  # fmt: skip
    if not len(acc.sums):
        return None
    return assemble(acc.origin, bin_width, acc.sums, acc.active)
