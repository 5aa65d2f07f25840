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

from iosight.warehouse._footer import leaf_paths

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

KEY = "job_key"
#: tables not sorted by job key, whose index entries keep each key's row number too
BY_ROW = frozenset({"jobs"})
_MAGIC = b"IOSKEYS2"  # the format (another is ignored: its file is read)
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


def write_keys(files: list[tuple[str, str]]) -> None:
    """Write the sidecar of each data file of ``files`` (table, path), their keys read in
    one query; none where a file has no ``job_key``, or cannot be read (the index then
    reads it as before)."""
    got = key_hashes([(path, table in BY_ROW) for table, path in files])
    for (_, path), keys in zip(files, got, strict=True):
        if keys is None or keys[0] is None:
            continue
        hashes, rows = keys
        size, crc = file_stamp(path)
        head = _HEAD.pack(_MAGIC, size, crc, len(hashes), rows is not None)
        body = hashes.astype("<u4").tobytes()
        if rows is not None:
            body += rows.astype("<u4").tobytes()
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


def key_hashes(
    files: list[tuple[str, bool]],
) -> list[tuple[np.ndarray | None, np.ndarray | None] | None]:
    """Each file's job-key hashes (:func:`hash_keys`), sorted, and their row numbers where
    its flag (``by_row``) is set, else None beside distinct hashes; for ``files`` of
    (path, by_row). None for a file without the column (it holds no key; its rows read
    it as null); (None, None) where it cannot be read (purged meanwhile, or
    unreadable): it may hold any."""
    import numpy as np
    import pyarrow as pa

    out: list = []
    for path, by_row in files:
        try:
            got = _key_column(path, by_row)
        except (OSError, pa.ArrowException):
            out.append((None, None))
            continue
        if got is None:
            out.append(None)
            continue
        keys, rows = got
        valid = keys.is_valid()  # arrow, not numpy: pa.array() of numpy imports pandas
        hashes = hash_keys(keys.filter(valid))
        if by_row:
            rows = rows[_mask(valid)]
            order = np.lexsort((rows, hashes))
            out.append((hashes[order], rows[order].astype(np.uint32)))
        else:
            out.append((np.unique(hashes), None))
    return out


def _mask(valid: pa.BooleanArray) -> np.ndarray:
    """``valid`` as a numpy mask, from its bits (pyarrow's ``to_numpy`` imports pandas)."""
    import numpy as np

    if len(valid) == 0:
        return np.zeros(0, bool)
    bits = np.frombuffer(valid.buffers()[1], np.uint8)
    return np.unpackbits(bits, bitorder="little")[valid.offset : valid.offset + len(valid)] == 1


_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def string_array(keys: list[str] | tuple[str, ...]) -> pa.Array:
    """``keys`` as an Arrow large string array, made from its buffers: ``pa.array`` of a
    Python list imports pandas (to ask whether it is a Series), a third of a second of
    ``iosight insights``, which hashes its batches' keys without pandas."""
    import numpy as np
    import pyarrow as pa

    data = [k.encode() for k in keys]
    offsets = np.zeros(len(data) + 1, np.int64)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return pa.LargeStringArray.from_buffers(
        len(data), pa.py_buffer(offsets), pa.py_buffer(b"".join(data))
    )


def hash_keys(keys: pa.Array) -> np.ndarray:
    """The index's hash of each (non-null) key of ``keys``: the upper 32 bits of the
    64-bit FNV-1a hash of its UTF-8 bytes, computed a byte position at a time over all
    keys at once (numpy; a job key is 32 hex digits), so neither a commit nor a page
    needs DuckDB to hash keys (handing DuckDB Python data imports pandas)."""
    import numpy as np
    import pyarrow as pa

    keys = keys.cast(pa.large_binary())
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.uint32)
    offsets = np.frombuffer(keys.buffers()[1], np.int64)[keys.offset : keys.offset + n + 1]
    data = np.frombuffer(keys.buffers()[2] or b"", np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    h = np.full(n, _FNV_OFFSET, np.uint64)
    for j in range(int(lengths.max())):
        live = lengths > j
        h[live] = (h[live] ^ data[starts[live] + j]) * np.uint64(_FNV_PRIME)
    return (h >> np.uint64(32)).astype(np.uint32)


def _key_column(path: str, by_row: bool) -> tuple[pa.Array, np.ndarray] | None:
    """The file's job keys (None where it has no ``job_key``), as large strings, and the
    row number of each (``by_row``: every row's key) or -1 (each row group's distinct
    keys: pyarrow's dictionaries of the column, each key once a row group where a reader
    of rows decodes every row's; the heatmap's many rows a job: 2.8 -> 0.7 s of CPU at
    100,000 jobs)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path, read_dictionary=None if by_row else [KEY])
    except KeyError:  # no such column to read as dictionaries
        return None
    meta = file.metadata
    if KEY not in leaf_paths(meta):
        return None
    chunks = [
        chunk
        for g in range(meta.num_row_groups)
        for chunk in file.read_row_group(g, [KEY], use_threads=False).column(0).chunks
    ]
    if not by_row:
        chunks = [c.dictionary for c in chunks]
    keys = pa.concat_arrays(
        [c.cast(pa.large_string()) for c in chunks] or [pa.nulls(0, pa.large_string())]
    )
    return keys, np.arange(len(keys), dtype=np.int64)
