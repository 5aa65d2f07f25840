"""Read one job from only the files that hold it: a per-table index of job keys per file.

A job page runs about twenty queries of ``job_key = K``, and DuckDB visits every file of
a table for each of them before it prunes row groups. Min/max statistics cannot narrow
the files down: a job_key is a content hash, so every file (a batch of logs, a
compaction's output) spans nearly the whole key range. The index holds instead the hashes
of the keys each file holds (4 bytes per job and file: the upper half of a 64-bit
FNV-1a hash, :func:`~iosight.warehouse._keyfiles.hash_keys`; a file of a million jobs
answers "maybe" for a key it lacks once in 4,000),
loaded from the sidecar written beside each file when it entered its table
(:mod:`iosight.warehouse._keyfiles`: every file at once, when a page first asks), or,
where a file has none (a warehouse written before them), read by a background thread
from the dictionaries of its ``job_key`` column; cached by file name, size and
modification time: committed files never change, so an entry is never
stale, and entries of files gone are dropped. For ``jobs``, the one table sorted by start
time rather than by key (so a key's row may be anywhere in a file), the index keeps each
hash's row number as well (4 more bytes a job), and the scope reads only the row groups
holding those rows: ``file_row_number in (...)`` prunes row groups as a key's min/max
cannot (a lookup in a million-row ``jobs`` file: 51 -> 9 ms of CPU).

:class:`JobScope` is a reader of the warehouse whose table views hold only the files
that can hold the job (those whose hashes include the key's: a hash collision only adds
a file), with the full table's columns, so every query answers exactly as on the whole
table. It lists the files once, when made: a compaction that lands meanwhile leaves the
files it replaced on disk for the grace period, so its queries keep reading them.
"""

from __future__ import annotations

import atexit
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from iosight.warehouse._keyfiles import BY_ROW, KEY, hash_keys, read_keys, string_array
from iosight.warehouse._keyfiles import key_hashes as file_hashes
from iosight.warehouse._known import part_view_query
from iosight.warehouse._store import Warehouse, _sql_text, _table_names

if TYPE_CHECKING:
    import duckdb
    import numpy as np

_BATCH = 16  # files taken from the queue at a time by the index's thread
# a name read after FROM or JOIN: the tables a query with ``?`` parameters reads, which
# DuckDB's parser does not list (a name missed only reads the whole table's view)
_AFTER_FROM = re.compile(r'\b(?:from|join)\s+"?([A-Za-z_][A-Za-z0-9_]*)"?', re.IGNORECASE)


def for_job(warehouse: Warehouse, key: str) -> Warehouse:
    """A reader of ``warehouse`` for queries of job ``key`` alone (``job_key = key``):
    where its :attr:`~Warehouse.key_index` is set, a :class:`JobScope` whose job-keyed
    tables read only the files that hold the job; else ``warehouse`` itself. A served
    warehouse (one with a ``memo`` per set of files) gives each thread the same scope
    again while its files and job stay the same: a job's page asks five times (route,
    summary, time axis, insights), and each new scope made its views again."""
    return for_jobs(warehouse, (key,))


def for_jobs(warehouse: Warehouse, keys: Iterable[str], *, always: bool = False) -> Warehouse:
    """:func:`for_job` of several jobs: a reader of ``warehouse`` whose job-keyed tables
    read the files that hold any of the job keys ``keys`` (for ``job_key in keys``; a
    page of the newest jobs of an archive: its newest files). ``always``: scope even a
    warehouse whose :attr:`~Warehouse.key_index` is off (a batch of many jobs of a few
    files, as :func:`~iosight.insights.compute_insights` takes them)."""
    keys = tuple(keys)
    if isinstance(warehouse, JobScope):
        if warehouse.keys == keys:
            return warehouse
        return for_jobs(warehouse._parent, keys, always=always)
    if not (warehouse.key_index or always):
        return warehouse
    index = warehouse.__dict__.get("_key_index")
    if index is None:
        index = warehouse.__dict__["_key_index"] = KeyIndex()
    memo = getattr(warehouse, "memo", None)
    if memo is None:
        return JobScope(warehouse, keys, index)
    # a served warehouse's: this thread's last scope, while its set of files holds
    kept = memo(f"job scope of thread {threading.get_ident()}", dict)
    scope = kept.get(keys)
    if scope is None or scope.partial:
        kept.clear()
        scope = kept[keys] = JobScope(warehouse, keys, index)
    return scope


class KeyIndex:
    """The job-key hashes of each file of each table (thread-safe), loaded from the file's
    key sidecar when a page first asks, else read once by a background thread from its
    column. A file not read yet may hold any job: a page asked for before the thread has
    read it (a file without a sidecar) reads it, as it would without the index, and is
    never held up by the reading."""

    def __init__(self) -> None:
        # path -> (stamp, hashes, their row numbers where the table is in BY_ROW)
        self._files: dict[str, tuple[tuple, np.ndarray | None, np.ndarray | None]] = {}
        self._columns: dict[str, tuple[tuple, list]] = {}  # table -> (its files, columns)
        self._queue: dict[str, tuple] = {}  # path -> stamp, waiting to be read
        self._guard = threading.Lock()
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()

    def holding(
        self, entries: list[os.DirEntry], key_hashes: np.ndarray
    ) -> dict[str, list[int] | None]:
        """The paths of ``entries`` (one table's live files) whose keys may include a key
        of the array ``key_hashes`` (those whose keys include one, and those not read yet,
        queued),
        each with the row numbers that may hold them: sorted, where the index keeps rows
        (:data:`BY_ROW`); None where any row may."""
        stamps = {e.path: _stamp(e) for e in entries}
        self._forget(os.path.dirname(entries[0].path), stamps)
        files, unread = self._files, ((), None, None)
        todo = {p: s for p, s in stamps.items() if files.get(p, unread)[0] != s}
        if todo:
            todo = self._load(todo)
        if todo:
            self._enqueue(todo)
        import numpy as np

        wanted = np.asarray(key_hashes, dtype=np.uint32)
        found: dict[str, list[int] | None] = {}
        for path in stamps:
            _, hashes, rows = unread if path in todo else files[path]
            if hashes is None:
                found[path] = None
            elif rows is None:
                if _has_any(hashes, wanted):
                    found[path] = None
            elif len(got := rows[np.isin(hashes, wanted)]):
                found[path] = sorted(got.tolist())
        return found

    def _load(self, todo: dict[str, tuple]) -> dict[str, tuple]:
        """Enter the files of ``todo`` (path -> stamp) whose sidecars match them
        (:func:`~iosight.warehouse._keyfiles.read_keys`, a fraction of a millisecond
        each); return the others, whose keys are still to be read."""
        left = {}
        for path, stamp in todo.items():
            got = read_keys(path, stamp[0])
            by_row = os.path.basename(os.path.dirname(path)) in BY_ROW
            if got is None or (got[1] is not None) != by_row:
                left[path] = stamp
                continue
            with self._guard:
                self._files[path] = (stamp, *got)
        return left

    def _enqueue(self, todo: dict[str, tuple]) -> None:
        with self._guard:
            self._queue.update(todo)
            if self._worker is None and not self._stop.is_set():
                self._worker = threading.Thread(target=self._work, daemon=True)
                self._worker.start()
                atexit.register(self.close)

    def _work(self) -> None:
        """Read the queued files' keys, a few at a time, until none is left."""
        while True:
            with self._guard:
                batch = dict(list(self._queue.items())[:_BATCH])
                if not batch or self._stop.is_set():
                    self._worker = None
                    atexit.unregister(self.close)
                    return
            found = {p: _hashes(p) for p in batch if not self._stop.is_set()}
            with self._guard:
                for path, stamp in batch.items():
                    if path not in found:
                        continue  # stopped before it was read
                    self._files[path] = (stamp, *found[path])
                    if self._queue.get(path) == stamp:
                        del self._queue[path]

    def close(self) -> None:
        """Stop reading (after the file being read) and wait for the thread: at exit, a
        thread left inside DuckDB or Arrow while the interpreter tears down can abort
        the process ("terminate called ..."). Lookups still answer, reading unread files
        whole."""
        self._stop.set()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=60)

    def unread(self, entries: list[os.DirEntry]) -> bool:
        """Whether a file of ``entries`` has not been read into the index yet."""
        with self._guard:
            return any(e.path not in self._files for e in entries)

    def wait(self) -> None:
        """Return once every file queued so far is read (what a test or warm-up waits for)."""
        worker = self._worker
        while worker is not None:
            worker.join()
            worker = self._worker

    def _forget(self, folder: str, keep: dict) -> None:
        """Drop the entries of the files in ``folder`` not in ``keep`` (purged, replaced)."""
        with self._guard:
            gone = [p for p in self._files if p not in keep and os.path.dirname(p) == folder]
            for path in gone:
                del self._files[path]

    def columns(self, con: duckdb.DuckDBPyConnection, name: str, files: tuple) -> list:
        """Table ``name``'s columns and types over all its ``files`` (its view's, via
        ``con``), read once per set of files."""
        known, got = self._columns.get(name, ((), []))
        if known != files:
            got = [(r[0], r[1]) for r in con.execute(f'describe main."{name}"').fetchall()]
            self._columns[name] = (files, got)
        return got


def _stamp(entry: os.DirEntry) -> tuple:
    st = entry.stat()
    return (st.st_size, st.st_mtime_ns)


def _hashes(path: str) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The keys of the file ``path`` read from its column
    (:func:`~iosight.warehouse._keyfiles.key_hashes`), with row numbers where its table
    is in :data:`BY_ROW`."""
    import numpy as np

    got = file_hashes([(path, os.path.basename(os.path.dirname(path)) in BY_ROW)])[0]
    return (np.zeros(0, np.uint32), None) if got is None else got


def _has_any(hashes: np.ndarray, wanted: np.ndarray) -> bool:
    """Whether the sorted ``hashes`` hold one of ``wanted`` (one search for them all: a
    batch of ``compute_insights`` asks for thousands of keys)."""
    at = hashes.searchsorted(wanted)
    return bool(len(hashes)) and bool((hashes[at.clip(max=len(hashes) - 1)] == wanted).any())


class JobScope(Warehouse):
    """A reader of ``parent`` whose views of job-keyed tables hold only the files that can
    hold the jobs ``keys`` (:class:`KeyIndex`); every other table reads its whole view.
    Made by :func:`for_job` and :func:`for_jobs`; anything else is the parent's (its path,
    its limits)."""

    def __init__(self, parent: Warehouse, keys: tuple[str, ...], index: KeyIndex) -> None:
        self.path, self._parent, self.keys, self._index = parent.path, parent, keys, index
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._scoped: set[str] = set()
        self._entries: dict[str, list[os.DirEntry]] = {}
        self._key_hashes: np.ndarray | None = None  # the keys' hashes, sorted, each once
        self.partial = False  # a view made while the index lacked some of its files

    def __getattr__(self, name: str):
        return getattr(self._parent, name)

    def connect(self, names: Iterable[str] | None = None) -> duckdb.DuckDBPyConnection:
        """A cursor of the parent's database where each table of ``names`` that holds a
        ``job_key`` reads only the job's files (a temporary view, this cursor's alone);
        ``None`` scopes no more tables (their columns are the whole table's anyway)."""
        base = self._parent.connect(names)
        if self._cursor is None:
            self._cursor = base.cursor()
            import numpy as np

            self._key_hashes = np.unique(hash_keys(string_array(self.keys)))
        for name in sorted(set(names or ()) - self._scoped):
            self._scope(name)
            self._scoped.add(name)
        return self._cursor

    def _run(self, query: str, params: list | None, fetch):
        """:meth:`Warehouse._run` once the tables ``query`` reads are scoped."""
        self.connect(_table_names(query) or set(_AFTER_FROM.findall(query)))
        return super()._run(query, params, fetch)

    def tables(self) -> list[str]:
        """The parent's :meth:`~Warehouse.tables` (a served warehouse lists them once per
        set of tables, where this scope would list every table's folder again)."""
        return self._parent.tables()

    def table_entries(self, name: str) -> list[os.DirEntry]:
        """The parent's :meth:`~Warehouse.table_entries`, listed once for this scope: one
        job's page sees one set of files (``name``: the table); a served warehouse's
        once per set of files (its ``memo``: a request starts by checking for a new set)."""
        if name not in self._entries:
            memo = getattr(self._parent, "memo", None)
            listed = lambda: self._parent.table_entries(name)  # noqa: E731
            self._entries[name] = memo(f"entries of {name}", listed) if memo else listed()
        return self._entries[name]

    def column_names(self, name: str) -> list[str]:
        """The columns of table ``name`` (it must exist), in order: the whole table's,
        read once per set of its files (a job page asks for them a dozen times)."""
        self.require(name)
        entries = self.table_entries(name)
        con = self.connect([name])
        return [c for c, _ in self._index.columns(con, name, tuple(e.path for e in entries))]

    def _scope(self, name: str) -> None:
        """Make the temporary view of ``name`` over the job's files, where it prunes any."""
        con = self._cursor
        entries = self.table_entries(name)
        if not entries:
            return
        columns = self._index.columns(con, name, tuple(e.path for e in entries))
        if KEY not in {c for c, _ in columns}:
            return
        self.partial |= self._index.unread(entries)  # read whole: this scope is not kept
        files = self._index.holding(entries, self._key_hashes)
        if len(files) == len(entries) and not any(files.values()):
            return
        query = part_view_query(con, name, columns, _read(files) if files else None)
        con.execute(f'create or replace temp view "{name}" as {query}')


def _read(files: dict[str, list[int] | None]) -> str:
    """The FROM item reading ``files`` (:meth:`KeyIndex.holding`): those with row numbers
    each only at those rows (``file_row_number`` prunes the row groups that hold none),
    the others whole, in one ``read_parquet``."""
    whole = [_sql_text(Path(f)) for f, rows in files.items() if rows is None]
    reads = (
        [f"select * from read_parquet([{', '.join(whole)}], union_by_name=true)"] if whole else []
    )
    reads += [
        f"select * exclude (file_row_number) from read_parquet({_sql_text(Path(f))}, "
        f"file_row_number=true) where file_row_number in ({', '.join(map(str, rows))})"
        for f, rows in files.items()
        if rows is not None
    ]
    return f"({' union all by name '.join(reads)})"
