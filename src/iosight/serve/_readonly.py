"""The served warehouse: read-only DuckDB, one cursor per thread, guarded user SQL.

The web server answers requests on several threads. It shares one DuckDB database
(the warehouse's views, no copy of any table) and gives each thread its own cursor,
as DuckDB asks of threaded callers. Before the first cursor is handed out the
database is locked down: DuckDB may read only the warehouse's ``tables/`` folder
(``allowed_directories``), nothing else on disk (``enable_external_access=false``:
no ``read_csv('/etc/passwd')``, no ``COPY ... TO``, no ``ATTACH``, no extension
install) and the configuration cannot be changed back (``lock_configuration``).
User SQL (the Jobs page's ``where`` box) must also parse as one condition of one
``SELECT`` (:func:`check_where`) and is interrupted after a time limit
(:func:`deadline`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from iosight._errors import IosightError
from iosight.warehouse import Warehouse

if TYPE_CHECKING:
    import duckdb

WHERE_TIMEOUT_S = 10.0


class ServedWarehouse(Warehouse):
    """A :class:`~iosight.warehouse.Warehouse` that only reads, safely from many threads.

    ``connect()`` returns this thread's cursor on one locked-down DuckDB database;
    every library function that takes a warehouse (``job_summary``,
    ``recommend_start``, ...) works on it unchanged. Writing raises. When tables
    appear or vanish on disk (``iosight timeline build`` while the server runs),
    :meth:`refresh` rebuilds the views.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, create=False)
        self._guard = threading.Lock()
        self._local = threading.local()
        self._generation = 0
        self._known: list[str] = []

    def refresh(self) -> None:
        """Rebuild the views when the set of tables on disk changed (cheap otherwise)."""
        if self.tables() != self._known:
            with self._guard:
                if self._con is not None:
                    self._con.close()
                self._con = None
                self._generation += 1

    def connect(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor on the shared, locked-down database."""
        local = self._local
        if getattr(local, "generation", None) != self._generation or local.cursor is None:
            with self._guard:
                if self._con is None:
                    self._known = self.tables()
                    con = super().connect()  # the views, over read_parquet of tables/
                    tables = (str((self.path / "tables").resolve()) + "/").replace("'", "''")
                    con.execute(f"set allowed_directories = ['{tables}']")
                    con.execute("set enable_external_access = false")
                    con.execute("set lock_configuration = true")
                local.cursor = self._con.cursor()
                local.generation = self._generation
        return local.cursor

    def commit(self, *args, **kwargs) -> str:
        raise IosightError(f"the served warehouse {self.path} is read-only")


def check_where(clause: str, table: str = "jobs") -> str:
    """The user's SQL condition, parenthesised, once it parses as one ``WHERE`` of one query.

    DuckDB parses ``SELECT * FROM <table> WHERE (<clause>)``; anything but a single
    plain select over ``table`` (a second statement, a ``UNION`` smuggled past the
    parentheses, an ``ORDER BY``/``LIMIT``, a ``WITH``) is refused. The database's
    own lock-down (see the module docstring) still applies to what a condition calls.
    """
    import duckdb

    clause = clause.strip()
    if not clause:
        raise IosightError("the 'where' condition is empty")
    wrapped = f"({clause})"
    query = f'SELECT * FROM "{table}" WHERE {wrapped}'
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as err:
        raise IosightError(f"cannot read the 'where' condition: {_first_line(err)}") from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise IosightError("the 'where' condition must be one condition, not statements")
    con = duckdb.connect()
    try:
        tree = json.loads(con.execute("select json_serialize_sql(?)", [query]).fetchone()[0])
    finally:
        con.close()
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
    return wrapped


@contextmanager
def deadline(cursor: duckdb.DuckDBPyConnection, seconds: float = WHERE_TIMEOUT_S) -> Iterator[None]:
    """Interrupt ``cursor``'s query after ``seconds``; raise a clear error when it was."""
    import duckdb

    fired = threading.Event()

    def stop() -> None:
        fired.set()
        cursor.interrupt()

    timer = threading.Timer(seconds, stop)
    timer.start()
    try:
        yield
    except (duckdb.InterruptException, RuntimeError) as err:
        if fired.is_set():
            raise IosightError(
                f"the query took longer than {seconds:g} s and was stopped"
            ) from None
        raise err
    finally:
        timer.cancel()


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
