"""The ``heatmap`` table stores only the bins with bytes; what reads it answers as it did
from every bin (PyDarshan's own HEATMAP records, all bins, as the reference)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from iosight.timeline import build_timeline
from iosight.warehouse import Warehouse, ingest
from tests_support import assert_same_timeline, shared_path

# real logs with HEATMAP bins without bytes (between and after the I/O, and records of
# none: the dlio logs' STDIO), with DXT (the last two) and without (the dlio logs)
PATTERNS = (
    "*dlio_logs*2110482*",
    "*dlio_logs*2110483*",
    "*dlio_logs*2110531*",
    "*runtime_and_dxt_heatmaps_diagonal_write_only*",
    "*nonmpi_workflow__worker_3*",
)
# the Job page's HEATMAP view as it was when every bin was stored
_OLD_VIEW = (
    "select bin_start, sum(read_bytes) read_bytes, sum(write_bytes) write_bytes "
    "from heatmap where job_key = ? and module = 'POSIX' group by 1 order by 1"
)


def _every_bin(path, key: str) -> pd.DataFrame:
    """Every HEATMAP bin of the log, read by PyDarshan (``DarshanReport.heatmaps``), as
    rows of the ``heatmap`` table as it was: no ``nbins``, no ``record_id``."""
    import darshan

    report = darshan.DarshanReport(str(path), read_all=False)
    report.read_all_heatmap_records()
    parts = []
    for module, hm in report.heatmaps.items():
        read, write = (hm.to_df(ops=[op], interval_index=False) for op in ("read", "write"))
        width, n = hm._bin_width_seconds, hm._nbins
        for rank in read.index:
            bins = np.arange(n)
            cols = {"job_key": key, "module": module, "rank": int(rank), "bin": bins}
            cols |= {"bin_width": width, "bin_start": bins * width}
            cols |= {"read_bytes": read.loc[rank].to_numpy(np.int64)}
            parts.append(pd.DataFrame(cols | {"write_bytes": write.loc[rank].to_numpy(np.int64)}))
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> tuple[Warehouse, Warehouse, pd.DataFrame]:
    """The logs ingested (bins with bytes), a copy whose ``heatmap`` holds every bin as
    PyDarshan reads them, and those bins."""
    pytest.importorskip("darshan")
    root = shared_path("darshan-logs")
    paths = sorted({p for pat in PATTERNS for p in root.glob(pat)})
    assert len(paths) == len(PATTERNS)
    sparse = Warehouse(tmp_path_factory.mktemp("sparse") / "wh", create=True)
    assert ingest(paths, sparse, workers=1).ok
    dense = Warehouse(shutil.copytree(sparse.path, tmp_path_factory.mktemp("dense") / "wh"))
    jobs = sparse.sql("select job_key, source_path from jobs")
    pairs = zip(jobs["job_key"], jobs["source_path"], strict=True)
    by_name = {p.rsplit("/", 1)[-1]: k for k, p in pairs}
    every = pd.concat([_every_bin(p, by_name[p.name]) for p in paths], ignore_index=True)
    dense.write_table("heatmap", pa.Table.from_pandas(every, preserve_index=False))
    return sparse, dense, every


def test_stored_bins_are_the_bins_with_bytes(both):
    """No stored bin is all zero, every bin with bytes is stored as it is, and ``nbins``
    is the record's bin count."""
    sparse, _, every = both
    rows = sparse.sql("select * from heatmap")
    assert len(rows) and not ((rows["read_bytes"] == 0) & (rows["write_bytes"] == 0)).any()
    with_bytes = every[(every["read_bytes"] != 0) | (every["write_bytes"] != 0)]
    assert len(with_bytes) < len(every) / 2  # most bins of these logs have no bytes
    cols = ["job_key", "module", "rank", "bin", "bin_width", "bin_start"]
    cols += ["read_bytes", "write_bytes"]
    pd.testing.assert_frame_equal(
        rows[cols].sort_values(cols[:4], ignore_index=True),
        with_bytes[cols].sort_values(cols[:4], ignore_index=True),
        check_dtype=False,
    )
    n = every.groupby(["job_key", "module", "rank"])["bin"].count().rename("want")
    got = rows.groupby(["job_key", "module", "rank"])["nbins"].agg(["min", "max"])
    got = got.join(n)
    assert (got["min"] == got["want"]).all() and (got["max"] == got["want"]).all()


def test_the_timeline_is_the_one_of_every_bin(both):
    """Each job's timeline in 1-second bins (the heatmaps' bins are 0.1 to 6.4 s wide)."""
    sparse, dense, _ = both
    starts = sparse.sql("select distinct start_time from jobs order by 1")["start_time"]
    assert len(starts) == len(PATTERNS)
    for t in starts.astype(float):
        one = {"bin_width": 1.0, "since": t, "until": t + 1}
        got = build_timeline(sparse, **one).to_pandas()
        assert got["read_bytes"].sum() + got["write_bytes"].sum() > 0
        assert_same_timeline(got, build_timeline(dense, **one).to_pandas())


def test_the_job_pages_heatmap_is_the_one_of_every_bin(both):
    """The Job page's (and ``iosight job --plot``'s) HEATMAP view of each job without DXT
    equals the view of every bin, zeros between and after the I/O included; read from
    a warehouse of every bin without ``nbins`` (ingested before it was kept), the same."""
    from iosight.serve._pages import job_timeline
    from iosight.serve._readonly import ServedWarehouse

    sparse, dense, _ = both
    no_dxt = "job_key not in (select job_key from dxt_posix)"
    keys = sparse.sql(f"select job_key from jobs where {no_dxt}")
    assert len(keys) == 3
    for key in keys["job_key"]:
        want = dense.sql(_OLD_VIEW, [key])
        assert (want["read_bytes"] + want["write_bytes"] == 0).mean() > 0.5
        for wh in (ServedWarehouse(sparse.path), ServedWarehouse(dense.path)):
            kind, got = job_timeline(wh, key)
            assert kind == "heatmap"
            assert list(got.columns) == list(want.columns)
            for col in want.columns:
                np.testing.assert_array_equal(got[col].to_numpy(float), want[col].to_numpy(float))


def test_similarity_series_are_those_of_every_bin(both):
    from iosight.similarity import darshan_series

    sparse, dense, _ = both
    for got, want in zip(darshan_series(sparse), darshan_series(dense), strict=True):
        pd.testing.assert_frame_equal(got, want)


def test_a_hostile_extent_draws_bounded_bins(tmp_path):
    """A log may claim 10**12 bins while storing two with bytes: the view sums adjacent
    bins (at most ``max_bins`` of them, every byte kept) instead of allocating the extent;
    a bin past the claimed ``nbins`` (corrupt) widens the extent rather than failing."""
    from iosight.report.heatmap import job_heatmap

    wh = Warehouse(tmp_path / "wh", create=True)
    n = 10**12
    rows = {
        "job_key": ["j", "j", "j"], "module": ["POSIX"] * 3, "rank": [0, 0, 1],
        "record_id": pa.array([1, 1, 2], pa.uint64()), "bin": [5, n - 1, n + 9],
        "nbins": [n, n, 3], "bin_width": [0.5] * 3, "bin_start": [2.5, (n - 1) * 0.5, 0.0],
        "read_bytes": [7, 0, 4], "write_bytes": [0, 11, 0],
    }  # fmt: skip
    wh.write_table("heatmap", pa.table(rows))
    got = job_heatmap(wh, "j", max_bins=1000)
    assert 0 < len(got) <= 1000
    assert got["read_bytes"].sum() == 11 and got["write_bytes"].sum() == 11
    step = got["bin_start"].diff().dropna().unique()
    assert len(step) == 1 and step[0] >= 0.5 * (n + 10) / 1000
