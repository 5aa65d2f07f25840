"""Query results as plain Python values, for commands that only print them.

:meth:`Warehouse.sql` returns a pandas DataFrame, and importing pandas (with numpy)
takes longer than the rest of a small query's command together. :class:`Rows` is what
DuckDB fetches without either: column names, their SQL types and tuples of values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

# DuckDB types whose values are numbers (right-aligned, human units in tables)
_NUMERIC = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "BOOLEAN",
)  # fmt: skip


@dataclass(frozen=True)
class Rows:
    """The rows of a query: ``columns``, their DuckDB ``types`` and ``values``, one
    tuple per row (DECIMAL values as floats, as a DataFrame holds them)."""

    columns: list[str]
    types: list[str]
    values: list[tuple]

    @classmethod
    def fetch(cls, result: duckdb.DuckDBPyConnection) -> Rows:
        """Every row of the query ``result`` (a connection an ``execute`` left it on)."""
        columns = [d[0] for d in result.description]
        types = [str(d[1]) for d in result.description]
        values = result.fetchall()
        decimal = [i for i, t in enumerate(types) if t.startswith("DECIMAL")]
        if decimal:
            values = [_floats(row, decimal) for row in values]
        return cls(columns, types, values)

    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence]) -> Rows:
        """Rows of equal-length ``columns`` (numpy arrays or lists; a numpy array's
        kind of values gives its column's type, as a DataFrame's dtype would)."""
        names = list(columns)
        types = [_type_of(columns[c]) for c in names]
        lists = [_as_list(columns[c]) for c in names]
        return cls(names, types, list(zip(*lists, strict=True)))

    def __len__(self) -> int:
        return len(self.values)

    @property
    def empty(self) -> bool:
        """Whether there is no row (as a DataFrame's ``empty``)."""
        return not self.values

    def numeric(self) -> list[bool]:
        """Whether each column holds numbers."""
        return [t.split("(")[0] in _NUMERIC for t in self.types]

    def records(self) -> list[dict]:
        """One ``{column: value}`` dict per row."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.values]


def records_of(table) -> list[dict]:
    """One ``{column: value}`` dict per row of ``table``: :class:`Rows` or a DataFrame
    (what the results that come as either are read by)."""
    return table.records() if isinstance(table, Rows) else table.to_dict("records")


# numpy's kinds of values: bool, signed and unsigned integers, floats
_KINDS = {"b": "BOOLEAN", "i": "BIGINT", "u": "UBIGINT", "f": "DOUBLE"}


def _type_of(values: Sequence) -> str:
    kind = getattr(getattr(values, "dtype", None), "kind", None)
    return _KINDS.get(kind, "VARCHAR")


def _as_list(values: Sequence) -> list:
    """Plain Python values (a numpy array's ``tolist``)."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


def _floats(row: tuple, columns: list[int]) -> tuple:
    out = list(row)
    for i in columns:
        if isinstance(out[i], Decimal):
            out[i] = float(out[i])
    return tuple(out)
