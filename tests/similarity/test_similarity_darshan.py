"""Series from Darshan tables: hand-made tables, and conservation on a real log."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from iosight.similarity import darshan_series, series_from_darshan


def _put(wh, name, rows):
    wh.write_table(name, pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False))


def test_hand_made_tables(warehouse):
    _put(warehouse, "jobs", {"job_key": ["a"], "jobid": [7], "run_time": [900.0]})
    # one heatmap bin straddling the 600 s boundary: 300 bytes, 1/3 before and 2/3 after
    _put(
        warehouse,
        "heatmap",
        {
            "job_key": ["a"],
            "module": ["POSIX"],
            "rank": [0],
            "record_id": [1],
            "bin": [0],
            "bin_width": [30.0],
            "bin_start": [590.0],
            "read_bytes": [0],
            "write_bytes": [300],
        },
    )
    _put(
        warehouse,
        "dxt_posix",
        {
            "job_key": ["a"] * 3,
            "rank": [0, 0, 1],
            "record_id": [1, 1, 1],
            "hostname": ["h0", "h0", "h1"],
            "seq": [0, 1, 0],
            "op": ["read", "read", "write"],
            "offset": [0, 10, 0],
            "length": [10, 10, 5],
            "start": [1.0, 700.0, 2.0],
            "end": [1.5, 701.0, 2.5],
        },
    )
    _put(
        warehouse,
        "posix",
        {
            "job_key": ["a"],
            "rank": [-1],
            "record_id": [1],
            "POSIX_OPENS": [12],
            "POSIX_STATS": [0],
            "POSIX_RENAME_SOURCES": [0],
            "POSIX_F_OPEN_START_TIMESTAMP": [0.0],
            "POSIX_F_OPEN_END_TIMESTAMP": [900.0],
            "POSIX_F_CLOSE_END_TIMESTAMP": [900.0],
        },
    )
    series, jobs = darshan_series(warehouse)
    assert jobs[["job", "jobid", "n_segments", "n_nodes", "n_fs"]].values.tolist() == [
        ["a", 7, 2, 3, 1]
    ]
    assert jobs["metrics"][0] == "md_other,read_calls,write_bytes,write_calls"
    got = {(r.node, r.metric, r.segment): r.value for r in series.itertuples()}
    assert got[("h0", "write_bytes", 0)] == pytest.approx(100 / 600)
    assert got[("h0", "write_bytes", 1)] == pytest.approx(200 / 300)  # partial segment: 300 s
    assert got[("h0", "read_calls", 0)] == pytest.approx(1 / 600)
    assert got[("h0", "read_calls", 1)] == pytest.approx(1 / 300)
    assert got[("h1", "write_calls", 0)] == pytest.approx(1 / 600)
    assert got[("shared", "md_other", 0)] == pytest.approx(8 / 600)  # 12 opens over 900 s
    assert got[("shared", "md_other", 1)] == pytest.approx(4 / 300)
    assert not any(m.startswith("md_file") for m in series["metric"])  # never invented
    counts = series_from_darshan(warehouse)
    assert counts["jobs"] == 1
    assert warehouse.sql("select count(*) n from sim_codings")["n"][0] == 3


def test_real_log_conserves_bytes_and_calls(shared, warehouse):
    from iosight.warehouse import ingest

    log = shared(
        "darshan-logs", "darshan-logs-hist-401093e__darshan_logs__nonmpi_workflow__main.darshan"
    )
    ingest([log], warehouse, workers=1)
    series, jobs = darshan_series(warehouse)
    run_time = warehouse.sql("select run_time from jobs")["run_time"][0]
    n = int(jobs["n_segments"][0])
    dur = np.minimum(600.0, run_time - 600.0 * np.arange(n))
    series["amount"] = series["value"] * dur[series["segment"]]
    total = series.groupby("metric")["amount"].sum()
    heat = warehouse.sql(
        "select sum(read_bytes) r, sum(write_bytes) w from heatmap "
        "where module in ('POSIX', 'STDIO')"
    )
    assert total["write_bytes"] == pytest.approx(heat["w"][0], rel=1e-9)
    calls = warehouse.sql("select op, count(*) n from dxt_posix group by op").set_index("op")["n"]
    for op in ("read", "write"):
        if op in calls:
            assert total[f"{op}_calls"] == pytest.approx(calls[op], rel=1e-9)


def test_a_job_without_run_time_gets_no_series(warehouse):
    """Synthetic tables: job ``b`` has the same HEATMAP bin as ``a`` but no run time (a
    Darshan log whose job record is garbage keeps its records, not its times). It has no
    time axis to cut: no series (once, every rate divided by 1 ms), counted as untimed."""
    _put(
        warehouse,
        "jobs",
        {"job_key": ["a", "b"], "jobid": [7, None], "run_time": [900.0, None]},
    )
    bin_row = {
        "module": "POSIX",
        "rank": 0,
        "record_id": 1,
        "bin": 0,
        "bin_width": 30.0,
        "bin_start": 590.0,
        "read_bytes": 0,
        "write_bytes": 300,
    }
    _put(warehouse, "heatmap", [{"job_key": k, **bin_row} for k in ("a", "b")])
    series, jobs = darshan_series(warehouse)
    assert jobs["job"].tolist() == ["a"] and set(series["job"]) == {"a"}
    counts = series_from_darshan(warehouse)
    assert (counts["jobs"], counts["time_resolved"], counts["untimed"]) == (1, 1, 1)
