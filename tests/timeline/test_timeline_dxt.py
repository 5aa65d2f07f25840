"""DXT-placed I/O, summed per bin in DuckDB, equals each segment spread on its own."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from iosight.timeline import VALUE_COLUMNS, build_timeline
from iosight.timeline._build import _layer_queries, _schema
from iosight.warehouse import Warehouse, ingest
from tests_support import exact_bins, shared_path

# (bytes, ops, time, start, end) counter suffixes, per direction
COUNTERS = {
    "read": ("BYTES_READ", "READS", "F_READ_TIME", "F_READ_START_TIMESTAMP",
             "F_READ_END_TIMESTAMP"),
    "write": ("BYTES_WRITTEN", "WRITES", "F_WRITE_TIME", "F_WRITE_START_TIMESTAMP",
              "F_WRITE_END_TIMESTAMP"),
}  # fmt: skip


def _clip(frame: pd.DataFrame, col: str) -> np.ndarray:
    if col not in frame:
        return np.zeros(len(frame))
    return np.clip(frame[col].to_numpy(np.float64, na_value=0.0), 0.0, None)


def _intervals(wh: Warehouse, key: str):
    """Independent reading of the placement rules for one job without HEATMAP bins or
    job totals: each POSIX record's DXT segments of a direction (those of every rank for
    a shared record), one interval each (bytes in proportion to length, one operation
    each, time in proportion to duration; equal shares where those sum to 0), else the
    record's counters over its first to last timestamp; STDIO records by counters."""
    js, je = wh.sql(f"select start_time, end_time from jobs where job_key = '{key}'").iloc[0]
    dxt = wh.sql(f"select * from dxt_posix where job_key = '{key}'")
    rows = []  # (start, end, column, value)
    for layer in (layer for layer in ("POSIX", "STDIO") if wh.has_table(layer.lower())):
        rec = wh.sql(f"select * from {layer.lower()} where job_key = '{key}'")
        for direction, (b, o, t, s, e) in COUNTERS.items():
            vals = np.column_stack([_clip(rec, f"{layer}_{c}") for c in (b, o, t)])
            t0 = _clip(rec, f"{layer}_{s}")
            t1 = np.maximum(_clip(rec, f"{layer}_{e}"), t0)
            cols = [VALUE_COLUMNS.index(f"{direction}_{q}") for q in ("bytes", "ops", "time")]
            for i in np.flatnonzero(vals.max(axis=1) > 0):
                segs = dxt[(dxt["record_id"] == rec["record_id"].iloc[i])]
                segs = segs[segs["op"] == direction]
                if rec["rank"].iloc[i] != -1:
                    segs = segs[segs["rank"] == rec["rank"].iloc[i]]
                if layer == "STDIO" or segs.empty:
                    here = zip(cols, vals[i], strict=True)
                    rows += [(js + t0[i], js + t1[i], c, v) for c, v in here]
                    continue
                start = segs["start"].to_numpy(np.float64)
                end = np.maximum(segs["end"].to_numpy(np.float64), start)
                for c, w in zip(cols, (segs["length"].to_numpy(np.float64), np.ones(len(segs)),
                                       end - start), strict=True):  # fmt: skip
                    share = w / w.sum() if w.sum() > 0 else np.full(len(w), 1.0 / len(w))
                    value = vals[i, cols.index(c)] * share
                    rows += zip(js + start, js + end, [c] * len(w), value, strict=True)
    start, end, col, value = (np.array(x) for x in zip(*rows, strict=True))
    return start, end, col, value


def _assert_exact(wh: Warehouse, key: str, width: float, sample: int) -> None:
    """The job's timeline in bins of ``width`` equals :func:`_intervals` spread exactly
    (within 1e-9 of each bin), on the ``sample`` bins with the most segments across an
    edge and the busiest."""
    js = float(wh.sql(f"select start_time from jobs where job_key = '{key}'").iloc[0, 0])
    got = build_timeline(wh, bin_width=width, since=js, until=js + 1, span="all").to_pandas()
    start, end, col, value = _intervals(wh, key)
    first = np.floor((start - got["bin_start"].iloc[0]) / width).astype(int)
    edge = first != np.floor((end - got["bin_start"].iloc[0]) / width)
    crossing, busy = pd.Series(first[edge]).value_counts(), pd.Series(first).value_counts()
    at = list(dict.fromkeys([*crossing.index[: sample // 2], *busy.index]))[:sample]
    assert edge.sum() > 10 and len(at) == sample
    bins, placed = got["bin_start"].to_numpy()[at], []
    for c, name in enumerate(VALUE_COLUMNS):
        want = exact_bins(start[col == c], end[col == c], value[col == c], width, bins)
        have = got[name].to_numpy()[at]
        placed += [name] if sum(want) > 0 else []
        for h, w in zip(have, want, strict=True):
            assert abs(h - float(w)) <= 1e-9 * float(w), (name, h, float(w))
    assert {name.split("_")[1] for name in placed} == {"bytes", "ops", "time"}


@pytest.fixture(scope="module")
def dxt_logs(tmp_path_factory):
    """Real DXT-heavy logs: a 192-rank job of 77,696 segments over 158 s and a one-rank
    job of 65,536 segments in 64 ms."""
    root = shared_path("darshan-logs")
    paths = sorted(root.glob("*jlbez_IO_test5*")) + sorted(root.glob("*partial_data_dxt*"))
    wh = Warehouse(tmp_path_factory.mktemp("dxt") / "wh", create=True)
    assert ingest(paths, wh, workers=1).ok
    return wh


def _biggest(wh: Warehouse, ranks: int) -> str:
    return wh.sql(
        "select job_key from dxt_posix group by job_key "
        f"having count(distinct rank) {'>' if ranks > 1 else '='} 1 order by count(*) desc"
    ).iloc[0, 0]


@pytest.mark.parametrize(("ranks", "width", "sample"), [(192, 1.0, 6), (1, 2.0**-8, 4)])
def test_real_dxt_jobs_bin_as_their_segments(dxt_logs, ranks, width, sample):
    _assert_exact(dxt_logs, _biggest(dxt_logs, ranks), width, sample)


def test_rows_grow_with_bins_not_segments(dxt_logs):
    """The DXT query sends one row per bin a job's segments lie in, plus those near or
    across a bin edge, not a row per segment."""
    key = _biggest(dxt_logs, 192)
    seg = dxt_logs.sql(
        'select j.start_time + d.start as s, j.start_time + greatest(d."end", d.start) as e '
        f"from dxt_posix d join jobs j using (job_key) where job_key = '{key}'"
    )
    near = (np.floor((seg["s"] - 2e-3) / 1.0) != np.floor((seg["e"] + 2e-3) / 1.0)).sum()
    bins = np.unique(np.floor(seg["s"] / 1.0)).size
    queries = _layer_queries(_schema(dxt_logs), "POSIX", "write", f"j.job_key = '{key}'",
                             width=1.0)  # fmt: skip
    (query,) = [q for q in queries if "from dxt_posix d join jobs" in q]
    rows = len(dxt_logs.connect().sql(query).fetchnumpy()["t0"])
    assert len(seg) > 70_000 and 0 < rows <= bins + near < len(seg) / 5, (rows, bins, near)


def test_segments_at_and_near_edges_and_shared_records(tmp_path):
    """SYNTHETIC: segments exactly on, 1e-4 s from and across bin edges, zero-length ones,
    zero-length lengths (equal shares), a shared record (rank -1) over two ranks."""
    t0, w = 1.6e9, 10.0
    start = np.array([0.0, 9.9999, 10.0, 10.0, 15.0, 19.9999, 25.0, 5.0, 5.5, 31.0, 32.0])
    end = start + np.array([1.0, 0.0001, 0.0, 9.9999, 10.0, 0.0, 0.5, 1.0, 30.0, 0.2, 0.3])
    rid = [1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 3]
    wh = Warehouse(tmp_path / "wh", create=True)
    wh.commit({
        "jobs": [pa.table({"job_key": ["j"], "start_time": [t0], "end_time": [t0 + 60]})],
        "posix": [pa.table({
            "job_key": ["j"] * 3, "rank": [0, 0, -1],
            "record_id": pa.array([1, 2, 3], pa.uint64()),
            "POSIX_BYTES_WRITTEN": [7000.0, 300.0, 50.0], "POSIX_WRITES": [7, 2, 2],
            "POSIX_F_WRITE_TIME": [3.0, 0.0, 1.0], "POSIX_F_WRITE_START_TIMESTAMP": [0.0] * 3,
            "POSIX_F_WRITE_END_TIMESTAMP": [40.0] * 3,
        })],
        "dxt_posix": [pa.table({
            "job_key": ["j"] * 11, "rank": [0] * 9 + [1, 2],
            "record_id": pa.array(rid, pa.uint64()), "seq": np.arange(11),
            "op": ["write"] * 11, "offset": np.zeros(11, np.int64),
            "length": [100, 1, 2, 3, 4, 5, 6, 0, 0, 10, 20], "start": start, "end": end,
        })],
    })  # fmt: skip
    js = wh.sql("select start_time from jobs").iloc[0, 0]
    got = build_timeline(wh, bin_width=w, since=js, until=js + 1, span="all").to_pandas()
    s, e, col, value = _intervals(wh, "j")
    for c, name in enumerate(VALUE_COLUMNS):
        want = exact_bins(s[col == c], e[col == c], value[col == c], w, got["bin_start"])
        np.testing.assert_allclose(got[name], np.array(want, dtype=float), rtol=1e-12, atol=0)
    assert got["write_bytes"].sum() == pytest.approx(7350.0, rel=1e-15)
