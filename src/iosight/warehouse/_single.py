"""One log without a warehouse: ``iosight job LOG.darshan``, like ``darshan summary LOG``."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from iosight._errors import IosightError
from iosight.warehouse._ingest import content_key, ingest_batch
from iosight.warehouse._store import Warehouse, new_batch_id


@contextmanager
def log_warehouse(path: str | os.PathLike) -> Iterator[Warehouse]:
    """A temporary warehouse holding only the source at ``path``, deleted on exit.

    The source is read in this process (no worker pool to start) by the same reader and
    table layout as :func:`ingest`, so every warehouse analysis (``job_summary``, the job
    figure) works on a single file as it would after an ingest.
    """
    path = Path(path)
    if not path.is_file():
        raise IosightError(f"{path}: no such file")
    with tempfile.TemporaryDirectory(prefix="iosight-log-") as tmp:
        wh = Warehouse(Path(tmp) / "wh", create=True)
        batch = new_batch_id()
        staged = ingest_batch(
            (str(wh.staging_dir(batch)), [(content_key(path), str(path), None)], "native"),
            lambda i: None,
        )
        if staged["errors"]:
            raise IosightError(staged["errors"][0][1])
        wh.commit_staged(batch, staged["tables"])
        yield wh
