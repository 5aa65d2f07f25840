"""``io_totals``: the columns of a batch's ``job_totals`` that a timeline reads, apart.

A ``job_totals`` file holds every counter's total, some 480 columns, and a Parquet
reader decodes the whole footer (every column's metadata and statistics) before it
reads any column: 1.5 ms for a file of eight jobs, most of what it takes to add them to
a timeline. Ingest writes, in the same commit and under the same file name, the
``job_key`` and the POSIX and STDIO totals of the same rows (bytes, operations and I/O
time, read and written), so an update of the timeline reads a footer of 13 columns.
Deleting rows (``ingest --force``) deletes them from both tables, like every table keyed
by ``job_key``; a reader uses an ``io_totals`` file only beside the ``job_totals`` file
of the same name, and that file otherwise. Ingest writes it uncompressed
(:data:`IO_TOTALS_COMPRESSION`): a reader pays for zstd once a page (a decompression
context each), a good part of reading a file of a few jobs, for some more bytes on
disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

IO_TOTALS = "io_totals"
IO_TOTALS_COMPRESSION = "none"  # how ingest writes it: read once, by the next update
#: the totals kept: each layer's bytes, operations and I/O time, read and written
IO_TOTAL_COLUMNS = tuple(
    f"total_{layer}_{counter}"
    for layer in ("POSIX", "STDIO")
    for counter in ("BYTES_READ", "READS", "F_READ_TIME", "BYTES_WRITTEN", "WRITES", "F_WRITE_TIME")
)


def io_totals(job_totals: pa.Table) -> pa.Table:
    """The ``io_totals`` rows of ``job_totals`` rows: their key and the totals kept."""
    kept = {"job_key", *IO_TOTAL_COLUMNS}
    return job_totals.select([c for c in job_totals.column_names if c in kept])
