"""The warehouse: Parquet datasets on disk, DuckDB views over them.

Layout (the tables are those of docs/warehouse.md)::

    <root>/tables/<name>/part-<batch>.parquet   committed data, one file per batch
    <root>/_staging/<batch>/<name>.parquet      written before the commit record
    <root>/_commits/<batch>.json                the commit record (atomic rename)
    <root>/tables/<name>/compact-<batch>-<i>.parquet  a compaction's output
    <root>/tables/<name>/_compacted.json        which compaction outputs are live and
                                                which files they superseded

A batch becomes visible only after its commit record exists; applying a
commit (moving staged files into ``tables/``, deleting replaced rows) is
idempotent, so a writer killed at any moment is finished by the next
:class:`Warehouse` that opens the directory (roll forward), and staging
without a commit record is discarded (roll back). Nothing committed is lost
and no batch is half visible.

Compaction (:mod:`iosight.warehouse._compact`) replaces many small files by a few
sorted ones without a moment where a reader sees both or neither: its outputs are
moved in hidden (a ``compact-`` file is visible only once ``_compacted.json`` lists
it), and one atomic rewrite of ``_compacted.json`` shows them and hides the files they
replace. Those stay on disk for :data:`SUPERSEDED_GRACE_S` so a query that listed them
just before can still read them.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from iosight._errors import IosightError, MissingTableError, check_param
from iosight.warehouse._known import view_query

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from iosight.warehouse._rows import Rows

DEFAULT_WAREHOUSE = "iosight-warehouse"
# how long a writer waits for another one (two overlapping cron ingests both finish)
DEFAULT_LOCK_TIMEOUT = 3600.0
_LOCK_POLL_S = 0.2
# a wait this long (s) is told (``on_lock_wait``): a shorter one, for another writer's
# commit (milliseconds; two overlapping ingests take turns batch by batch), is not
_LOCK_NOTICE_S = 1.0
_TABLES, _STAGING, _COMMITS, _LOCK = "tables", "_staging", "_commits", "_lock"
_STATE = "state"  # small JSON documents a running process publishes (iosight live's status)
_LAYOUT, COMPACT_PREFIX = "_compacted.json", "compact-"
#: seconds a file a compaction replaced stays on disk, hidden, for queries already reading it
SUPERSEDED_GRACE_S = 600.0
#: DuckDB's memory while a command's joins grow with the warehouse (``timeline build``'s
#: chunks, the facility view): beyond it they spill to disk (:meth:`Warehouse.duckdb_settings`)
JOIN_MEMORY = "256MB"
_WORD = re.compile(r"\w+")


def default_path() -> Path:
    """The warehouse path from ``IOSIGHT_WAREHOUSE`` or ``./iosight-warehouse``."""
    return Path(os.environ.get("IOSIGHT_WAREHOUSE", DEFAULT_WAREHOUSE))


def is_warehouse_dir(path: Path) -> bool:
    """Whether ``path`` is an iosight warehouse (its Parquet parts are no sources to ingest)."""
    return (path / _TABLES).is_dir() and (path / _COMMITS).is_dir()


def run_of(path: Path) -> str:
    """The run file ``path`` belongs to: the files a merge's output was cut into
    (``compact-<batch>-<i>-<j>.parquet``, :data:`~iosight.warehouse._compact.PART_BYTES`)
    are one run, compacted and tiered as one; any other file is a run alone."""
    return _run_and_part(path.name)[0]


def part_of(path: Path) -> int:
    """File ``path``'s place in its run (:func:`run_of`): ``j`` of
    ``compact-<batch>-<i>-<j>.parquet``, 0 for a file that is a run alone. Listed by name,
    a run's eleventh file (``-10``) comes before its third (``-2``)."""
    return _run_and_part(path.name)[1]


def _run_and_part(name: str) -> tuple[str, int]:
    """A file's run and its place in it, from its name (:func:`run_of`)."""
    if name.startswith(COMPACT_PREFIX):
        fields = name[len(COMPACT_PREFIX) : -len(".parquet")].split("-")
        if len(fields) == 4 and fields[3].isdigit():
            return "-".join(fields[:3]), int(fields[3])
    return name, 0


def new_batch_id() -> str:
    """A batch id sortable by time and unique across processes."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def stage_tables(
    staging: Path,
    batch: Mapping[str, Iterable[pa.Table]],
    *,
    part: int = 0,
    arrow_schema: bool = True,
    key_values: bool = False,
    compression: str = "zstd",
    statistics: bool | list[str] = True,
    row_group_size: int | None = None,
) -> list[str]:
    """Write a batch's tables as Parquet into ``staging``; return the names written.

    Runs in whichever process produced the rows (ingest workers stage their own
    batches), so the committing process only renames files. A writer may stage
    several ``part``s of one batch to bound its memory. ``arrow_schema=False``
    leaves Arrow's own schema out of the file, so a dictionary-encoded string column
    (ingest's ``job_key``) reads back as the plain string column it stands for; it
    leaves out the table's schema metadata too, unless ``key_values`` writes that as
    the file's key-value metadata (once: Arrow's schema would hold it a second time,
    base64-encoded, and every reader would decode both). ``compression``: Parquet's
    codec (``"none"``: a table rewritten often, and small, writes and reads faster
    without one); ``statistics``: the columns whose min/max each row group records
    (True: all; a reader skips row groups by them); ``row_group_size``: at most this
    many rows per row group (default: Parquet's, a million).

    ``batch``: table name to the Arrow tables of the batch.
    """

    staging.mkdir(parents=True, exist_ok=True)
    written = []
    for name, parts in batch.items():
        parts = [p for p in parts if p is not None and p.num_rows > 0]
        if not parts:
            continue
        table = concat_tables(parts)
        write_parquet(_staged(staging, name, part), table, arrow_schema=arrow_schema,
                      key_values=key_values, compression=compression, statistics=statistics,
                      row_group_size=row_group_size,
                      sequence=name in SEQUENCE_TABLES)  # fmt: skip
        written.append(name)
    return written


def staged_writer(staging: Path, name: str, schema: pa.Schema, part: int = 0) -> pq.ParquetWriter:
    """A writer of table ``name``'s ``part`` in ``staging``, encoded as
    :func:`stage_tables` writes it with its default options, for a part whose rows come
    a slice at a time (a row group each: a writer holds none of them). ``schema``: the
    Arrow schema every slice has. The caller closes it before the commit."""
    staging.mkdir(parents=True, exist_ok=True)
    return parquet_writer(_staged(staging, name, part), schema, sequence=name in SEQUENCE_TABLES)


def _staged(staging: Path, name: str, part: int) -> Path:
    """Where a batch's ``part`` of table ``name`` is staged (:meth:`Warehouse.commit_staged`
    takes every ``name.*.parquet``)."""
    return staging / f"{name}.{part}.parquet"


def concat_tables(tables: list[pa.Table]) -> pa.Table:
    """``tables`` end to end, their types promoted only where their schemas differ (a
    column all null in one log's table, one a later format added): Arrow's permissive
    promotion unifies every schema even when all are equal, 20 ms for 256 one-row tables
    of 88 columns, a tenth of what staging a batch of small logs costs."""
    import pyarrow as pa

    try:
        return pa.concat_tables(tables)
    except pa.ArrowInvalid:  # schemas differ
        return pa.concat_tables(tables, promote_options="permissive")


def write_parquet(
    path: str | os.PathLike | pa.NativeFile,
    table: pa.Table,
    *,
    arrow_schema: bool = True,
    key_values: bool = False,
    compression: str = "zstd",
    statistics: bool | list[str] = True,
    row_group_size: int | None = None,
    sequence: bool = False,
) -> None:
    """Write ``table`` as the Parquet file ``path`` (or into a pyarrow stream), as
    :func:`stage_tables` does (its options are this function's; ``sequence``: encode
    the numbers as :func:`parquet_writer` does for :data:`SEQUENCE_TABLES`)."""
    with parquet_writer(
        path, table.schema, compression=compression, store_schema=arrow_schema,
        write_statistics=statistics, sequence=sequence,
    ) as writer:  # fmt: skip
        writer.write_table(table, row_group_size=row_group_size)
        if key_values and not arrow_schema and table.schema.metadata:
            writer.add_key_value_metadata(table.schema.metadata)


#: tables of long sequences (a row per DXT segment or time bin), sorted so that
#: neighbouring rows' times, offsets and counts are close: :func:`parquet_writer`
#: stores their integers as deltas and their floats byte-split
SEQUENCE_TABLES = frozenset({"dxt_posix", "dxt_mpiio", "heatmap", "dxt_bins"})


def parquet_writer(
    path: str | os.PathLike | pa.NativeFile,
    schema: pa.Schema,
    *,
    sequence: bool = False,
    compression: str = "zstd",
    **options,
) -> pq.ParquetWriter:
    """A Parquet writer of iosight's encodings: dictionary pages for every column but,
    in a ``sequence`` table (:data:`SEQUENCE_TABLES`), the numbers, stored
    DELTA_BINARY_PACKED (integers) and BYTE_STREAM_SPLIT (floats) before zstd: such
    columns then write faster, take less room and scan faster in DuckDB
    (docs/warehouse.md, "Ingest's pace"). A wide counters table (``posix``, 89 columns
    mostly of zeros) stored plain cost a reader its whole row group decoded (Parquet's
    page of a column of zeros is 8 bytes a row plain, a few bits as a dictionary's
    indices): the readers of 26 ingest files of a compaction held 215 MB after a batch
    each, 37 MB as dictionaries, whose compaction output also wrote as fast and read
    four times faster (docs/warehouse.md, "Compaction's readers"); a column of many
    values falls back to plain pages by itself.
    ``options``: further ``pq.ParquetWriter`` arguments."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    use_dictionary: bool | list[str] = True
    if sequence:
        encodings = {
            f.name: "DELTA_BINARY_PACKED" if pa.types.is_integer(f.type) else "BYTE_STREAM_SPLIT"
            for f in schema
            if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
        }
        options["column_encoding"] = encodings
        use_dictionary = [f.name for f in schema if f.name not in encodings]
    return pq.ParquetWriter(
        path, schema, compression=compression, use_dictionary=use_dictionary, **options
    )


class Warehouse:
    """A directory of Parquet tables queried through DuckDB.

    Parameters
    ----------
    path : path-like, default ``$IOSIGHT_WAREHOUSE`` or ``./iosight-warehouse``
        The warehouse directory.
    create : bool, default False
        Make ``path`` a warehouse when it is not one yet (what brings data in does:
        ingest, synth, similarity import): a new or empty folder only, never one that
        holds other files (``ingest logs/ -w logs/`` would mix the warehouse into the
        sources). By default opening anything but an existing warehouse is an error and
        nothing is created on disk, so a mistyped path to read is no new empty warehouse.
    lock_timeout : float, default :data:`DEFAULT_LOCK_TIMEOUT`
        Seconds a write waits for another process that is writing (0: fail at once).
    on_lock_wait : callable, optional
        Called once with a message naming the process that holds the lock, when a
        write has waited a second for it.
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        create: bool = False,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> None:
        check_param(
            "lock_timeout",
            lock_timeout,
            lock_timeout is None or lock_timeout >= 0,
            "a number of seconds >= 0 (0: fail at once)",
        )
        self.path = Path(path) if path is not None else default_path()
        if not is_warehouse_dir(self.path):
            if not create:
                raise IosightError(
                    f"not an iosight warehouse: {self.path} (create one with `iosight ingest`)"
                )
            self._create()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._viewed: dict | None = None  # each table folder's mtime when its view was made
        self._view_names: set[str] = set()  # the views made (at any signature)
        self._fresh: set[str] = set()  # the names looked at since their folder changed
        self._columns: dict[str, list[str]] = {}  # per view (lower case), its columns
        self._settings: dict[str, str] = {}  # DuckDB settings of duckdb_settings blocks open
        self._lock_fh = None
        self._lock_depth = 0
        self.lock_timeout = DEFAULT_LOCK_TIMEOUT if lock_timeout is None else lock_timeout
        self.on_lock_wait = on_lock_wait
        try:
            self.recover()
        except _ReadOnly:
            # a reader of a warehouse it may not write (read-only mount, another user's):
            # recovery is only needed before writing, and a write says why it cannot
            if create:
                raise

    def _create(self) -> None:
        """Make ``path`` a new warehouse: a new or empty folder only; a folder that
        cannot be made (read-only, no permission, a file on the way) is one error line."""
        if self.path.exists() and not self.path.is_dir():
            raise IosightError(f"warehouse path {self.path} exists and is not a directory")
        try:
            others = self._foreign_entries()
            if others:
                raise IosightError(
                    f"warehouse path {self.path} is a folder that holds other files "
                    f"({', '.join(others)}) and is not an iosight warehouse; "
                    "name a new or empty folder for the warehouse"
                )
            self.path.mkdir(parents=True, exist_ok=True)
            for sub in (_TABLES, _STAGING, _COMMITS):
                (self.path / sub).mkdir(exist_ok=True)
        except OSError as err:
            where = f" ({err.filename})" if err.filename not in (None, str(self.path)) else ""
            raise IosightError(
                f"cannot create warehouse {self.path}: {err.strerror or err}{where}"
            ) from None

    def _foreign_entries(self) -> list[str]:
        """Up to three names in ``path`` that a warehouse being made would not hold
        (a creation cut short leaves only its own folders: it may go on)."""
        if not self.path.is_dir():
            return []
        own = {_TABLES, _STAGING, _COMMITS, _LOCK}
        return sorted(e.name for e in os.scandir(self.path) if e.name not in own)[:3]

    def __repr__(self) -> str:
        return f"Warehouse({str(self.path)!r})"

    # ------------------------------------------------------------------ reading
    def tables(self) -> list[str]:
        """Names of the tables that hold at least one committed file."""
        root = self.path / _TABLES
        return sorted(p.name for p in root.iterdir() if p.is_dir() and self.table_entries(p.name))

    def has_table(self, name: str) -> bool:
        """Whether table ``name`` holds any file."""
        return bool(self.table_entries(name))

    def table_files(self, name: str) -> list[Path]:
        """The files that hold table ``name`` now: compaction outputs it made live and
        every other file but those a compaction superseded."""
        return [Path(e.path) for e in self.table_entries(name)]

    def table_entries(self, name: str) -> list[os.DirEntry]:
        """:meth:`table_files` as directory entries, sorted by name: one ``scandir``, no
        ``Path`` a file, and the layout read only where the folder holds one (what a
        caller that lists tables at every update wants).

        ``name``: the table.
        """
        files, has_layout = self._scan(name)
        layout = self.layout(name) if has_layout else None
        live, gone = (set(layout["live"]), set(layout["superseded"])) if layout else ((), ())
        return [
            e
            for e in files
            if (e.name in live if e.name.startswith(COMPACT_PREFIX) else e.name not in gone)
        ]

    def _all_entries(self, name: str) -> list[os.DirEntry]:
        """Every Parquet file in the table's folder, hidden ones included, sorted by name."""
        return self._scan(name)[0]

    def _scan(self, name: str) -> tuple[list[os.DirEntry], bool]:
        """The Parquet files in the table's folder, sorted by name, and whether it holds a
        layout (``_compacted.json``). Read before the layout: a compaction that lands in
        between shows its outputs (moved in before the layout names them) and hides what
        they replace (on disk for :data:`SUPERSEDED_GRACE_S` more)."""
        try:
            with os.scandir(os.path.join(self.path, _TABLES, name)) as entries:
                found = list(entries)
        except (FileNotFoundError, NotADirectoryError):
            return [], False
        files = [e for e in found if e.name.endswith(".parquet") and not e.name.startswith(".")]
        return sorted(files, key=lambda e: e.name), any(e.name == _LAYOUT for e in found)

    def _all_files(self, name: str) -> list[Path]:
        """Every Parquet file in the table's folder, hidden ones included."""
        return [Path(e.path) for e in self._all_entries(name)]

    def layout(self, name: str) -> dict:
        """Table ``name``'s compaction state: ``live`` outputs, ``superseded`` files
        (hidden, deleted after the grace period), ``hidden_at``, when each of them was
        hidden, and ``at``, when it was written."""
        path = self.path / _TABLES / name / _LAYOUT
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return {"live": [], "superseded": [], "at": 0.0}

    #: whether :func:`~iosight.warehouse._jobfiles.for_job` reads a job from only the
    #: files that hold it: a long-lived reader's (the server's), where the index of each
    #: file's keys, read once, serves many pages; a one-shot command would read every key
    #: to answer one job
    key_index = False

    def connect(self, names: Iterable[str] | None = None) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with a view per table: every table's, or those of the tables
        ``names`` lists (what a query reads: a command that reads one table makes one view,
        not a dozen). The views name their files, so they are made again when a write, in
        this process or another, changed the tables (:meth:`tables_signature`): a
        long-lived warehouse object never reads files a commit or compaction replaced."""
        if self._con is None:
            import duckdb

            con = duckdb.connect()
            con.execute("set enable_progress_bar = false")  # iosight reports its own
            con.execute(f"set temp_directory = {_sql_text(_spill_folder())}")
            for name, value in self._settings.items():  # a block's, open across a close()
                con.execute(f"set {name} = {value}")
            self._con, self._viewed, self._view_names, self._fresh = con, None, set(), set()
        signature = dict(self.tables_signature()[1:])
        if signature != self._viewed:
            # only the tables whose folder changed: a commit to one table (a derived one
            # written batch by batch, as ``insights``) leaves the other tables' views be
            old = self._viewed or {}
            self._fresh -= {
                n for n in old.keys() | signature.keys() if old.get(n) != signature.get(n)
            }
            self._viewed = signature
        self._make_views(self._con, self._viewable(names) - self._fresh)
        return self._con

    @contextmanager
    def duckdb_settings(self, **settings: str) -> Iterator[None]:
        """Run the block with DuckDB ``settings`` (name: SQL value) on :meth:`connect`'s
        connection, each set back as it was afterwards (a :meth:`close` in the block: the
        connection opened next has them, and is closed after it); a connection whose
        configuration is locked (``iosight serve``'s, under its own limit) is left as it is.

        What the commands whose DuckDB joins grow with the warehouse run under: a
        ``memory_limit`` for ``timeline build``'s chunks and the facility view of
        ``iosight insights`` (its join of five million findings with a million jobs held
        766 MB, 352 MB under a 256 MB limit); beyond it DuckDB spills to the
        connection's temporary folder (:func:`_spill_folder`)."""
        con = self.connect([])
        locked = con.execute("select current_setting('lock_configuration')").fetchall()[0][0]
        if not settings or locked:
            yield
            return
        before = {
            name: con.execute(f"select current_setting('{name}')::varchar").fetchall()[0][0]
            for name in settings
        }
        outer, self._settings = self._settings, {**self._settings, **settings}
        opened = self._con
        try:
            for name, value in settings.items():
                con.execute(f"set {name} = {value}")
            yield
        finally:
            self._settings = outer
            if self._con is opened:
                for name, value in before.items():
                    con.execute(f"set {name} = {_sql_text(value)}")
            elif self._con is not None:  # opened in the block, with its settings
                self.close()

    def _viewable(self, names: Iterable[str] | None) -> set[str]:
        """The tables of ``names`` (any case, as SQL reads them) that have a folder or a
        view; every such table when ``names`` is None. A name that is neither (a CTE, a
        typo, a path) is left to the query to refuse."""
        try:
            folders = set(os.listdir(self.path / _TABLES))
        except FileNotFoundError:
            folders = set()
        known = folders | self._view_names
        if names is None:
            return known
        lowered = {n.lower() for n in names}
        return {t for t in known if t.lower() in lowered}

    def row_counts(self) -> dict[str, tuple[int, int]]:
        """Rows and files of each table, from the Parquet footers: no view is made and no
        row read (what ``iosight tables`` prints at once on any warehouse)."""
        files = {str(f): name for name in self.tables() for f in self.table_files(name)}
        counts = dict.fromkeys(sorted(set(files.values())), (0, 0))
        if files:
            query = "select file_name, num_rows from parquet_file_metadata(?)"
            for path, rows in self.connect([]).execute(query, [list(files)]).fetchall():
                n, k = counts[files[path]]
                counts[files[path]] = (n + rows, k + 1)
        return counts

    def tables_signature(self) -> tuple:
        """The modification times of ``tables/`` and of each table's folder: any commit,
        compaction or purge changes one of them (files added, renamed or removed), so a
        long-lived reader compares it to know when to make its views again."""
        root = self.path / _TABLES
        try:
            with os.scandir(root) as entries:
                folders = sorted((e.name, e.stat().st_mtime_ns) for e in entries if e.is_dir())
            return (root.stat().st_mtime_ns, *folders)
        except FileNotFoundError:
            return ()

    def _make_views(self, con: duckdb.DuckDBPyConnection, names: Iterable[str]) -> None:
        """(Re)make the view of each table in ``names`` over the files it reads now; drop
        it where the table holds none (a name that is no table: the query says so)."""
        for name in names:
            self._columns.pop(name.lower(), None)  # a describe binds every footer again
            files = self.table_files(name)
            if files:
                rows = parquet_rows(files)
                con.execute(f'create or replace view "{name}" as {view_query(con, name, rows)}')
                self._view_names.add(name)
            elif name in self._view_names:
                con.execute(f'drop view if exists "{name}"')
                self._view_names.discard(name)
            self._fresh.add(name)

    def close(self) -> None:
        """Close the DuckDB connection, which frees all DuckDB holds (its buffers, the
        footers it parsed); the next query opens a new one, with the views it reads (a
        key range's scope after its timeline chunk, a commit that replaced a file)."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def sql(self, query: str, params: list | None = None) -> pd.DataFrame:
        """Run DuckDB SQL over the warehouse views and return a DataFrame.

        ``query``: DuckDB SQL over the tables' views (``jobs``, ``posix``, ...); ``params``: the
        values of its ``?`` placeholders, in order.
        """
        return self._run(query, params, lambda result: result.df())

    def rows(self, query: str, params: list | None = None) -> Rows:
        """Run DuckDB SQL over the warehouse views and return plain Python :class:`Rows`
        (no pandas or pyarrow import: what a command that prints a result needs).

        ``query``: DuckDB SQL over the tables' views (``jobs``, ``posix``, ...); ``params``: the
        values of its ``?`` placeholders, in order.
        """
        from iosight.warehouse._rows import Rows

        return self._run(query, params, Rows.fetch)

    def arrow(self, query: str, params: list | None = None) -> pa.Table:
        """Run DuckDB SQL over the warehouse views and return an Arrow table.

        ``query``: DuckDB SQL over the tables' views (``jobs``, ``posix``, ...); ``params``: the
        values of its ``?`` placeholders, in order.
        """
        # a relation's Arrow, where a DB-API result's copies every row once more
        return self._run(query, params, lambda result: result.to_arrow_table(), lazy=True)

    def batches(self, query: str, rows: int):
        """A ``pyarrow.RecordBatchReader`` of ``query``'s rows, streamed by DuckDB in
        batches of up to ``rows`` rows (never the whole result held), with only the views
        of the tables it reads made.

        ``query``: DuckDB SQL over the tables' views; ``rows``: rows per batch.
        """
        return self.connect(self._reads(query)).sql(query).to_arrow_reader(rows)

    def _run(self, query: str, params: list | None, fetch: Callable, lazy: bool = False):
        """``fetch`` the rows of ``query`` from its executed result (or, ``lazy``, from a
        relation of it); DuckDB's errors, raised when the query is
        planned (unknown table, bad syntax) or only while it runs (a cast that fails,
        ``error()``), become one :class:`IosightError` line with DuckDB's message."""
        import duckdb

        try:
            # executed, not made a relation, unless asked: a relation binds the query once
            # more before it runs (3 ms of each of a job page's wide queries)
            con = self.connect(self._reads(query))
            params = params or None
            result = con.sql(query, params=params) if lazy else con.execute(query, params)
            if result is None:  # no statement: an empty query, or only a comment
                raise IosightError("the query holds no statement")
            return fetch(result)
        except duckdb.InterruptException:
            raise  # a caller's deadline interrupted it: the caller says so
        except duckdb.CatalogException as err:
            tables = ", ".join(self.tables()) or "none"
            raise IosightError(f"{_duckdb_message(err)} Tables here: {tables}") from None
        except duckdb.Error as err:
            raise IosightError(_duckdb_message(err)) from None

    def _reads(self, query: str) -> frozenset[str] | None:
        """The tables ``query`` reads, whose views :meth:`connect` makes (None: all)."""
        return _table_names(query)

    def table(
        self, name: str, columns: list[str] | None = None, where: str | None = None
    ) -> pa.Table:
        """One table as Arrow, optionally only some columns and rows (SQL ``where``).

        ``name``: the table; ``columns``: the columns to read (default: all).
        """
        self.require(name)
        cols = ", ".join(f'"{c}"' for c in columns) if columns else "*"
        query = f'select {cols} from "{name}"' + (f" where {where}" if where else "")
        return self.arrow(query)

    def jobs(self, where: str | None = None) -> pd.DataFrame:
        """The ``jobs`` table as a DataFrame, optionally filtered by SQL ``where``."""
        return self.table("jobs", where=where).to_pandas()

    def may_hold(self, name: str) -> bool:
        """Whether table ``name`` may hold rows of the jobs this reader is of: always, for
        the whole warehouse (a reader of some jobs, :func:`~iosight.warehouse.for_job`,
        knows of tables that hold none)."""
        return True

    def require(self, name: str, hint: str = "") -> None:
        """Raise a clear error when ``name`` has not been written yet.

        ``hint``: what to run to write it, added to the error (default: the table's own hint).
        """
        if not self.has_table(name):
            raise MissingTableError(name, hint or _HINTS.get(name, ""))

    def column_names(self, name: str) -> list[str]:
        """The columns of table ``name`` (it must exist), in order."""
        self.require(name)
        con = self.connect([name])  # made again since the last call: its columns forgotten
        if name.lower() not in self._columns:
            described = con.execute(f'describe "{name}"').fetchall()
            self._columns[name.lower()] = [r[0] for r in described]
        return list(self._columns[name.lower()])

    # ------------------------------------------------------------------ writing
    def write_table(self, name: str, table: pa.Table, *, mode: str = "replace") -> None:
        """Write a derived table atomically: ``mode`` is ``"replace"`` or ``"append"``.

        ``name``: the derived table written; ``table``: its rows.
        """
        if mode not in ("replace", "append"):
            raise ValueError(f"mode must be 'replace' or 'append', not {mode!r}")
        self.commit({name: [table]}, replace_tables=[name] if mode == "replace" else [])

    def commit(
        self,
        batch: Mapping[str, Iterable[pa.Table]],
        *,
        delete_keys: Mapping[str, Iterable[str] | Mapping[str, Iterable[str]]] | None = None,
        replace_tables: Iterable[str] = (),
        key_column: str = "job_key",
        drop_files: Mapping[str, Iterable[str]] | None = None,
    ) -> str:
        """Commit several tables as one atomic batch and return its id.

        ``batch`` maps table names to Arrow tables (concatenated, schemas unified).
        ``delete_keys`` removes rows whose ``key_column`` is in the given set from
        the named tables first (``--force`` re-ingest); a value may instead map
        another column name to its keys. ``replace_tables`` drops all earlier
        files of those tables, ``drop_files`` the named files of tables.
        """
        batch_id = new_batch_id()
        with self.writer_lock():
            written = stage_tables(self.staging_dir(batch_id), batch)
            self.commit_staged(
                batch_id,
                written,
                delete_keys=delete_keys,
                replace_tables=replace_tables,
                key_column=key_column,
                drop_files=drop_files,
            )
        return batch_id

    def staging_dir(self, batch_id: str) -> Path:
        """Where a writer (possibly another process) stages the files of a batch.

        ``batch_id``: the batch's id (:func:`new_batch_id`).
        """
        return self.path / _STAGING / batch_id

    def commit_staged(
        self,
        batch_id: str,
        tables: Iterable[str],
        *,
        delete_keys: Mapping[str, Iterable[str] | Mapping[str, Iterable[str]]] | None = None,
        replace_tables: Iterable[str] = (),
        key_column: str = "job_key",
        drop_files: Mapping[str, Iterable[str]] | None = None,
        compaction: Mapping[str, Mapping[str, list[str]]] | None = None,
    ) -> None:
        """Make a batch staged by :func:`stage_tables` visible, atomically.

        ``drop_files`` names files of tables (as :meth:`table_files` lists them) that the
        batch replaces: they go when it is applied, so a writer rewrites a few files of a
        table (the timeline's runs of bins) without touching the others.
        ``compaction`` maps a table to the ``outputs`` a compaction staged under
        ``<staging>/compact/<table>/`` and the files they ``replace``.

        ``batch_id``: the batch :meth:`staging_dir` staged; ``tables``: the tables it staged;
        ``delete_keys``: per table, the keys (of ``key_column``, or per column) whose old rows
        the batch replaces; ``replace_tables``: tables the batch replaces whole; ``key_column``:
        the column ``delete_keys`` lists values of when it gives them as a list.
        """
        record = {
            "batch": batch_id,
            "tables": list(tables),
            "delete_keys": {
                name: {c: sorted(set(k)) for c, k in keys.items()}
                if isinstance(keys, Mapping)
                else {key_column: sorted(set(keys))}
                for name, keys in (delete_keys or {}).items()
            },
            "replace_tables": sorted(set(replace_tables)),
            "drop_files": {name: sorted(set(files)) for name, files in (drop_files or {}).items()},
            "compaction": {name: dict(plan) for name, plan in (compaction or {}).items()},
        }
        with self.writer_lock():
            _write_key_files(self.staging_dir(batch_id), compaction or {})
            _crash_point("staged")  # the batch's files are written, its commit is not
            _atomic_write_text(self.path / _COMMITS / f"{batch_id}.json", json.dumps(record))
            _crash_point("published")  # committed, its files not yet moved into tables/
            self._apply(record)
            _crash_point("applied")  # between this commit and the next

    def replace_file(self, name: str, file: str, table: pa.Table, **options) -> None:
        """Replace table ``name``'s file ``file`` (one it lists now, or a new name) by
        ``table`` (written as :func:`write_parquet` writes, with ``options``), with one
        rename and no commit record: what a writer that rewrites a single file of a
        table wants (a timeline update: no record, staging folder or second rename).

        The file is encoded in memory, written into the staging folder in one write,
        flushed to disk (``fsync``) and renamed over ``file``, under the write lock. A
        reader, a process killed at any moment, and (the bytes being on disk before the
        name is) a machine that goes down see the old file or the new one, whole, never
        both or a part; a file left in staging by a writer killed before the rename is
        removed by the next :class:`Warehouse` that opens the directory (it was never
        visible).
        """
        import pyarrow as pa

        staged = self.path / _STAGING / f"{new_batch_id()}.{name}.parquet"
        sink = pa.BufferOutputStream()  # one write: Parquet's writer writes page by page
        write_parquet(sink, table, **options)
        data = sink.getvalue()
        with self.writer_lock():
            fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            _crash_point("staged")  # written and on disk, not visible
            os.replace(staged, os.path.join(self.path, _TABLES, name, file))
            _crash_point("applied")
            self.close()

    @contextmanager
    def writer_lock(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the warehouse's write lock (re-entrant in this process).

        One writer at a time, so commits never interleave and readers only run
        recovery when no writer holds the lock (its staging is in progress, not
        abandoned). A writer waits up to ``timeout`` seconds (default
        :attr:`lock_timeout`) for another one, like SQLite's busy timeout, telling
        :attr:`on_lock_wait` once which process it waits for (after a second: a wait for
        another writer's commit says nothing), then fails clearly.
        """
        if self._lock_depth:
            self._lock_depth += 1
        else:
            self._lock_fh = self._acquire(self.lock_timeout if timeout is None else timeout)
            self._lock_depth = 1
        try:
            yield
        finally:
            self._lock_depth -= 1
            if not self._lock_depth:
                fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
                self._lock_fh.close()
                self._lock_fh = None

    def check_writable(self) -> None:
        """Fail now, in one line, when this process cannot write the warehouse (a
        read-only mount, no permission): every writing command checks this before its
        work, instead of computing for minutes and failing at the commit."""
        self._open_lock().close()
        for folder in (self.path, self.path / _TABLES, self.path / _STAGING, self.path / _COMMITS):
            if not os.access(folder, os.W_OK):
                raise _ReadOnly(f"cannot write warehouse {self.path}: {folder} is not writable")

    def _open_lock(self):
        """The lock file opened to write (unlocked): a warehouse this process cannot
        write fails here, with one line."""
        try:
            # bytes, unbuffered: no text or buffer layer to build (nor its seek and
            # terminal check, two system calls a commit)
            return open(self.path / _LOCK, "ab+", buffering=0)
        except OSError as err:
            raise _ReadOnly(
                f"cannot write warehouse {self.path}: its lock file: {err.strerror or err}"
            ) from None

    def _acquire(self, timeout: float):
        """The lock file, locked by this process and naming it; waits up to ``timeout`` s."""
        fh = self._open_lock()
        start = time.monotonic()
        deadline = start + timeout
        told = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                expired = time.monotonic() >= deadline
                # the holder is shown once and at the deadline: read the lock file only then
                due = not told and time.monotonic() - start >= _LOCK_NOTICE_S
                holder = self._lock_holder() if expired or due else None
                if expired:
                    fh.close()
                    raise _LockTimeout(
                        f"warehouse {self.path} is being written by {holder}; still locked "
                        f"after {timeout:g} s (wait longer with --lock-timeout)"
                    ) from None
                if due and self.on_lock_wait is not None:
                    self.on_lock_wait(
                        f"warehouse {self.path} is being written by {holder}; "
                        f"waiting up to {timeout:g} s for it to finish"
                    )
                told = told or due
                time.sleep(min(_LOCK_POLL_S, max(0.0, deadline - time.monotonic())))
        _write_holder(fh.fileno(), f"{os.getpid()} {socket.gethostname()}")
        return fh

    def _lock_holder(self) -> str:
        """Who holds the write lock, as its holder wrote it ("process 12 on host")."""
        try:
            pid, host = (self.path / _LOCK).read_text().split()[:2]
        except (OSError, ValueError):
            return "another process"
        return f"process {pid} on {host}"

    def recover(self) -> None:
        """Finish commits left by a killed writer; discard uncommitted staging.

        Skipped while another process holds the write lock (its work is live). Opening
        a warehouse this process may not write (``create=False``) skips it too.
        """
        try:
            with self.writer_lock(timeout=0):
                self._recover()
        except _LockTimeout:
            return

    def _recover(self) -> None:
        commits = self.path / _COMMITS
        for rec_path in sorted(commits.glob("*.json")):
            self._apply(json.loads(rec_path.read_text()))
        for tmp in commits.glob("*.tmp"):
            tmp.unlink()
        staging = self.path / _STAGING
        for stale in staging.iterdir() if staging.is_dir() else ():
            if stale.is_file():  # a file of replace_file: never visible
                stale.unlink(missing_ok=True)
            elif not (commits / f"{stale.name}.json").exists():
                shutil.rmtree(stale, ignore_errors=True)

    def _apply(self, record: dict) -> None:
        batch_id = record["batch"]
        mine = f"part-{batch_id}-"
        staging = self.staging_dir(batch_id)
        # staged files are named TABLE.PART.parquet
        staged = [
            (src, *src.removesuffix(".parquet").rsplit(".", 1)) for src in _staged_files(staging)
        ]
        # the views of the tables it writes are made again at the next read (a folder's
        # mtime may not change between two quick commits); the others' are kept
        self._fresh -= {
            *record["replace_tables"], *record.get("drop_files", {}), *record["delete_keys"],
            *record.get("compaction", {}), *(name for _, name, _ in staged),
        }  # fmt: skip
        for name in record["replace_tables"]:
            for f in self._all_files(name):
                if not f.name.startswith(mine):
                    _unlink_with_keys(str(f))
            (self.path / _TABLES / name / _LAYOUT).unlink(missing_ok=True)
        for name, files in record.get("drop_files", {}).items():  # older records lack it
            for file in files:
                if not file.startswith(mine):
                    _unlink_with_keys(os.path.join(self.path, _TABLES, name, file))
        for name, by_column in record["delete_keys"].items():
            for column, keys in by_column.items():
                self._delete_rows(name, column, set(keys), keep=mine)
        for src, name, part in staged:
            dest = os.path.join(self.path, _TABLES, name)
            os.makedirs(dest, exist_ok=True)
            _move_with_keys(os.path.join(staging, src), os.path.join(dest, f"{mine}{part}.parquet"))
        for name, plan in record.get("compaction", {}).items():
            self._apply_compaction(staging / "compact" / name, name, plan)
        _remove_dir(staging)
        (self.path / _COMMITS / f"{batch_id}.json").unlink(missing_ok=True)

    def _apply_compaction(self, staged: Path, name: str, plan: Mapping[str, list[str]]) -> None:
        """Move a compaction's outputs in (hidden), then show them and hide what they
        replace with one atomic write of the table's layout; idempotent."""
        dest = self.path / _TABLES / name
        for out in plan["outputs"]:
            if (staged / out).exists():
                _move_with_keys(str(staged / out), str(dest / out))
        _crash_point("compaction-moved")  # outputs in place, still hidden
        layout = self.layout(name)
        replaced = set(plan["replaces"])
        live = [f for f in layout["live"] if f not in replaced]
        live += [f for f in plan["outputs"] if f not in live]
        now, hidden = time.time(), _hidden_at(layout)
        hidden |= {f: now for f in replaced if f not in hidden}  # a replay keeps the first
        text = json.dumps(
            {"live": live, "superseded": sorted(hidden), "at": now, "hidden_at": hidden}
        )
        _atomic_write_text(dest / _LAYOUT, text)

    def write_state(self, name: str, document: dict) -> None:
        """Publish ``document`` as the state ``name`` (``iosight live``'s status: its
        counters, lag and backlog, which ``iosight serve``'s ``/metrics`` reads): one
        atomic replace, so a reader sees the old document or the new one."""
        folder = self.path / _STATE
        folder.mkdir(exist_ok=True)
        _atomic_write_text(folder / f"{name}.json", json.dumps(document))

    def read_state(self, name: str) -> dict | None:
        """The state ``name`` last published (:meth:`write_state`), None if none is."""
        try:
            return json.loads((self.path / _STATE / f"{name}.json").read_text())
        except FileNotFoundError:
            return None

    def purge_superseded(self, name: str, grace: float = SUPERSEDED_GRACE_S) -> int:
        """Delete the files a compaction of ``name`` hid at least ``grace`` seconds ago
        (no query still reads them); return how many. Call under the write lock.

        Each file's own hiding time counts, not the table's last compaction: a table
        compacted more often than ``grace`` (every ingest of a busy archive) still
        frees what it replaced."""
        layout = self.layout(name)
        hidden, now = _hidden_at(layout), time.time()
        due = {f for f, at in hidden.items() if now - at >= grace}
        if not due:
            return 0
        folder = self.path / _TABLES / name
        for f in due:
            _unlink_with_keys(str(folder / f))
        kept = {f: at for f, at in hidden.items() if f not in due}
        layout |= {"superseded": sorted(kept), "hidden_at": kept}
        _atomic_write_text(folder / _LAYOUT, json.dumps(layout))
        return len(due)

    def _delete_rows(self, name: str, column: str, keys: set[str], keep: str) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        if not keys:
            return
        value_set = pa.array(sorted(keys))
        for f in self.table_files(name):
            if f.name.startswith(keep) or not _holds_any(f, column, value_set):
                continue
            table = pq.read_table(f)
            kept = table.filter(pc.invert(pc.is_in(table[column], value_set=value_set)))
            if kept.num_rows == 0:
                _unlink_with_keys(str(f))
                continue
            tmp = f.with_name(f.name + ".tmp")
            pq.write_table(kept, tmp, compression="zstd")
            os.replace(tmp, f)
            _write_keys([(name, str(f))])  # the old sidecar no longer matches it


def _hidden_at(layout: dict) -> dict[str, float]:
    """When each superseded file of a table's ``layout`` was hidden; a layout written
    before iosight kept the time per file gives its files the layout's own time."""
    at = layout.get("hidden_at", {})
    return {f: at.get(f, layout["at"]) for f in layout["superseded"]}


_HOLDER_BYTES = 128  # the lock file's line, padded: rewritten in place, never truncated


def _write_holder(fd: int, holder: str) -> None:
    """Write ``holder`` as the lock file's first line, padded to :data:`_HOLDER_BYTES`,
    over what it held (the file is opened to append, so that a missing one is made):
    ext4 flushes a file truncated to nothing when it is closed, at every commit."""
    line = holder.encode().ljust(_HOLDER_BYTES - 1) + b"\n"
    if os.pread(fd, _HOLDER_BYTES + 1, 0) == line:  # ours already (this process wrote it
        return  # last): a write would dirty the file again, some 0.2 ms once written back
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_APPEND)
    os.pwrite(fd, line, 0)
    if os.fstat(fd).st_size > len(line):  # a longer line of another writer's host name
        os.ftruncate(fd, len(line))


def _staged_files(staging: Path) -> list[str]:
    """The names of the Parquet files staged in ``staging``, sorted (none: none)."""
    try:
        with os.scandir(staging) as entries:
            return sorted(e.name for e in entries if e.name.endswith(".parquet"))
    except FileNotFoundError:
        return []


def _write_key_files(staging: Path, compaction: Mapping[str, Mapping[str, list[str]]]) -> None:
    """Write the key sidecar (:mod:`iosight.warehouse._keyfiles`) of each file staged in
    ``staging``: the batch's and the ``compaction``'s outputs (under ``compact/<table>/``).
    Written before the commit record, so a committed file has its sidecar from the
    moment it is visible, and a batch rolled back takes its sidecars with its staging."""
    staged = [(src.rsplit(".", 2)[0], str(staging / src)) for src in _staged_files(staging)]
    staged += [
        (name, str(staging / "compact" / name / out))
        for name, plan in compaction.items()
        for out in plan["outputs"]
    ]
    _write_keys(staged)


def _write_keys(files: list[tuple[str, str]]) -> None:
    """Write the key sidecar of each (table, data file) of ``files``."""
    if files:
        from iosight.warehouse._keyfiles import write_keys

        write_keys(files)


def _move_with_keys(src: str, dest: str) -> None:
    """Move the data file ``src`` to ``dest``, its key sidecar first: a writer killed
    between the two leaves a sidecar without its file (the roll forward moves the file;
    a sidecar is only read beside its file), never a file whose sidecar is elsewhere."""
    from iosight.warehouse._keyfiles import sidecar

    try:
        os.replace(sidecar(src), sidecar(dest))
    except FileNotFoundError:
        pass
    os.replace(src, dest)


def _unlink_with_keys(path: str) -> None:
    """Delete the data file ``path`` (if there), then its key sidecar."""
    from iosight.warehouse._keyfiles import remove_keys

    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    remove_keys(path)


def _remove_dir(path: Path) -> None:
    """Remove the folder ``path`` and what it holds, if anything (an applied batch's
    staging is empty: one ``rmdir``, where ``rmtree`` takes a dozen system calls)."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def _holds_any(path: Path, column: str, value_set: pa.Array) -> bool:
    """Whether the Parquet file ``path`` has a row whose ``column`` is in ``value_set``,
    reading that column alone: a compacted file holds a whole table, and most deletes
    (insights of new jobs) match nothing, so reading every column of it each time made
    a follow's memory grow with the table."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as file:
        if column not in file.schema_arrow.names:
            return False
        keys = file.read(columns=[column], use_threads=False)[column]
    return pc.any(pc.is_in(keys, value_set=value_set)).as_py()


@functools.lru_cache(maxsize=512)
def _table_names(query: str) -> frozenset[str] | None:
    """The tables ``query`` reads, as DuckDB's parser lists them (CTEs left out). DuckDB
    binds the query to list them and fails where that needs the tables (a ``using`` or
    ``natural`` join, a ``?`` parameter): then every word of its SQL, strings and comments
    left out (a superset: one view too many costs milliseconds, a view of every table a
    second on a large warehouse). None (every table) where neither can say, which the
    query then reports. Remembered per query text: a page runs the same queries for every
    job, and DuckDB takes about a millisecond to answer."""
    import duckdb

    try:
        return frozenset(duckdb.get_table_names(query))
    except duckdb.Error:
        pass
    try:
        tokens = duckdb.tokenize(query)
    except duckdb.Error:
        return None
    words = (duckdb.token_type.identifier, duckdb.token_type.keyword)
    bounds = [start for start, _ in tokens] + [len(query)]
    return frozenset(
        word.lower()
        for (start, kind), end in zip(tokens, bounds[1:], strict=True)
        if kind in words
        for word in _WORD.findall(query, start, end)
    )


def _spill_folder() -> str:
    """A temporary folder of this connection's own for what DuckDB spills beyond its
    memory limit: DuckDB makes it at the first spill and removes it when the connection
    closes (its default for an in-memory database, ``.tmp``, lands in the user's working
    directory), and cannot switch folders once it has spilled."""
    import tempfile

    name = f"iosight-spill-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    return os.path.join(tempfile.gettempdir(), name)


def _sql_text(path: str | Path) -> str:
    """``path`` (or any text) as a quoted SQL string literal."""
    return "'" + str(path).replace("'", "''") + "'"


def parquet_rows(paths: Iterable[str | Path], united: bool = True) -> str:
    """DuckDB's ``read_parquet`` of the files ``paths``, their columns united by name
    (``union_by_name``: DuckDB opens every file to bind the query) unless ``united`` is
    False (files of one schema, read one after another)."""
    files = ", ".join(_sql_text(p) for p in paths)
    return f"read_parquet([{files}]{', union_by_name=true' if united else ''})"


def _duckdb_message(err: Exception) -> str:
    """DuckDB's message on one line, without the echo of the query and its caret."""
    lines = [ln.strip() for ln in str(err).splitlines()]
    kept = [ln for ln in lines if ln and not ln.startswith("LINE ") and set(ln) != {"^"}]
    return " ".join(kept) or type(err).__name__


_CRASH_ENV = "IOSIGHT_TEST_CRASH_AT"
_crash_counts: dict[str, int] = {}


def _crash_point(point: str) -> None:
    """Test hook: SIGKILL this process the N-th time it reaches ``point`` when
    ``IOSIGHT_TEST_CRASH_AT=point:N``, so the kill-and-resume tests kill at an exact
    step of the commit protocol instead of racing a timer. No effect otherwise."""
    spec = os.environ.get(_CRASH_ENV)
    if not spec or spec.partition(":")[0] != point:
        return
    _crash_counts[point] = _crash_counts.get(point, 0) + 1
    if _crash_counts[point] == int(spec.partition(":")[2] or 1):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


class _LockTimeout(IosightError):
    """Another process held the write lock for longer than this writer would wait."""


class _ReadOnly(IosightError):
    """The warehouse cannot be written here (its lock file cannot be opened to write)."""


_HINTS = {
    "jobs": "ingest logs first: 'iosight ingest PATH --warehouse WH'",
    "timeline": "build it first: 'iosight timeline build --warehouse WH'",
}
