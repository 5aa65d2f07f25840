"""data_kind: which data a warehouse's jobs are, as results built on them are labelled."""

import pyarrow as pa

from iosight.warehouse import data_kind


def _jobs(keys, synthetic):
    return {"jobs": [pa.table({"job_key": keys, "synthetic": synthetic})]}


def test_real_synthetic_and_mixed(warehouse):
    assert data_kind(warehouse) == "unknown (no jobs)"
    warehouse.commit(_jobs(["a", "b"], [False, False]))
    assert data_kind(warehouse) == "real"
    warehouse.commit(_jobs(["c"], [True]))
    assert data_kind(warehouse) == "mixed (1 of 3 jobs SYNTHETIC)"
    warehouse.commit(_jobs(["a", "b"], [True, True]), delete_keys={"jobs": ["a", "b"]})
    assert data_kind(warehouse) == "SYNTHETIC"
