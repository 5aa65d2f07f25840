"""Table ``dxt_bins``: a job's DXT POSIX segments counted per rank and time bin at ingest.

The Job page's DXT view (:mod:`iosight.report.dxt`) counts a window's segments per rank
bin and time bin; over the raw segments that is a grouped scan of all of them (about a
second of CPU for ten million). Ingest counts them once more, per rank and per one of
:data:`DXT_BINS` equal bins of the job's run time, as it streams the segments piece by
piece, so a view of the whole job, or of any ranks or span of a thousand bins or more,
sums at most ``ranks x DXT_BINS`` rows instead. A segment's bin is
``floor(start / width)`` (``width``: the run time over :data:`DXT_BINS`, in every row),
the same expression the view evaluates on raw segments at the edges of a window, so
the two never count a segment twice or miss one.

A job gets no bins where they could not be exact: a run time that is not known, or a
segment without a rank, start or end, one that ends before it starts or starts at a
non-finite time. Its views then group the raw segments, as for a warehouse ingested
before this table existed.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc

TABLE = "dxt_bins"
#: equal time bins over a job's run time
DXT_BINS = 1000
# bins held unmerged before they are summed (a piece's bins are at most ranks x DXT_BINS)
_MERGE_ROWS = 2_000_000


class DxtBins:
    """One job's ``dxt_bins`` rows, accumulated over the pieces of its ``dxt_posix``."""

    def __init__(self, jobs: pa.Table) -> None:
        run_time = jobs["run_time"][0].as_py() if jobs.num_rows == 1 else None
        ok = isinstance(run_time, int | float) and math.isfinite(run_time) and run_time > 0
        self.width: float | None = run_time / DXT_BINS if ok else None
        self.parts: list[pa.Table] = []
        self.held = 0

    def add(self, segments: pa.Table) -> None:
        """Count a piece of the job's segments into its bins (or give the bins up)."""
        if self.width is None or not segments.num_rows:
            return
        start, end, rank = segments["start"], segments["end"], segments["rank"]
        at = pc.divide(start, self.width)
        exact = (
            start.null_count == end.null_count == rank.null_count == 0
            and pc.all(pc.is_finite(at)).as_py()
            and pc.max(pc.abs(at)).as_py() < 2**53
            and pc.all(pc.greater_equal(end, start)).as_py()
        )
        if not exact:
            self.width, self.parts = None, []
            return
        rows = pa.table(
            {
                "rank": rank,
                "bin": pc.floor(at).cast(pa.int64()),
                "writes": pc.fill_null(pc.equal(segments["op"], "write"), False).cast(pa.int64()),
                "bytes": segments["length"],
            }
        )
        self.parts.append(_sum(rows, [("writes", "count", "ops"), ("writes", "sum", "writes")]))
        self.held += self.parts[-1].num_rows
        if self.held > _MERGE_ROWS:
            self.parts = [self._merged()]
            self.held = self.parts[0].num_rows

    def table(self) -> pa.Table | None:
        """The job's bins (rank, bin, width, ops, writes, bytes); None when it has none."""
        if self.width is None or not self.parts:
            return None
        # one piece (most jobs): its bins are summed already; grouping them again is a no-op
        merged = self.parts[0] if len(self.parts) == 1 else self._merged()
        return merged.append_column("width", pa.repeat(pa.scalar(self.width), merged.num_rows))

    def _merged(self) -> pa.Table:
        sums = [("ops", "sum", "ops"), ("writes", "sum", "writes")]
        return _sum(pa.concat_tables(self.parts), sums)


def _sum(rows: pa.Table, counts: list[tuple[str, str, str]]) -> pa.Table:
    """``rows`` grouped by rank and bin: ``counts`` (column, aggregate, name) and bytes."""
    aggs = [(column, how) for column, how, _ in counts] + [("bytes", "sum")]
    out = rows.group_by(["rank", "bin"], use_threads=False).aggregate(aggs)
    names = {f"{column}_{how}": name for column, how, name in counts} | {"bytes_sum": "bytes"}
    return out.rename_columns([names.get(c, c) for c in out.column_names]).select(
        ["rank", "bin", "ops", "writes", "bytes"]
    )
