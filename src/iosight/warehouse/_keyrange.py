"""Read the jobs of one range of keys from only the files whose keys overlap it.

DuckDB keeps, for the life of a connection, about 1 KB for each Parquet column chunk
(one column of one row group) of every file a view lists (docs/warehouse.md, "What
still grows"), so a reader that takes the warehouse a key range at a time (``timeline
build``'s chunks) held the footers of every file of every table it read: 231 MB of
``posix`` and ``heatmap`` at a million jobs, ten times that at ten million. Compaction
now cuts its outputs into runs of files of narrow key ranges
(:data:`~iosight.warehouse._compact.PART_BYTES`), so a key range overlaps a few files
of each run. :class:`KeyRangeScope` is a reader whose views list only those (and every
file whose range is not known: ingest's, which span the whole range until merged), on a
DuckDB connection of its own that :meth:`~Warehouse.close` closes, which frees the
footers it read. Its views hold the whole table's columns (typed nulls where its files
lack one), so a query answers exactly as over the whole table restricted to the range.

A file's key range is read once per file (its footer's ``job_key`` statistics, by
pyarrow, which frees the footer) and kept by name, size and modification time:
committed files never change.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from iosight.warehouse._footer import arrow_schema, leaf_paths
from iosight.warehouse._keyfiles import KEY
from iosight.warehouse._known import part_view_query, view_query
from iosight.warehouse._store import Warehouse, parquet_rows

if TYPE_CHECKING:
    import duckdb


def for_key_range(warehouse: Warehouse, lo: str | None, hi: str | None) -> KeyRangeScope:
    """A reader of ``warehouse`` for queries of the jobs with ``lo <= job_key < hi``
    that lists only the files whose keys can lie in it; :meth:`KeyRangeScope.close` it
    when done.

    ``warehouse``: the warehouse read; ``lo``, ``hi``: the range's first key and the key
    past it (None: open at that end).
    """
    return KeyRangeScope(warehouse, lo, hi, _ranges_of(warehouse))


def table_columns(warehouse: Warehouse, name: str) -> list[tuple[str, str]]:
    """Table ``name``'s columns and DuckDB types over all its files, as its view has
    them, read on a connection closed at once (the footers it parses are not kept).

    ``warehouse``: the warehouse; ``name``: the table.
    """
    return _ranges_of(warehouse).columns(name, warehouse.table_entries(name))


def _ranges_of(warehouse: Warehouse) -> FileRanges:
    """The warehouse object's :class:`FileRanges`, made on first use."""
    if "_file_ranges" not in warehouse.__dict__:
        warehouse.__dict__["_file_ranges"] = FileRanges()
    return warehouse.__dict__["_file_ranges"]


class FileRanges:
    """Each file's ``job_key`` range and schema, read once from its footer, and each
    table's columns."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple, str | None, str | None, str]] = {}
        self._columns: dict[str, tuple[tuple, list[tuple[str, str]]]] = {}

    def _facts(self, entry: os.DirEntry) -> tuple[tuple, str | None, str | None, str]:
        """The file's stamp, least and greatest ``job_key`` and Parquet schema."""
        st = entry.stat()
        stamp = (st.st_size, st.st_mtime_ns)
        kept = self._files.get(entry.path)
        if kept is None or kept[0] != stamp:
            kept = self._files[entry.path] = (stamp, *_footer_facts(entry.path))
        return kept

    def key_range(self, entry: os.DirEntry) -> tuple[str | None, str | None]:
        """The least and greatest ``job_key`` of the file (None where not known)."""
        return self._facts(entry)[1:3]

    def overlaps(self, entry: os.DirEntry, lo: str | None, hi: str | None) -> bool:
        """Whether the file may hold a key in ``[lo, hi)``."""
        least, most = self.key_range(entry)
        if least is None or most is None:
            return True
        return (lo is None or most >= lo) and (hi is None or least < hi)

    def rows(self, entries: list[os.DirEntry]) -> str | None:
        """The ``read_parquet`` of the files ``entries`` (None for none), united by name
        only where their schemas differ.

        DuckDB's ``union_by_name`` opens every file to bind a query and holds their
        footers until it ends; files of one schema are read one after another, alike
        either way (docs/warehouse.md, "What a chunk lists")."""
        if not entries:
            return None
        schemas = {self._facts(e)[3] for e in entries}
        return parquet_rows([e.path for e in entries], united=len(schemas) > 1)

    def columns(self, name: str, entries: list[os.DirEntry]) -> list[tuple[str, str]]:
        """Table ``name``'s columns and types over the files ``entries`` (its view's).

        DuckDB unites them by name over the first file of each distinct schema (its Arrow
        schema and Parquet physical types, :func:`_footer_facts`), in the files' order:
        the same columns, order and types as over every file, for footers read one at a
        time. DuckDB reading every footer of the table at once
        (a million jobs: 389 files of ``heatmap``) grew the heap of ``timeline build``
        to some 240 MB before its first chunk, and glibc kept the pages of that heap
        that each later query touched (docs/warehouse.md, "What a chunk of the million
        held, taken apart")."""
        files = tuple(e.path for e in entries)
        known, got = self._columns.get(name, ((), []))
        if known != files:
            for gone in set(known) - set(files):  # merged away: not kept for ever
                self._files.pop(gone, None)
            firsts: dict[str, str] = {}
            for entry in entries:
                firsts.setdefault(self._facts(entry)[3], entry.path)
            got = _united_columns(name, list(firsts.values()))
            self._columns[name] = (files, got)
        return got


def _united_columns(name: str, files: list[str]) -> list[tuple[str, str]]:
    """Table ``name``'s columns and DuckDB types over ``files`` united by name, on a
    DuckDB connection closed at once (the footers it parses are not kept)."""
    import duckdb

    con = duckdb.connect()
    try:
        query = view_query(con, name, parquet_rows(files))
        return [(r[0], r[1]) for r in con.execute(f"describe {query}").fetchall()]
    finally:
        con.close()


def _footer_facts(path: str) -> tuple[str | None, str | None, str]:
    """The least and greatest ``job_key`` in the file's row group statistics (None where
    not known) and its schema as text: its Arrow schema and each column's Parquet
    physical type (what DuckDB types its columns from)."""
    import pyarrow.parquet as pq

    meta = pq.read_metadata(path)
    names = leaf_paths(meta)
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    physical = [groups[0].column(i).physical_type for i in range(len(names))] if groups else []
    text = arrow_schema(path, meta).to_string(show_field_metadata=False, show_schema_metadata=False)
    schema = sys.intern(f"{text}\n{' '.join(physical)}")
    if KEY not in names or not meta.num_row_groups:
        return None, None, schema
    at = names.index(KEY)
    least = most = None
    for group in groups:
        stats = group.column(at).statistics
        if stats is None or not stats.has_min_max:
            return None, None, schema
        least = stats.min if least is None else min(least, stats.min)
        most = stats.max if most is None else max(most, stats.max)
    return least, most, schema


class KeyRangeScope(Warehouse):
    """A reader of ``parent`` whose views hold only the files whose keys may lie in
    ``[lo, hi)``, with the whole table's columns, on a DuckDB connection of its own.
    Made by :func:`for_key_range`; anything else is the parent's."""

    def __init__(
        self, parent: Warehouse, lo: str | None, hi: str | None, index: FileRanges
    ) -> None:
        self.path, self._parent, self.lo, self.hi, self._index = parent.path, parent, lo, hi, index
        self._con: duckdb.DuckDBPyConnection | None = None
        self._viewed: dict | None = None
        self._view_names: set[str] = set()
        self._fresh: set[str] = set()
        self._columns: dict[str, list[str]] = {}
        self._settings: dict[str, str] = {}

    def __getattr__(self, name: str):
        return getattr(self._parent, name)

    def tables(self) -> list[str]:
        """The parent's tables: one without a file in the range is there, empty."""
        return self._parent.tables()

    def has_table(self, name: str) -> bool:
        """Whether the parent holds table ``name``."""
        return self._parent.has_table(name)

    def table_entries(self, name: str) -> list[os.DirEntry]:
        """The parent's files of ``name`` that may hold a key of the range."""
        entries = self._parent.table_entries(name)
        return [e for e in entries if self._index.overlaps(e, self.lo, self.hi)]

    def _make_views(self, con: duckdb.DuckDBPyConnection, names) -> None:
        """Each table's view over its files of the range, under the whole table's columns
        (an empty typed row set where none of its files overlaps)."""
        for name in names:
            entries = self._parent.table_entries(name)
            if not entries:
                continue
            columns = self._index.columns(name, entries)
            if KEY in {c for c, _ in columns}:
                entries = [e for e in entries if self._index.overlaps(e, self.lo, self.hi)]
            query = part_view_query(con, name, columns, self._index.rows(entries))
            con.execute(f'create or replace view "{name}" as {query}')
            self._view_names.add(name)
            self._fresh.add(name)
