"""Counter rows of a ``darshan-parser`` dump: split into Arrow columns, grouped into
records and pivoted to module tables (3.x rows, and 1.x/2.x ``CP_*`` rows through the
2.x record interface :func:`~iosight.darshan._darshan2.cp_record_tables`)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import CorruptLogError
from iosight.darshan._darshan2 import cp_record_tables
from iosight.darshan._darshan2_counters import CP_COUNTERS, CP_F_COUNTERS

if TYPE_CHECKING:
    import pyarrow as pa

ROW_FIELDS = ("module", "rank", "record_id", "counter", "value", "name", "mount", "fs")
LEGACY_FIELDS = ROW_FIELDS[1:]


def _record_rows(data: bytes, fields: tuple[str, ...] = ROW_FIELDS) -> pa.Table:
    """The tab-separated counter rows of the whole dump as an all-string Arrow table.

    Arrow's CSV reader splits the text; lines that are not 8-field rows
    (comments, ``total_*`` lines, DXT rows) are skipped, unless they look like
    a counter row with the wrong number of fields.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    bad: list[str] = []

    def on_bad(row) -> str:
        text = row.text or ""
        file_list = text.split("\t", 1)[0].isdigit()  # --file-list rows: record id first
        if text[:1] not in ("#", " ", "") and "\t" in text and not file_list:
            if len(fields) == 8:
                bad.append(text)
        return "skip"

    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(column_names=list(fields), block_size=1 << 24),
            parse_options=pacsv.ParseOptions(
                delimiter="\t", quote_char=False, invalid_row_handler=on_bad
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={f: pa.string() for f in fields}, strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid as err:
        raise CorruptLogError(
            f"unreadable parser output ({str(err).splitlines()[0][:80]})"
        ) from None
    if bad:
        raise CorruptLogError(f"malformed counter row {bad[0][:60]!r}")
    first = table[fields[0]]
    drop = pc.starts_with(first, "#")  # the column-title line
    if fields[0] == "module":
        drop = pc.or_(drop, pc.utf8_is_digit(first))  # --file-list rows
    return table.filter(pc.invert(drop))


def _as(values: pa.Array, typ: pa.DataType, what: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(values, typ).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise CorruptLogError(f"non-numeric value in {what}") from None


def _records(rank: np.ndarray, rid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Record index of every row (first-appearance order) and the first row of each record.

    darshan-parser prints a record's counters on consecutive rows, so records
    are runs of equal ``(rank, record id)``; a record split over several runs is
    still merged into one.
    """
    n = len(rank)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    change = np.flatnonzero((rank[1:] != rank[:-1]) | (rid[1:] != rid[:-1])) + 1
    starts = np.concatenate([[0], change])
    seen: dict[tuple[int, int], int] = {}
    run_code = np.array(
        [
            seen.setdefault((r, i), len(seen))
            for r, i in zip(rank[starts].tolist(), rid[starts].tolist(), strict=True)
        ],
        np.int64,
    )
    lengths = np.diff(np.concatenate([starts, [n]]))
    codes = np.repeat(run_code, lengths)
    _, first_run = np.unique(run_code, return_index=True)
    return codes, starts[first_run]


def _counter_groups(rows: pa.Table, rec: np.ndarray):
    """Per counter name (first-appearance order): its rows' record codes and values."""
    import pyarrow as pa

    encoded = rows["counter"].combine_chunks().dictionary_encode()
    col = encoded.indices.to_numpy()
    counters = encoded.dictionary.to_pylist()
    order = np.argsort(col, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(col, minlength=len(counters)))])
    values = rows["value"].combine_chunks().take(pa.array(order))
    rec = rec[order]
    for j, name in enumerate(counters):
        lo, hi = bounds[j], bounds[j + 1]
        yield name, rec[lo:hi], values.slice(lo, hi - lo)


def _module_table(rows: pa.Table, module: str) -> pa.Table:
    """Counter rows of one module pivoted to ``rank, record_id, [file_rec_id,] counters``."""
    import pyarrow as pa

    rank = _as(rows["rank"], pa.int64(), f"{module} rank")
    rid = _as(rows["record_id"], pa.uint64(), f"{module} record id")
    rec, first = _records(rank, rid)
    n = len(first)
    data: dict[str, pa.Array] = {
        "rank": pa.array(rank[first], pa.int64()),
        "record_id": pa.array(rid[first], pa.uint64()),
    }
    for name, where, values in _counter_groups(rows, rec):
        if name.endswith("_FILE_REC_ID"):
            typ, key = pa.uint64(), "file_rec_id"
        else:
            typ, key = (pa.float64() if "_F_" in name else pa.int64()), name
        out = np.zeros(n, typ.to_pandas_dtype())
        out[where] = _as(values, typ, f"{module} {name}")
        data[key] = pa.array(out, typ)
    if "file_rec_id" in data:  # contract: right after record_id
        data = {k: data[k] for k in ("rank", "record_id", "file_rec_id")} | data
    return pa.table(data)


def _legacy_tables(rows: pa.Table) -> dict[str, pa.Table]:
    """Darshan 1.x/2.x parser rows (``<rank> <file> <counter> <value> <suffix>...``).

    The ``CP_*`` counters are laid out as the 2.06 record and then split into
    ``posix``/``mpiio`` exactly as :func:`read_darshan2` does, so a 2.x log and
    its 2.x parser dump give the same tables; counters unknown to 2.06 keep
    their name in ``posix``.
    """
    import pyarrow as pa

    rank = _as(rows["rank"], pa.int64(), "rank")
    rid = _as(rows["record_id"], pa.uint64(), "record id")
    rec, first = _records(rank, rid)
    n = len(first)
    ints = np.zeros((n, len(CP_COUNTERS)), np.int64)
    floats = np.zeros((n, len(CP_F_COUNTERS)), np.float64)
    extra: dict[str, np.ndarray] = {}
    for name, where, values in _counter_groups(rows, rec):
        if name in CP_F_COUNTERS:
            floats[where, CP_F_COUNTERS.index(name)] = _as(values, pa.float64(), name)
        elif name in CP_COUNTERS:
            ints[where, CP_COUNTERS.index(name)] = _as(values, pa.int64(), name)
        else:
            extra.setdefault(name, np.zeros(n, np.int64))[where] = _as(values, pa.int64(), name)
    tables = cp_record_tables(rank[first], rid[first], ints, floats)
    for name, values in extra.items():
        tables["posix"] = tables["posix"].append_column(name, pa.array(values, pa.int64()))
    return tables
