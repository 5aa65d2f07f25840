"""The Arrow shape every reader returns: the warehouse tables of docs/warehouse.md.

A reader turns one source into a :class:`LogTables`: a mapping from warehouse
table name to an Arrow table. Readers do not know the ``job_key``; ingest adds it
as the first column of every table, so the same log read by two readers gives
equal tables.

Table columns (besides ``job_key``):

``jobs``
    ``source_path, source_format, log_version, lib_version, jobid, uid, exe,
    nprocs, start_time, end_time, run_time, modules, partial_modules, partial,
    synthetic, metadata, known_at`` — times are float seconds since the epoch (UTC);
    ``modules`` and ``partial_modules`` are comma-separated module names; ``uid``
    and ``nprocs`` are -1 when the source does not say (job-total tables) or says
    garbage (a Darshan job record out of range or layout: ``jobid`` and times are null
    then, and ``metadata`` has an ``iosight_warning=`` line; analyses that need them
    leave the job out).
    ``known_at`` is when the job became known, so a decision made at time T can use
    only what was known by T: readers leave it null unless the source says (a
    job-total table's ``known_at`` column); ingest fills the rest, with the job's
    end time in a batch ingest and the log's arrival in follow mode. A null, or no
    column at all (a warehouse written before it existed), reads as the end time:
    ``iosight.warehouse.KNOWN_AT``. Records in the module tables are known when
    their job is.
``names``
    ``record_id, name, mount_point, fs_type``
``mounts``
    ``mount_point, fs_type``
module tables (``posix``, ``mpiio``, ``stdio``, ``h5f``, ``h5d``, ``pnetcdf_file``,
``pnetcdf_var``, ``bgq``, ``dfs``, ``daos``, ...)
    ``rank, record_id`` (plus ``file_rec_id`` for ``h5d``/``pnetcdf_var``) then one
    column per counter and fcounter, Darshan's own names (``POSIX_READS``,
    ``POSIX_F_READ_TIME``, ...). Timestamps are seconds since job start.
``lustre``
    ``rank, record_id, component, LUSTRE_COMP_*`` counters (3.4+; ``LUSTRE_STRIPE_*``
    for older logs), ``pool_name``, ``ost_ids`` (list of int64)
``dxt_posix``, ``dxt_mpiio``
    ``rank, record_id, hostname, seq, op ('read'/'write'), offset, length, start, end``
    and ``pthread_id`` (uint64) for logs that record it (DXT_POSIX v2, DXT_MPIIO v3;
    null in the warehouse for older logs)
``heatmap``
    ``module, rank, record_id, bin, nbins, bin_width, bin_start, read_bytes, write_bytes``:
    a row per bin with bytes (a bin read and written 0 is not stored); ``nbins``: the
    record's bin count, its extent
``job_totals``
    one row: ``total_<COUNTER>`` per module counter, the ``darshan-parser --total``
    reduction of the job's records
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

# Darshan module name -> warehouse table name
MODULE_TABLES: dict[str, str] = {
    "POSIX": "posix",
    "MPI-IO": "mpiio",
    "STDIO": "stdio",
    "H5F": "h5f",
    "H5D": "h5d",
    "PNETCDF_FILE": "pnetcdf_file",
    "PNETCDF_VAR": "pnetcdf_var",
    "BG/Q": "bgq",
    "LUSTRE": "lustre",
    "DXT_POSIX": "dxt_posix",
    "DXT_MPIIO": "dxt_mpiio",
    "HEATMAP": "heatmap",
    "DFS": "dfs",
    "DAOS": "daos",
    "MDHIM": "mdhim",
    "APXC": "apxc",
    "APMPI": "apmpi",
}

JOB_COLUMNS: tuple[str, ...] = (
    "source_path",
    "source_format",
    "log_version",
    "lib_version",
    "jobid",
    "uid",
    "exe",
    "nprocs",
    "start_time",
    "end_time",
    "run_time",
    "modules",
    "partial_modules",
    "partial",
    "synthetic",
    "metadata",
    "known_at",
)


def path_text(path: object) -> str:
    """``path`` as the text stored for it (``source_path``): a file name's bytes that are
    not UTF-8 (Python holds them as lone surrogates, which Arrow cannot store) written
    as ``\\xNN``, so such a log is ingested, its name still readable, not failed."""
    import os

    return os.fsencode(path).decode("utf-8", "backslashreplace")


def table_for_module(module: str) -> str:
    """The warehouse table name of a Darshan module (unknown ones: lower-cased)."""
    return MODULE_TABLES.get(module, module.lower().replace("-", "").replace("/", ""))


#: Starts a ``jobs.metadata`` line saying what a reader skipped, doubted or changed.
WARNING_PREFIX = "iosight_warning="


def with_warning(metadata: str, text: str) -> str:
    """``metadata`` with one more warning line (``iosight_warning=<text>``)."""
    base, line = metadata.rstrip(), WARNING_PREFIX + text
    return f"{base}\n{line}" if base else line


def warnings_in(metadata: str) -> list[str]:
    """The texts of the warning lines of ``metadata``, in order."""
    return [
        line.removeprefix(WARNING_PREFIX)
        for line in metadata.splitlines()
        if line.startswith(WARNING_PREFIX)
    ]


def jobs_table(rows: list[dict]) -> pa.Table:
    """``jobs`` rows as a table of :func:`jobs_schema` (a column a row lacks: null).

    ``rows``: one dict (column -> value) per job.
    """
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=jobs_schema())


def jobs_schema() -> pa.Schema:
    """The Arrow schema of the ``jobs`` table every reader fills."""
    import pyarrow as pa

    return pa.schema(
        [
            ("source_path", pa.string()),
            ("source_format", pa.string()),
            ("log_version", pa.string()),
            ("lib_version", pa.string()),
            ("jobid", pa.int64()),
            ("uid", pa.int64()),
            ("exe", pa.string()),
            ("nprocs", pa.int64()),
            ("start_time", pa.float64()),
            ("end_time", pa.float64()),
            ("run_time", pa.float64()),
            ("modules", pa.string()),
            ("partial_modules", pa.string()),
            ("partial", pa.bool_()),
            ("synthetic", pa.bool_()),
            ("metadata", pa.string()),
            ("known_at", pa.float64()),
        ]
    )


# Darshan's access-size histogram buckets (``POSIX_SIZE_READ_0_100`` ... ``_1G_PLUS``)
ACCESS_SIZE_BINS = (
    "0_100",
    "100_1K",
    "1K_10K",
    "10K_100K",
    "100K_1M",
    "1M_4M",
    "4M_10M",
    "10M_100M",
    "100M_1G",
    "1G_PLUS",
)


@dataclass(eq=False)
class LogTables(Mapping[str, "pa.Table | TableChunks"]):
    """What every reader returns: one source's rows, warehouse table name -> Arrow table.

    ``tables``: the tables as read; with ``chunked=True`` a DXT table may be
    :class:`TableChunks` and a module of fixed-size records a :class:`RowBlock`.
    ``totals_row``: the ``job_totals`` row (column -> value) of a reader that reduces
    the records itself (the native 3.x reader), made a table only when
    ``log["job_totals"]`` asks for it: ingest gathers many logs' rows into one table
    instead (a one-row table of ~190 columns costs more to build and to concatenate
    than the row does). Equal to any mapping of equal tables.
    """

    tables: dict[str, pa.Table | TableChunks | RowBlock] = field(default_factory=dict)
    totals_row: dict[str, int | float] | None = None

    def __getitem__(self, name: str) -> pa.Table | TableChunks:
        if name == "job_totals" and name not in self.tables and self.totals_row is not None:
            self.tables[name] = totals_table(self.totals_row)
        return self.tables[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> list[str]:
        names = list(self.tables)
        if self.totals_row is not None and "job_totals" not in self.tables:
            names.append("job_totals")
        return names


class TableChunks:
    """A table given as pieces built one at a time as they are iterated (a big DXT
    region's segments, asked for with ``chunked=True``): a consumer that writes each
    piece away holds one piece, not the table. Iterable once; ``num_rows`` is known
    before.

    ``pieces``: the pieces, built as they are iterated.
    """

    def __init__(self, pieces: Iterable[pa.Table], num_rows: int) -> None:
        self._pieces = iter(pieces)
        self.num_rows = num_rows

    def __iter__(self) -> Iterator[pa.Table]:
        return self._pieces


class RowBlock:
    """A table kept as the reader's rows until a consumer builds it (asked for with
    ``chunked=True``: a 3.x module of fixed-size records as its array of records, a
    3.x log's ``jobs`` row as its dict): ingest joins the blocks of one kind from all
    the logs of a batch and builds one Arrow table, not one per table and log
    (:meth:`join`); ``table()`` builds this block's alone.

    ``kind``: blocks of equal kind join (the module, or ``jobs``); ``rows``: one row
    each, an array's rows or a list's items; ``build``: rows -> the table.
    """

    def __init__(
        self,
        kind: str,
        rows: np.ndarray | list[dict],
        build: Callable[[np.ndarray | list[dict]], pa.Table],
    ) -> None:
        self.kind, self.rows, self.build = kind, rows, build
        self.num_rows = len(rows)
        # bytes held: a dict row's about 88 a value (a Python object, a dict slot)
        self.nbytes = rows.nbytes if not isinstance(rows, list) else 88 * sum(map(len, rows))

    def table(self) -> pa.Table:
        """This block's table."""
        return self.build(self.rows)

    @staticmethod
    def join(blocks: list[RowBlock]) -> pa.Table:
        """One table of the rows of ``blocks`` (of one kind), in order: equal to their
        tables concatenated."""
        import numpy as np

        if len(blocks) == 1:
            rows = blocks[0].rows
        elif isinstance(blocks[0].rows, list):
            rows = [row for b in blocks for row in b.rows]
        else:
            rows = np.concatenate([b.rows for b in blocks])
        return blocks[0].build(rows)


def table_pieces(table: pa.Table | TableChunks) -> Iterable[pa.Table]:
    """A reader's table as the pieces to handle one at a time (a whole table: itself).

    ``table``: a table, or its pieces.
    """
    return table if isinstance(table, TableChunks) else (table,)


def totals_table(totals: dict[str, float]) -> pa.Table:
    """The one-row ``job_totals`` table: int64 columns for int values, float64 for
    floats. The values go into Arrow as two arrays, each column a slice of one
    (an array per column costs 2x more; ``from_pylist`` 3x)."""
    import numpy as np
    import pyarrow as pa

    values = list(totals.values())
    is_float = [isinstance(v, float) for v in values]
    ints = pa.array(np.array([v for v in values if not isinstance(v, float)], np.int64))
    floats = pa.array(np.array([v for v in values if isinstance(v, float)], np.float64))
    cols, at = [], [0, 0]
    for f in is_float:
        cols.append((floats if f else ints).slice(at[f], 1))
        at[f] += 1
    return pa.Table.from_arrays(cols, names=list(totals))
