"""A log of a million DXT segments: read piece by piece, in memory that does not hold
them all, and the pieces are the segments the whole-table read gives."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa

from iosight.darshan import _darshan3_records, read_darshan3, table_pieces
from tests_support import shared_path

# the peak memory of `iosight job LOG` (the log read into a one-job warehouse) above the
# interpreter's after imports, for a log of n segments; pieces of 16,384 segments and
# ingest's parts of 4 MB keep what does not grow with the log small
_MEASURE = """
import sys
from pathlib import Path
import duckdb, pyarrow.parquet
from iosight.darshan import _darshan3_records
from iosight.warehouse import _ingest, log_warehouse

def status(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

_darshan3_records.CHUNK_SEGMENTS = 1 << 14
_ingest._PART_BYTES = 4 << 20
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS (ru_maxrss: the parent's)
base = status("VmRSS")
with log_warehouse(sys.argv[1]) as wh:
    n = int(wh.sql("select count(*) n from dxt_posix")["n"][0])
print(n, status("VmHWM") - base)
"""
# bytes of peak per segment more: at most the log (~11 B per segment) and its inflated
# region (32 B) grow with it (measured here: 5 B from 250k to 1M segments, 52 B from 1M
# to 10M); every segment held as an Arrow row (~70 B) on top of them, as the reader did
# before it read pieces, needs ~125 B, and as Python objects far more
_MAX_BYTES_PER_SEGMENT = 64


def _rows_and_peak(log) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(log)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    rows, extra = map(int, out.stdout.split())
    return rows, extra


def test_a_million_segments_go_into_a_warehouse_in_bounded_memory(million_segment_log, tmp_path):
    from iosight.trace import dxt_heavy_log

    small = dxt_heavy_log(tmp_path / "quarter.darshan", 250_000)
    rows_small, peak_small = _rows_and_peak(small)
    rows, peak = _rows_and_peak(million_segment_log)
    assert (rows_small, rows) == (1024 * 245, 1024 * 977)  # ceil(segments / 1024) a rank
    per_segment = (peak - peak_small) / (rows - rows_small)
    assert per_segment < _MAX_BYTES_PER_SEGMENT, (
        f"{per_segment:.0f} B more per segment ({peak_small:,} B, {peak:,} B)"
    )


def _pieces_equal_whole(path, monkeypatch) -> int:
    """Read ``path`` whole and in pieces of 1,000 segments (records split across pieces);
    assert the pieces, end to end, are the whole table; return its rows."""
    whole = read_darshan3(path)["dxt_posix"]
    monkeypatch.setattr(_darshan3_records, "CHUNK_SEGMENTS", 1000)
    pieces = list(table_pieces(read_darshan3(path, chunked=True)["dxt_posix"]))
    assert [p.num_rows for p in pieces[:-1]] == [1000] * (len(pieces) - 1)
    assert len(pieces) == -(-whole.num_rows // 1000)
    assert pa.concat_tables(pieces).equals(whole)
    return whole.num_rows


def test_pieces_are_the_segments_of_a_real_dxt_log(monkeypatch):
    logs = shared_path("darshan-logs")
    real = logs / "darshan-logs__darshan_logs__partial_data_dxt__partial_data_dxt.darshan"
    # its DXT_POSIX segments (the other 65,529 of its 131,065 are DXT_MPIIO's)
    assert _pieces_equal_whole(real, monkeypatch) == 65_536


def test_pieces_are_the_segments_of_a_traced_log(tmp_path, monkeypatch):
    from iosight.trace import dxt_heavy_log

    log = dxt_heavy_log(tmp_path / "small.darshan", 20_000, ranks=8)
    assert _pieces_equal_whole(log, monkeypatch) == 20_000  # 2,500 a rank, cut at 1,000s
    dxt = read_darshan3(log)["dxt_posix"]
    # rank 7's last segment is the tracer's: its last read, 64 bytes at 1,249 * 64
    seg = dxt.slice(dxt.num_rows - 1).to_pylist()[0]
    assert (seg["rank"], seg["op"], seg["length"], seg["offset"]) == (7, "read", 64, 1249 * 64)


def test_a_log_without_dxt_segments_has_no_dxt_table(tmp_path):
    from iosight.trace import dxt_heavy_log

    log = dxt_heavy_log(tmp_path / "none.darshan", 0, ranks=2)
    assert "dxt_posix" not in read_darshan3(log, chunked=True)
