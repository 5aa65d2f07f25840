"""The served warehouse: read-only DuckDB, one cursor per thread, guarded user SQL.

The web server answers requests on several threads. It shares one DuckDB database
(the warehouse's views, no copy of any table) and gives each thread its own cursor,
as DuckDB asks of threaded callers. Before the first cursor is handed out the
database is locked down: DuckDB may read only the warehouse's ``tables/`` folder
(``allowed_directories``), nothing else on disk (``enable_external_access=false``:
no ``read_csv('/etc/passwd')``, no ``COPY ... TO``, no ``ATTACH``, no extension
install), keeps no temporary files (DuckDB adds its temporary folder, ``.tmp`` under
the working directory by default, to the readable ones), uses at most a memory
limit, and the configuration cannot be changed back (``lock_configuration``).
User SQL (the Jobs page's ``where`` box) must also parse as one condition on one
job's columns (:func:`check_where`) and is interrupted after a time limit
(:func:`deadline`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from iosight._errors import IosightError
from iosight.warehouse import Warehouse

if TYPE_CHECKING:
    import duckdb

WHERE_TIMEOUT_S = 10.0
MEMORY_LIMIT = "1GB"
_REPEAT_S = 0.05
T = TypeVar("T")
# What a 'where' condition may use: expressions whose result is no larger than their
# inputs, so a short condition cannot make DuckDB build gigabytes of strings
# (repeat(), lpad(), ||), which DuckDB's memory_limit does not count; no subquery, so
# it reads the jobs row it filters and nothing else; regular expressions compiled once
# (a constant pattern), not once per row. DuckDB checks for an interrupt between
# vectors of rows, so these bounds also bound how long the deadline can be overrun.
MAX_WHERE_CHARS = 2000
MAX_FORMAT = 64  # characters of a strftime format in a 'where'
_TOO_DEEP = "the 'where' condition is nested too deeply"
_REGEX = frozenset({"regexp_matches", "regexp_full_match"})
_CLASSES = frozenset({"BETWEEN", "CASE", "CAST", "COLLATE", "COLUMN_REF", "COMPARISON",
                      "CONJUNCTION", "CONSTANT", "FUNCTION", "OPERATOR"})  # fmt: skip
_OPERATORS = frozenset({"COMPARE_IN", "COMPARE_NOT_IN", "OPERATOR_COALESCE", "OPERATOR_IS_NOT_NULL",
                        "OPERATOR_IS_NULL", "OPERATOR_NOT"})  # fmt: skip
_FUNCTIONS = frozenset({
    "+", "-", "*", "/", "//", "%", "^", "**", "~~", "!~~", "~~*", "!~~*", "~~~", "!~~~", "^@",
    "abs", "ceil", "ceiling", "floor", "round", "trunc", "sign", "sqrt", "ln", "log", "log10",
    "log2", "pow", "power", "greatest", "least", "nullif", "ifnull",
    "length", "strlen", "lower", "upper", "lcase", "ucase", "trim", "ltrim", "rtrim", "left",
    "right", "substr", "substring", "contains", "starts_with", "ends_with", "prefix", "suffix",
    "instr", "position", "strpos", "regexp_matches", "regexp_full_match",
    "to_timestamp", "epoch", "date_part", "datepart", "date_trunc", "datetrunc", "year",
    "month", "day", "hour", "minute", "second", "dayofweek", "dayofyear", "strftime",
    "to_years", "to_months", "to_days", "to_hours", "to_minutes", "to_seconds",
    "to_milliseconds", "to_microseconds",
})  # fmt: skip
_CAST_TYPES = frozenset({
    "bool", "boolean", "tinyint", "smallint", "int", "integer", "int4", "int8", "bigint",
    "hugeint", "utinyint", "usmallint", "uinteger", "ubigint", "float", "real", "double",
    "decimal", "numeric", "varchar", "text", "string", "date", "time", "timestamp",
    "timestamptz", "timestamp with time zone", "interval",
})  # fmt: skip


class ServedWarehouse(Warehouse):
    """A :class:`~iosight.warehouse.Warehouse` that only reads, safely from many threads.

    ``connect()`` returns this thread's cursor on one locked-down DuckDB database;
    every library function that takes a warehouse (``job_summary``,
    ``recommend_start``, ...) works on it unchanged. Writing raises. When the files
    of the tables change on disk (an ingest, ``iosight timeline build`` or a
    compaction while the server runs), :meth:`refresh` rebuilds the views.
    ``memory_limit`` is DuckDB's (e.g. ``"1GB"``); ``query_timeout`` (seconds) is the
    deadline of user SQL.

    ``path``: the warehouse folder.
    """

    key_index = True  # a job's page reads only its files (Warehouse.for_job)

    def __init__(
        self,
        path: str | Path,
        *,
        memory_limit: str = MEMORY_LIMIT,
        query_timeout: float = WHERE_TIMEOUT_S,
    ) -> None:
        super().__init__(path, create=False)
        if not query_timeout > 0:
            raise IosightError(f"the query timeout must be above 0 s. Got {query_timeout!r}.")
        self.memory_limit = memory_limit
        self.query_timeout = float(query_timeout)
        self._guard = threading.Lock()
        self._local = threading.local()
        self._generation = 0
        self._known: tuple = ()  # the tables' signature the views were made at
        self._memo: dict[str, object] = {}

    def refresh(self) -> None:
        """Rebuild the views when the files of the tables on disk changed (a commit or a
        compaction; the views name their files); cheap otherwise. Safe while another
        thread queries: its cursor keeps the old views to the end of its query."""
        import duckdb

        if self.tables_signature() != self._known:
            with self._guard:
                if self._con is not None:
                    try:
                        self._con.close()
                    except duckdb.ResourceInUseException:
                        pass  # a query runs on it: it goes with its last cursor
                self._con = None
                self._memo = {}
                self._generation += 1

    def memo(self, name: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per set of tables (schemas of wide tables cost tens of ms).

        ``name``: what is computed; ``compute``: computes it.
        """
        memo = self._memo  # a refresh on another thread replaces it, never empties this one
        if name not in memo:
            memo[name] = compute()
        return memo[name]  # type: ignore[return-value]

    def tables(self) -> list[str]:
        """The tables holding files, listed once per set of tables (:meth:`refresh` starts
        a new one): a job's page asks three times, each a listing of every table's folder
        (listed when its views are made, as :meth:`has_table` answers for them)."""
        self.connect()
        return list(self.memo("tables", lambda: Warehouse.tables(self)))

    def connect(self, names: Iterable[str] | None = None) -> duckdb.DuckDBPyConnection:
        """This thread's cursor on the shared, locked-down database, which has every
        table's view (made once for all threads; ``names`` changes nothing)."""
        local = self._local
        if getattr(local, "generation", None) != self._generation or local.cursor is None:
            with self._guard:
                if self._con is None:
                    self._known = self.tables_signature()
                    self._lock_down(super().connect())  # the views, over tables/
                local.cursor = self._con.cursor()
                local.generation = self._generation
        return local.cursor

    def has_table(self, name: str) -> bool:
        """Whether the views of :meth:`connect` hold table ``name``: a table first committed
        after they were made is answered at the next :meth:`refresh`, so a query on a table
        this says exists always finds its view (a scrape at the instant of a table's first
        commit read the folder, then failed on the missing view).

        ``name``: the table.
        """
        self.connect()
        return name in self._view_names

    def _lock_down(self, con: duckdb.DuckDBPyConnection) -> None:
        """Let ``con`` read the warehouse's tables and nothing else, within the memory limit.

        A connection that cannot be locked down (a bad memory limit) is closed, never kept.
        """
        import duckdb

        tables = (str((self.path / "tables").resolve()) + "/").replace("'", "''")
        limit = self.memory_limit.replace("'", "''")
        try:
            con.execute(f"set memory_limit = '{limit}'")
            con.execute("set temp_directory = ''")  # else its folder becomes readable
            con.execute(f"set allowed_directories = ['{tables}']")
            # footers of wide tables, read once for every cursor (a plain "set" is this
            # connection's alone: the cursors serving requests read every footer again)
            con.execute("set global parquet_metadata_cache = true")
            con.execute("set enable_external_access = false")
            con.execute("set lock_configuration = true")
        except duckdb.Error as err:
            self.close()
            raise IosightError(
                f"cannot serve with the memory limit {self.memory_limit!r}: {_first_line(err)}"
            ) from None

    def commit(self, *args, **kwargs) -> str:
        """Refused: a served warehouse only reads (``args`` and ``kwargs`` as
        :meth:`Warehouse.commit` takes them)."""
        raise IosightError(f"the served warehouse {self.path} is read-only")


def check_where(
    clause: str, table: str = "jobs", con: duckdb.DuckDBPyConnection | None = None
) -> str:
    """The user's SQL condition, parenthesised, once it parses as one ``WHERE`` of one query.

    DuckDB parses ``SELECT * FROM <table> WHERE (<clause>)``; anything but a single
    plain select over ``table`` (a second statement, a ``UNION`` smuggled past the
    parentheses, an ``ORDER BY``/``LIMIT``, a ``WITH``) is refused, and so is a
    condition using anything outside a short list (:func:`_refused`): no subquery, no
    function that builds larger values than it gets. The database's own lock-down
    (see the module docstring) still applies to what a condition calls.

    ``clause``: the user's SQL condition; ``con``: the connection it is parsed on (default: an
    in-memory one).
    """
    import duckdb

    clause = clause.strip()
    if not clause:
        raise IosightError("the 'where' condition is empty")
    if len(clause) > MAX_WHERE_CHARS:
        raise IosightError(
            f"the 'where' condition has {len(clause)} characters; at most {MAX_WHERE_CHARS}"
        )
    wrapped = f"({clause})"
    query = f'SELECT * FROM "{table}" WHERE {wrapped}'
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as err:
        raise IosightError(f"cannot read the 'where' condition: {_first_line(err)}") from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise IosightError("the 'where' condition must be one condition, not statements")
    parser = con if con is not None else duckdb.connect()
    try:
        tree = json.loads(parser.execute("select json_serialize_sql(?)", [query]).fetchall()[0][0])
    except RecursionError:
        raise IosightError(_TOO_DEEP) from None
    finally:
        if con is None:
            parser.close()
    if tree.get("error"):
        raise IosightError(f"cannot read the 'where' condition: {tree.get('error_message')}")
    node = tree["statements"][0]["node"]
    src = node.get("from_table") or {}
    plain = (
        node.get("type") == "SELECT_NODE"
        and not node.get("modifiers")
        and not (node.get("cte_map") or {}).get("map")
        and not node.get("group_expressions")
        and node.get("having") is None
        and node.get("qualify") is None
        and node.get("sample") is None
        and src.get("type") == "BASE_TABLE"
        and src.get("table_name") == table
        and len(node.get("select_list") or []) == 1
        and node["select_list"][0].get("class") == "STAR"
    )
    if not plain:
        raise IosightError(
            f"the 'where' condition must be a condition on {table} columns, "
            f"e.g. nprocs >= 1024 and exe like '%lammps%'. Got {clause!r} instead."
        )
    try:
        what = _refused(node["where_clause"])
    except RecursionError:
        raise IosightError(_TOO_DEEP) from None
    if what:
        raise IosightError(
            f"the 'where' condition cannot use {what}; it may use {table} columns, constants, "
            "comparisons, and/or/not, arithmetic, like/ilike/glob, in, between, is null, case, "
            f"coalesce, casts to scalar types and these functions: {_listed(_FUNCTIONS)}"
        )
    return wrapped


def _refused(node) -> str | None:
    """The first thing in a parsed expression (DuckDB's ``json_serialize_sql``) that is
    not allowed in a condition, named for the user; None when all of it is."""
    if isinstance(node, list):
        return next((w for w in map(_refused, node) if w), None)
    if not isinstance(node, dict):
        return None
    kind = node.get("class")
    if kind is not None and kind not in _CLASSES:
        return "a subquery" if kind == "SUBQUERY" else kind.lower().replace("_", " ")
    if kind == "OPERATOR" and node.get("type") not in _OPERATORS:
        return node.get("type", "?").removeprefix("OPERATOR_").lower().replace("_", " ")
    name = str(node.get("function_name", "")).lower()
    if kind == "FUNCTION" and name not in _FUNCTIONS:
        return f"{name}()" if name[:1].isalpha() else f"the {name} operator"
    if (
        kind == "FUNCTION"
        and name in _REGEX
        and any(arg["expression"].get("class") != "CONSTANT" for arg in node["arguments"][1:])
    ):
        return f"{name}() with a pattern that is not a constant"
    if kind == "FUNCTION" and name == "strftime" and not _short_constant(node["arguments"][1:]):
        return f"strftime() with a format that is not a constant of at most {MAX_FORMAT} characters"
    if kind == "CAST":
        target = str(node.get("type_expr", {}).get("type_name", "")).lower()
        if target not in _CAST_TYPES:
            return f"a cast to {target}"
    return _refused([v for k, v in node.items() if k != "type_expr"])


def _short_constant(arguments: list) -> bool:
    """Every argument is a constant of at most MAX_FORMAT characters (a strftime format
    repeats its output per row: a long one would build large strings)."""
    texts = [(a["expression"].get("literal") or {}).get("text") for a in arguments]
    return all(isinstance(t, str) and len(t) <= MAX_FORMAT for t in texts)


def _listed(names) -> str:
    return ", ".join(sorted(n for n in names if n[0].isalpha()))


@contextmanager
def deadline(cursor: duckdb.DuckDBPyConnection, seconds: float = WHERE_TIMEOUT_S) -> Iterator[None]:
    """Interrupt ``cursor``'s queries after ``seconds``; raise a clear error when it did.

    DuckDB drops an interrupt that arrives between two statements (the next one starts
    afresh), so once the time is up the cursor is interrupted again every
    ``_REPEAT_S`` until the block ends: no statement of the block runs on past it.
    """
    import duckdb

    done, fired = threading.Event(), threading.Event()

    def stop() -> None:
        if done.wait(seconds):
            return
        fired.set()
        while True:
            cursor.interrupt()
            if done.wait(_REPEAT_S):
                return

    watcher = threading.Thread(target=stop, daemon=True)
    watcher.start()
    try:
        yield
    except (duckdb.InterruptException, RuntimeError) as err:
        if fired.is_set():
            raise IosightError(
                f"the query took longer than {seconds:g} s and was stopped"
            ) from None
        raise err
    finally:
        done.set()
        watcher.join()  # no interrupt may reach the cursor's next query


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
