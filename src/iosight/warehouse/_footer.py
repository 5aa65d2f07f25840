"""What a Parquet file's footer says, read without keeping the footer.

pyarrow's ``FileMetaData.schema`` and the ``ParquetSchema`` it returns refer to each
other, so a footer whose ``schema`` was looked at stays in memory after its last use
until Python's cyclic garbage collector next runs: reading the footers of 200 of a
million jobs' ``heatmap`` files held 66 MB that way (some 330 kB each, in glibc's heap,
which the freed footers then left that much larger), and none when read as here
(docs/warehouse.md, "What a chunk of the million held, taken apart").
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq


def leaf_paths(meta: pq.FileMetaData) -> list[str]:
    """The dotted paths of the file's leaf columns, in order (from its first row
    group's column chunks; a file of no row group has a footer too small to matter)."""
    if meta.num_row_groups:
        group = meta.row_group(0)
        return [group.column(i).path_in_schema for i in range(meta.num_columns)]
    return [meta.schema.column(i).path for i in range(meta.num_columns)]


def arrow_schema(path: str | Path, meta: pq.FileMetaData) -> pa.Schema:
    """The Arrow schema of file ``path`` whose footer ``meta`` is (read with it, not
    parsed again)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path, metadata=meta).schema_arrow
