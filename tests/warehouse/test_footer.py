"""Footers read without the reference cycle that keeps them until the collector runs."""

from __future__ import annotations

import gc
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iosight.data import example_logs
from iosight.warehouse import Warehouse, ingest
from iosight.warehouse._footer import arrow_schema, leaf_paths
from iosight.warehouse._keyrange import _footer_facts
from iosight.warehouse._merge import sorted_group


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[str]:
    """The ``posix`` files of the example logs, one commit each."""
    wh = Warehouse(tmp_path_factory.mktemp("footer") / "wh", create=True)
    logs = [str(p) for p in example_logs()][:6]
    assert ingest(logs, wh, workers=1, batch_size=1, compact=False).ok
    return [str(f) for f in wh.table_files("posix")]


def _garbage(read) -> int:
    """Objects left unreachable in cycles by ``read``, found by a collection."""
    gc.collect()
    gc.disable()
    try:
        read()
        return gc.collect()
    finally:
        gc.enable()


def test_a_footers_schema_is_a_cycle_that_holds_it(files):
    """What the readers below avoid: ``FileMetaData.schema`` ties the footer in a cycle."""
    assert _garbage(lambda: [pq.read_metadata(f).schema for f in files]) >= len(files)


def test_footer_facts_leave_no_cycle(files):
    def read():
        for f in files:
            meta = pq.read_metadata(f)
            assert "job_key" in leaf_paths(meta)
            assert "job_key" in arrow_schema(f, meta).names
            _footer_facts(f)
        group = sorted_group([Path(f) for f in files], ["job_key"])
        assert group is not None and sum(len(slab) for slab in group.slabs()) == len(files)

    assert _garbage(read) == 0


def test_leaf_paths_and_arrow_schema_are_the_footers(files):
    for f in files:
        meta = pq.read_metadata(f)
        assert leaf_paths(meta) == [meta.schema.column(i).path for i in range(meta.num_columns)]
        assert arrow_schema(f, meta) == meta.schema.to_arrow_schema()
