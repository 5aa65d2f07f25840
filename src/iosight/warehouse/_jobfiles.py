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

At a million jobs a job page's time went to DuckDB binding its queries, not running
them: each table a query names binds its files' columns again (some 5 ms for ``posix``'s
89), and the modules query names seven. So a scope of one job copies the job's rows of
each table it reads into a temporary table, once (at most :data:`_HELD_ROWS`; a bigger
job's rows are read through a view of its files at each query), and says which tables
hold none of them (:meth:`JobScope.may_hold`), which a page's queries leave out; the
index looks a few keys up in all of a table's files at once (``_Packed``). A scope's
queries must therefore ask for its jobs' rows (``job_key = ?``, ``in``): a scope of one
job holds no other job's. ``benchmarks/job_page.py`` at a million jobs: 6.5x -> 10.8x
faster than whole views, 119 ms a page at the median, 135 at p95 (docs/warehouse.md,
"The Job page at a million").
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
from iosight.warehouse._store import Warehouse, _sql_text, _table_names, parquet_rows

if TYPE_CHECKING:
    import duckdb
    import numpy as np

_BATCH = 16  # files taken from the queue at a time by the index's thread
# keys looked up in a table's packed hashes at once; more are looked up file by file
# (numpy's isin sorts the whole array for more than some 70 keys)
_PACKED_KEYS = 16
_HELD_ROWS = 2_000  # a job's rows a table held in a temporary table (job_page.py: 2.4 MiB most)
_UNHELD_MOST = 10_000  # (table, job) pairs a served warehouse remembers as not to hold
# a name read after FROM or JOIN: the tables of a query DuckDB can neither list nor
# tokenize (a name missed only reads the whole table's view)
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
        # folder -> path -> (stamp, hashes (None: unreadable), their row numbers in BY_ROW)
        self._files: dict[str, dict[str, tuple[tuple, np.ndarray | None, np.ndarray | None]]]
        self._files = {}
        self._packed: dict[str, _Packed] = {}  # folder -> its files' keys in one array
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
        import numpy as np

        wanted = np.asarray(key_hashes, dtype=np.uint32)
        folder = os.path.dirname(entries[0].path)
        few = len(wanted) <= _PACKED_KEYS
        packed = self._packed.get(folder)
        if few and packed is not None and packed.entries is entries:
            return packed.holding(wanted)
        stamps = {e.path: _stamp(e) for e in entries}
        todo = self._update(folder, stamps)
        if few and not todo and (packed := self._pack(folder, entries, stamps)) is not None:
            return packed.holding(wanted)
        return self._holding_unpacked(folder, stamps, todo, wanted)

    def _update(self, folder: str, stamps: dict[str, tuple]) -> dict[str, tuple]:
        """Forget the files of ``folder`` not in ``stamps`` (path -> stamp: purged,
        replaced), enter those whose sidecars are new; return those still to be read,
        queued for the thread."""
        with self._guard:
            known = self._files.setdefault(folder, {})
            for path in [p for p in known if p not in stamps]:
                del known[path]
        none = ((),)
        todo = {p: s for p, s in stamps.items() if known.get(p, none)[0] != s}
        if todo:
            todo = self._load(todo)
        if todo:
            self._enqueue(todo)
        return todo

    def _holding_unpacked(
        self, folder: str, stamps: dict[str, tuple], todo: dict[str, tuple], wanted: np.ndarray
    ) -> dict[str, list[int] | None]:
        """:meth:`holding` file by file: while files of ``todo`` are still to be read, or
        for many keys. A file still to be read, or forgotten meanwhile (another thread saw
        another set of files), may hold any job."""
        import numpy as np

        known = self._files.get(folder, {})
        found: dict[str, list[int] | None] = {}
        for path, stamp in stamps.items():
            entry = known.get(path)
            if path in todo or entry is None or entry[0] != stamp:
                found[path] = None
                continue
            _, hashes, rows = entry
            if hashes is None:  # a file whose keys could not be read
                found[path] = None
            elif rows is None:
                if _has_any(hashes, wanted):
                    found[path] = None
            elif len(got := rows[np.isin(hashes, wanted)]):
                found[path] = sorted(got.tolist())
        return found

    def _pack(
        self, folder: str, entries: list[os.DirEntry], stamps: dict[str, tuple]
    ) -> _Packed | None:
        """The keys of every file of ``entries`` (all read, as stamped in ``stamps``) in
        one array, kept for ``folder`` while its files stay these; each file's keys become
        a slice of it, so the index holds them once. None where a file is no longer as
        read (another thread saw another set of files meanwhile)."""
        with self._guard:
            known = self._files.get(folder, {})
            got = [known.get(e.path) for e in entries]
            if any(g is None or g[0] != stamps[e.path] for g, e in zip(got, entries, strict=True)):
                return None
            packed = _Packed(entries, [g[1:] for g in got])
            for entry, hashes, rows in zip(entries, *packed.slices(), strict=True):
                known[entry.path] = (stamps[entry.path], hashes, rows)
            self._packed[folder] = packed
        return packed

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
                self._files.setdefault(os.path.dirname(path), {})[path] = (stamp, *got)
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
                    folder = self._files.setdefault(os.path.dirname(path), {})
                    folder[path] = (stamp, *found[path])
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
        """Whether a file of ``entries`` (one table's) has not been read into the index yet."""
        folder = os.path.dirname(entries[0].path)
        packed = self._packed.get(folder)
        if packed is not None and packed.entries is entries:
            return False
        with self._guard:
            known = self._files.get(folder, {})
            return any(e.path not in known for e in entries)

    def held(self) -> tuple[int, int]:
        """The files read into the index and the bytes of their hashes and row numbers."""
        with self._guard:
            keys = [(h, r) for folder in self._files.values() for _, h, r in folder.values()]
        size = sum(h.nbytes + (0 if r is None else r.nbytes) for h, r in keys if h is not None)
        return len(keys), size

    def wait(self) -> None:
        """Return once every file queued so far is read (what a test or warm-up waits for)."""
        worker = self._worker
        while worker is not None:
            worker.join()
            worker = self._worker

    def columns(self, con: duckdb.DuckDBPyConnection, name: str, files: tuple) -> list:
        """Table ``name``'s columns and types over all its ``files`` (its view's, via
        ``con``), read once per set of files."""
        known, got = self._columns.get(name, ((), []))
        if known != files:
            got = [(r[0], r[1]) for r in con.execute(f'describe main."{name}"').fetchall()]
            self._columns[name] = (files, got)
        return got


class _Packed:
    """The key hashes of one table's files in one array, each file's a slice of it (row
    numbers alike, where the table keeps them): a lookup scans them at once, where a
    loop over the files took some milliseconds a table of a thousand files."""

    def __init__(
        self, entries: list[os.DirEntry], keys: list[tuple[np.ndarray, np.ndarray | None]]
    ) -> None:
        import numpy as np

        self.entries, self.paths = entries, [e.path for e in entries]
        # files whose keys could not be read: they may hold any job
        self.unknown = {i for i, (h, _) in enumerate(keys) if h is None}
        none = np.zeros(0, np.uint32)
        self.offsets = np.zeros(len(keys) + 1, np.int64)
        np.cumsum([0 if h is None else len(h) for h, _ in keys], out=self.offsets[1:])
        self.hashes = np.concatenate([none if h is None else h for h, _ in keys] or [none])
        self.rows = None
        if any(r is not None for _, r in keys):  # a BY_ROW table's
            self.rows = np.concatenate([none if r is None else r for _, r in keys])

    def slices(self) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
        """Each file's hashes and row numbers (None where the table keeps none)."""
        bounds = list(zip(self.offsets[:-1].tolist(), self.offsets[1:].tolist(), strict=True))
        rows = self.rows
        return (
            [None if i in self.unknown else self.hashes[a:b] for i, (a, b) in enumerate(bounds)],
            [None if rows is None or i in self.unknown else rows[a:b]
             for i, (a, b) in enumerate(bounds)],
        )  # fmt: skip

    def holding(self, wanted: np.ndarray) -> dict[str, list[int] | None]:
        """:meth:`KeyIndex.holding` of the keys ``wanted`` (hashes), in the files' order."""
        import numpy as np

        hit = self.hashes == wanted[0] if len(wanted) == 1 else np.isin(self.hashes, wanted)
        at = np.flatnonzero(hit)
        owners = np.searchsorted(self.offsets, at, side="right") - 1
        files = sorted(self.unknown.union(owners.tolist()))
        if self.rows is None:
            return {self.paths[i]: None for i in files}
        rows = self.rows[at]
        return {
            self.paths[i]: None if i in self.unknown else sorted(rows[owners == i].tolist())
            for i in files
        }


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
    """A reader of ``parent`` whose job-keyed tables read only the files that can hold the
    jobs ``keys`` (:class:`KeyIndex`), for queries of those jobs' rows; a scope of one job
    holds its rows of each such table in a temporary table where they are few. Every
    other table reads its whole view. Made by :func:`for_job` and :func:`for_jobs`;
    anything else is the parent's (its path, its limits)."""

    def __init__(self, parent: Warehouse, keys: tuple[str, ...], index: KeyIndex) -> None:
        self.path, self._parent, self.keys, self._index = parent.path, parent, keys, index
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._scoped: set[str] = set()
        self._holds: dict[str, dict[str, list[int] | None] | None] = {}  # by _holding
        self._entries: dict[str, list[os.DirEntry]] = {}
        self._key_hashes: np.ndarray | None = None  # the keys' hashes, sorted, each once
        self.partial = False  # a view made while the index lacked some of its files
        # (table, job) whose rows were not held: a served warehouse's, once per set of files
        memo = getattr(parent, "memo", None)
        self._unheld: set[tuple[str, str]] = memo("rows not held", set) if memo else set()

    def __getattr__(self, name: str):
        return getattr(self._parent, name)

    def connect(self, names: Iterable[str] | None = None) -> duckdb.DuckDBPyConnection:
        """A cursor of the parent's database where each table of ``names`` that holds a
        ``job_key`` reads only the job's files or rows (a temporary view or table, this
        cursor's alone); ``None`` scopes no more tables (their columns are the whole
        table's anyway)."""
        base = self._parent.connect(names)
        if self._cursor is None:
            self._cursor = base.cursor()
            import numpy as np

            self._key_hashes = np.unique(hash_keys(string_array(self.keys)))
        # only the tables among ``names`` (a query with ``?`` lists every word of its SQL)
        for name in sorted(self._parent._viewable(names or ()) - self._scoped):
            self._scope(name)
            self._scoped.add(name)
        return self._cursor

    def close(self) -> None:
        """Close the scope's cursor (its temporary views and tables go with it), not the
        parent's connection; the next query makes them again."""
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None
            self._scoped.clear()

    def _reads(self, query: str) -> frozenset[str]:
        """The tables ``query`` reads, each scoped before it runs: DuckDB's list (or every
        word of it), else the names after its FROMs and JOINs."""
        return _table_names(query) or frozenset(_AFTER_FROM.findall(query))

    def tables(self) -> list[str]:
        """The parent's :meth:`~Warehouse.tables` (a served warehouse lists them once per
        set of tables, where this scope would list every table's folder again)."""
        return self._parent.tables()

    def may_hold(self, name: str) -> bool:
        """Whether table ``name`` may hold rows of the scope's jobs: False where it has a
        job_key and none of its files holds one of them (a module the job did not use,
        which a job page's queries can leave out: each table they name costs a bind of
        some milliseconds)."""
        return self._holding(name) != {}

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
        return [c for c, _ in self._columns(name)]

    def _columns(self, name: str) -> list[tuple[str, str]]:
        """Table ``name``'s columns and types: its whole view's (made where it was not),
        not this scope's (which need not be made to answer)."""
        con = self._parent.connect([name])
        return self._index.columns(con, name, tuple(e.path for e in self.table_entries(name)))

    def _holding(self, name: str) -> dict[str, list[int] | None] | None:
        """The files of table ``name`` that may hold the jobs (:meth:`KeyIndex.holding`),
        worked out once a scope; None where every file may (a table without a job_key,
        or none pruned)."""
        if name not in self._holds:
            self.connect(())
            entries = self.table_entries(name)
            files = None
            if entries:
                if KEY in {c for c, _ in self._columns(name)}:
                    self.partial |= self._index.unread(entries)  # read whole: not kept
                    files = self._index.holding(entries, self._key_hashes)
                    if len(files) == len(entries) and not any(files.values()):
                        files = None
            self._holds[name] = files
        return self._holds[name]

    def _scope(self, name: str) -> None:
        """Make ``name`` read only the job's files, where that prunes any: a temporary
        table of the job's rows for a scope of one job that has at most
        :data:`_HELD_ROWS` of them (each query of the page then binds a small table, not
        the files' columns), else a temporary view over its files."""
        files = self._holding(name)
        if files is None:
            return
        con = self._cursor
        query = part_view_query(con, name, self._columns(name), _read(files) if files else None)
        if len(self.keys) == 1 and files and (name, self.keys[0]) not in self._unheld:
            why = _held(con, name, query, self.keys[0])
            if why is None:
                return
            if why != _NO_ROOM:  # too many rows, or unreadable: not copied again
                if len(self._unheld) >= _UNHELD_MOST:  # bounded, whatever pages are asked
                    self._unheld.clear()
                self._unheld.add((name, self.keys[0]))
        con.execute(f'create or replace temp view "{name}" as {query}')


_NO_ROOM = "no room"  # DuckDB's memory limit had none for a copy: another page may have


def _held(con: duckdb.DuckDBPyConnection, name: str, query: str, key: str) -> str | None:
    """Copy job ``key``'s rows of table ``name`` (of the view ``query``) into a temporary
    table of ``con``; None where they now stand there, else why not: more than
    :data:`_HELD_ROWS` of them, :data:`_NO_ROOM` under DuckDB's memory limit, or a file
    DuckDB cannot read (the view then reads them, and says why, at the query)."""
    import duckdb

    held, why = f'temp."{name}"', "too many rows"
    try:
        con.execute(
            f"create or replace temp table {held} as select * from ({query}) "
            f"where {KEY} = ? limit {_HELD_ROWS + 1}",
            [key],
        )
        if con.execute(f"select count(*) from {held}").fetchall()[0][0] <= _HELD_ROWS:
            why = None
    except duckdb.OutOfMemoryException:
        why = _NO_ROOM
    except duckdb.InterruptException:
        raise  # a caller's deadline: the caller says so (the table goes, below)
    except duckdb.Error:
        why = "unreadable"
    finally:
        if why is not None:
            con.execute(f"drop table if exists {held}")
    return why


def _read(files: dict[str, list[int] | None]) -> str:
    """The FROM item reading ``files`` (:meth:`KeyIndex.holding`): those with row numbers
    each only at those rows (``file_row_number`` prunes the row groups that hold none),
    the others whole, in one ``read_parquet``."""
    whole = [Path(f) for f, rows in files.items() if rows is None]
    reads = [f"select * from {parquet_rows(whole)}"] if whole else []
    reads += [
        f"select * exclude (file_row_number) from read_parquet({_sql_text(Path(f))}, "
        f"file_row_number=true) where file_row_number in ({', '.join(map(str, rows))})"
        for f, rows in files.items()
        if rows is not None
    ]
    return f"({' union all by name '.join(reads)})"
