"""When each job became known (``jobs.known_at``), for decisions made as of a time.

A forecast or a schedule made at time T may use only what was known by T. Ingest sets
``known_at``: a batch ingest to the job's end time (a job-total table may say
otherwise), follow mode to the time the log was found complete. Warehouses written
before the column existed read it as null, and a null means the end time: every reader
uses :data:`KNOWN_AT`, never the bare column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb


def known_at_sql(alias: str = "") -> str:
    """SQL for a ``jobs`` row's known-at time (epoch s, UTC), its columns qualified by
    ``alias`` when given (a query that joins ``jobs`` with tables of their own end time)."""
    q = f"{alias}." if alias else ""
    return f"coalesce({q}known_at, {q}end_time)"


#: SQL for a ``jobs`` row's known-at time (epoch s, UTC): its ``known_at``, else its end.
KNOWN_AT = known_at_sql()


#: Columns renamed since warehouses were first written: table -> {old name: new name}.
#: ``sim_runs.n_jobs`` (a count of jobs) became ``job_count``, so that ``n_jobs`` means
#: only a worker count everywhere.
RENAMED = {"sim_runs": {"n_jobs": "job_count"}}


def view_query(con: duckdb.DuckDBPyConnection, name: str, rows: str) -> str:
    """The query of table ``name``'s view over ``rows`` (a ``read_parquet`` call): every
    column, and for a ``jobs`` table that has no ``known_at`` yet (an old warehouse),
    that column as null, so :data:`KNOWN_AT` works on every warehouse; a column renamed
    since (:data:`RENAMED`) reads under its new name, old and new files coalesced."""
    query = f"select * from {rows}"
    if name != "jobs" and name not in RENAMED:
        return query  # nothing to add or rename: no describe (a bind of every file read)
    columns = {r[0] for r in con.execute(f"describe {query}").fetchall()}
    old = {o: n for o, n in RENAMED.get(name, {}).items() if o in columns}
    if old:
        drop = ", ".join(f'"{c}"' for c in [*old, *(n for n in old.values() if n in columns)])
        merged = ", ".join(
            f'coalesce("{n}", "{o}") as "{n}"' if n in columns else f'"{o}" as "{n}"'
            for o, n in old.items()
        )
        query = f"select * exclude ({drop}), {merged} from {rows}"
    if name != "jobs" or "known_at" in columns:
        return query
    return f"select *, null::double as known_at from {rows}"


def part_view_query(
    con: duckdb.DuckDBPyConnection, name: str, columns: list[tuple[str, str]], rows: str | None
) -> str:
    """The query of a view of part of table ``name`` (its files ``rows`` reads, or none)
    under the whole table's ``columns`` (name, DuckDB type): typed nulls where the part's
    files lack a column, so every query binds as on the whole table (a job's files, a key
    range's)."""
    nulls = ", ".join(
        f'cast(null as {t}) as "{c.replace(chr(34), chr(34) * 2)}"' for c, t in columns
    )
    query = f"select {nulls} where false"
    if rows is not None:
        query += f" union all by name ({view_query(con, name, rows)})"
    return query
