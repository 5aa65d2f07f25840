"""Each data file's job-key hashes, written beside it when it enters its table.

The key index (:mod:`iosight.warehouse._jobfiles`) needs, for each file of a job-keyed
table, the hashes of the keys it holds. Read from the file's ``job_key`` column they took
a server a minute after its start at 500,000 jobs (the heatmap's 1.9 GB), while every
page read the files not read yet. :meth:`~iosight.warehouse.Warehouse.commit_staged`
therefore writes them when a file is staged (ingest's and compaction's commits alike) as
a sidecar, ``.<file>.keys`` beside it, moved, deleted and purged with it, which the index
loads in well under a millisecond.

A sidecar holds the data file's size and the CRC-32 of its Parquet footer (which lists
its row groups, their offsets and statistics): one whose file was rewritten (a
``--force`` re-ingest deletes rows in place) or that was cut short no longer matches and
is ignored, and the index reads the column as before; so is a missing one (a warehouse
written before sidecars). Then the sorted hashes (4 bytes a key and file) and, for the
tables of :data:`BY_ROW`, each hash's row number (4 more).
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import numpy as np

KEY = "job_key"
#: tables not sorted by job key, whose index entries keep each key's row number too
BY_ROW = frozenset({"jobs"})
HALF = "hash({}) >> 32"  # a key's hash in the index: the upper half of DuckDB's
_MAGIC = b"IOSKEYS1"
_HEAD = struct.Struct("<8sQIIB")  # magic, file size, footer CRC-32, hashes, has rows


def sidecar(path: str) -> str:
    """The sidecar's path of the data file ``path``: a dot file beside it, which table
    listings (Parquet files, no dot files) leave out."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.keys")


def file_stamp(path: str) -> tuple[int, int]:
    """The data file's size and the CRC-32 of its Parquet footer (two reads of its end);
    OSError where it is no Parquet file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, 8, size - 8) if size >= 12 else b""
        if tail[4:] != b"PAR1" or (length := int.from_bytes(tail[:4], "little")) > size - 12:
            raise OSError(f"not a Parquet file: {path}")
        return size, zlib.crc32(os.pread(fd, length + 8, size - length - 8))
    finally:
        os.close(fd)


def write_keys(con: duckdb.DuckDBPyConnection, path: str, table: str) -> None:
    """Write the sidecar of the data file ``path`` of ``table`` (none where the file has
    no ``job_key``, or cannot be read: the index then reads it as before)."""
    if not has_key(path):
        return
    hashes, rows = key_hashes(con, path, table in BY_ROW)
    if hashes is None:
        return
    size, crc = file_stamp(path)
    has_rows = rows is not None
    head = _HEAD.pack(_MAGIC, size, crc, len(hashes), has_rows)
    body = hashes.astype("<u4").tobytes() + (rows.astype("<u4").tobytes() if has_rows else b"")
    tmp = sidecar(path) + ".tmp"
    with open(tmp, "wb") as out:
        out.write(head + body)
    os.replace(tmp, sidecar(path))


def read_keys(path: str, size: int) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The hashes (and row numbers) the sidecar of the data file ``path`` (of ``size``
    bytes) holds; None where it has none, or one that does not match it."""
    import numpy as np

    try:
        with open(sidecar(path), "rb") as f:
            data = f.read()
        magic, stamped, crc, count, has_rows = _HEAD.unpack_from(data)
        if (
            magic != _MAGIC
            or stamped != size
            or len(data) != _HEAD.size + 4 * count * (1 + has_rows)
        ):
            return None
        if file_stamp(path) != (size, crc):
            return None
    except (OSError, struct.error):
        return None
    values = np.frombuffer(data, "<u4", count * (1 + has_rows), _HEAD.size).astype(np.uint32)
    return values[:count], (values[count:] if has_rows else None)


def remove_keys(path: str) -> None:
    """Delete the sidecar of the data file ``path`` (once the file is gone or rewritten)."""
    try:
        os.unlink(sidecar(path))
    except FileNotFoundError:
        pass


def has_key(path: str) -> bool:
    """Whether the Parquet file ``path`` has a ``job_key`` column (its footer alone;
    False where it cannot be read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return KEY in pq.read_schema(path).names
    except (OSError, pa.ArrowException):
        return False


def key_hashes(
    con: duckdb.DuckDBPyConnection, path: str, by_row: bool
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The file's job-key hashes (upper 32 bits of DuckDB's ``hash``), sorted, and their
    row numbers where ``by_row`` (:func:`_hashes_by_row`), else None beside distinct
    hashes. The keys are read as pyarrow's dictionaries of the column, each key once a
    row group where DuckDB decodes every row's (the heatmap's many rows a job: 2.8 ->
    0.7 s of CPU at 100,000 jobs). A file without the column holds no key (its rows read
    it as null); None where the file cannot be read (purged meanwhile, or unreadable):
    it may hold any."""
    import duckdb
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        if KEY not in meta.schema.names:
            return np.zeros(0, np.uint32), None
        if by_row:
            return _hashes_by_row(con, path)
        file = pq.ParquetFile(path, metadata=meta, read_dictionary=[KEY])
        keys = [  # a row group at a time: its rows' indices into the dictionary are dropped
            chunk.dictionary
            for group in range(meta.num_row_groups)
            for chunk in file.read_row_group(group, [KEY], use_threads=False).column(0).chunks
        ]
        value_type = file.schema_arrow.field(KEY).type.value_type
        con.register("_keys", pa.table({"k": pa.chunked_array(keys, value_type)}))
        got = con.execute(f"select distinct {HALF.format('k')} h from _keys where k is not null")
        return np.sort(got.fetchnumpy()["h"].astype(np.uint32)), None
    except (OSError, pa.ArrowException, duckdb.Error):
        return None, None


def _hashes_by_row(con: duckdb.DuckDBPyConnection, path: str) -> tuple[np.ndarray, np.ndarray]:
    """Each row's job-key hash, sorted, and the row numbers beside them: a table of a row
    a job (``jobs``) has as many keys as rows, so reading each row's is no dearer."""
    import numpy as np

    got = con.execute(
        f"select {HALF.format(KEY)} h, file_row_number r "
        "from read_parquet(?, file_row_number=true) where job_key is not null order by h, r",
        [path],
    ).fetchnumpy()
    return got["h"].astype(np.uint32), got["r"].astype(np.uint32)
