"""h5py files and datasets as Darshan H5F/H5D records, read back by PyDarshan value by value."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from iosight.trace import ProcessInfo, darshan_hash, recover, run_traced, trace
from iosight.trace._activate import trace_env
from tests_support import wait_for_sync

h5py = pytest.importorskip("h5py")
darshan = pytest.importorskip("darshan")


def _records(log, module):
    with darshan.DarshanReport(str(log), read_all=True) as r:
        recs = r.records[module].to_df()
        names = dict(r.name_records)
        file_ids = [rec["file_rec_id"] for rec in r.records[module]] if module == "H5D" else []
    c, f = recs["counters"], recs["fcounters"]
    c.insert(0, "name", [names[i] for i in c["id"]])
    f.insert(0, "name", [names[i] for i in f["id"]])
    return c.set_index("name"), f.set_index("name"), file_ids


def _nonzero(row) -> dict:
    return {k: v for k, v in row.items() if v and k not in ("id", "rank")}


def test_files_and_datasets(tmp_path):
    p = tmp_path / "run.h5"
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 41)) as t:
        with h5py.File(p, "w") as f:
            temp = f.create_dataset("temp", shape=(100, 50), dtype="f8", chunks=(10, 50))
            for i in range(10):  # ten 10 x 50 blocks of 8-byte values: 4000 bytes each
                temp[i * 10 : (i + 1) * 10, :] = np.full((10, 50), i, dtype="f8")
            f.create_dataset("ids", data=np.arange(1000, dtype=np.int32))  # open + write
            f.flush()
        with h5py.File(p, "r") as f:
            whole = f["temp"][...]  # all 5000 points: H5S_ALL, no selection type
            part = f["temp"][0:100:2, 5:10]  # 50 x 5 points, strides 2 and 1
            few = f["ids"][[1, 5, 9]]  # 3 points, a regular hyperslab with stride 4
            out = np.empty(1000, dtype=np.int32)
            f["ids"].read_direct(out)
    assert whole.sum() == 22500 and part.shape == (50, 5) and list(few) == [1, 5, 9]
    log = t.finish().log

    c, f, _ = _records(log, "H5F")
    assert _nonzero(c.loc[str(p)]) == {"H5F_OPENS": 2, "H5F_FLUSHES": 1}
    ff = f.loc[str(p)]
    assert 0 < ff["H5F_F_OPEN_START_TIMESTAMP"] < ff["H5F_F_CLOSE_START_TIMESTAMP"]
    assert ff["H5F_F_OPEN_END_TIMESTAMP"] < ff["H5F_F_CLOSE_END_TIMESTAMP"]
    assert ff["H5F_F_META_TIME"] > 0

    c, f, file_ids = _records(log, "H5D")
    assert file_ids == [darshan_hash(str(p))] * 2
    temp = _nonzero(c.loc[f"{p}:/temp"])
    assert temp == {
        "H5D_OPENS": 3,  # created, then opened by each f["temp"]
        "H5D_READS": 2,
        "H5D_WRITES": 10,
        "H5D_BYTES_READ": 40000 + 2000,
        "H5D_BYTES_WRITTEN": 40000,
        "H5D_RW_SWITCHES": 1,
        "H5D_REGULAR_HYPERSLAB_SELECTS": 11,
        "H5D_MAX_READ_TIME_SIZE": temp["H5D_MAX_READ_TIME_SIZE"],
        "H5D_MAX_WRITE_TIME_SIZE": 4000,
        "H5D_SIZE_READ_AGG_1K_10K": 1,
        "H5D_SIZE_READ_AGG_10K_100K": 1,
        "H5D_SIZE_WRITE_AGG_1K_10K": 10,
        # the last of Darshan's five dimension slots holds the first dimension
        "H5D_ACCESS1_ACCESS": 4000,
        "H5D_ACCESS1_LENGTH_D4": 50,
        "H5D_ACCESS1_LENGTH_D5": 10,
        "H5D_ACCESS1_STRIDE_D4": 1,
        "H5D_ACCESS1_STRIDE_D5": 1,
        "H5D_ACCESS1_COUNT": 10,
        "H5D_ACCESS2_ACCESS": 40000,  # counts tie: the larger size first
        "H5D_ACCESS2_COUNT": 1,
        "H5D_ACCESS3_ACCESS": 2000,
        "H5D_ACCESS3_LENGTH_D4": 5,
        "H5D_ACCESS3_LENGTH_D5": 50,
        "H5D_ACCESS3_STRIDE_D4": 1,
        "H5D_ACCESS3_STRIDE_D5": 2,
        "H5D_ACCESS3_COUNT": 1,
        "H5D_DATASPACE_NDIMS": 2,
        "H5D_DATASPACE_NPOINTS": 5000,
        "H5D_DATATYPE_SIZE": 8,
        "H5D_CHUNK_SIZE_D1": 50,  # chunk sizes: D1 is the last dimension
        "H5D_CHUNK_SIZE_D2": 10,
    }
    assert temp["H5D_MAX_READ_TIME_SIZE"] in (40000, 2000)
    ids = _nonzero(c.loc[f"{p}:/ids"])
    assert ids == {
        "H5D_OPENS": 3,
        "H5D_READS": 2,
        "H5D_WRITES": 1,
        "H5D_BYTES_READ": 12 + 4000,
        "H5D_BYTES_WRITTEN": 4000,
        "H5D_RW_SWITCHES": 1,
        "H5D_REGULAR_HYPERSLAB_SELECTS": 1,
        "H5D_MAX_READ_TIME_SIZE": ids["H5D_MAX_READ_TIME_SIZE"],
        "H5D_MAX_WRITE_TIME_SIZE": 4000,
        "H5D_SIZE_READ_AGG_0_100": 1,
        "H5D_SIZE_READ_AGG_1K_10K": 1,
        "H5D_SIZE_WRITE_AGG_1K_10K": 1,
        "H5D_ACCESS1_ACCESS": 4000,
        "H5D_ACCESS1_COUNT": 2,
        "H5D_ACCESS2_ACCESS": 12,
        "H5D_ACCESS2_LENGTH_D5": 3,
        "H5D_ACCESS2_STRIDE_D5": 4,
        "H5D_ACCESS2_COUNT": 1,
        "H5D_DATASPACE_NDIMS": 1,
        "H5D_DATASPACE_NPOINTS": 1000,
        "H5D_DATATYPE_SIZE": 4,
    }
    ft = f.loc[f"{p}:/temp"]
    assert 0 < ft["H5D_F_OPEN_START_TIMESTAMP"] < ft["H5D_F_WRITE_START_TIMESTAMP"]
    assert ft["H5D_F_WRITE_END_TIMESTAMP"] < ft["H5D_F_READ_START_TIMESTAMP"]
    assert ft["H5D_F_MAX_WRITE_TIME"] <= ft["H5D_F_WRITE_TIME"]
    assert ft["H5D_F_CLOSE_START_TIMESTAMP"] == 0  # h5py closes datasets without H5Dclose


def test_points_fields_and_nested_calls_count_once(tmp_path):
    p = tmp_path / "pts.h5"
    rec = np.dtype([("a", "i4"), ("b", "f8")])
    with trace(tmp_path / "logs", proc=ProcessInfo(0, 1, 42)) as t:
        with h5py.File(p, "w") as f:
            d = f.create_dataset("d", data=np.arange(20, dtype="i8"))
            s = f.create_dataset("s", data=np.zeros(4, dtype=rec))
            g = f.create_group("g")
            g.create_dataset("inner", shape=(2, 3), dtype="u1")
            mask = d[...] % 5 == 0  # one read of everything
            sel = d[mask]  # a point selection of 4 points
            a = s["a"]  # a field: one read of the 4 (packed, 12-byte) records
            arr = np.asarray(d)  # __array__ reads through read_direct: one read
            d.flush()
    assert list(sel) == [0, 5, 10, 15] and list(a) == [0] * 4 and len(arr) == 20
    c, _, _ = _records(t.finish().log, "H5D")
    d = c.loc[f"{p}:/d"]
    assert (d["H5D_READS"], d["H5D_BYTES_READ"], d["H5D_POINT_SELECTS"]) == (3, 160 + 32 + 160, 1)
    assert (d["H5D_FLUSHES"], d["H5D_WRITES"]) == (1, 1)
    s = c.loc[f"{p}:/s"]
    assert (s["H5D_READS"], s["H5D_BYTES_READ"], s["H5D_DATATYPE_SIZE"]) == (1, 4 * 12, 12)
    inner = c.loc[f"{p}:/g/inner"]
    assert (inner["H5D_OPENS"], inner["H5D_WRITES"], inner["H5D_DATASPACE_NPOINTS"]) == (1, 0, 6)


def test_h5py_imported_after_tracing_starts(tmp_path):
    """The usual case: the traced program imports h5py itself, after the tracer is on."""
    prog, data = tmp_path / "prog.py", tmp_path / "late.h5"
    prog.write_text(
        textwrap.dedent(
            f"""
            import sys
            assert "h5py" not in sys.modules
            import h5py, numpy as np
            with h5py.File({str(data)!r}, "w") as f:
                f.create_dataset("x", data=np.ones(10))
            """
        )
    )
    code, result = run_traced([sys.executable, str(prog)], tmp_path / "logs")
    assert code == 0 and result["records"]["H5F"] == 1 and result["records"]["H5D"] == 1
    c, _, _ = _records(result["log"], "H5D")
    x = c.loc[f"{data}:/x"]
    assert (x["H5D_OPENS"], x["H5D_WRITES"], x["H5D_BYTES_WRITTEN"]) == (1, 1, 80)


def test_killed_h5py_program_is_recovered(tmp_path):
    prog, data, logs = tmp_path / "prog.py", tmp_path / "k.h5", tmp_path / "logs"
    prog.write_text(
        textwrap.dedent(
            f"""
            import time, h5py, numpy as np
            f = h5py.File({str(data)!r}, "w")
            d = f.create_dataset("d", shape=(4, 100), dtype="i2")
            for i in range(4):
                d[i] = np.full(100, i, dtype="i2")  # 4 writes of 200 bytes
            print("wrote", flush=True)
            time.sleep(60)
            """
        )
    )
    env = {**os.environ, **trace_env(logs, {"sync_interval": 0.05})}
    child = subprocess.Popen(
        [sys.executable, str(prog)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "wrote"
    wait_for_sync(logs / "partial")
    child.send_signal(signal.SIGKILL)
    child.wait()
    (log,) = recover(logs / "partial", logs)
    c, _, file_ids = _records(log, "H5D")
    d = c.loc[f"{data}:/d"]
    assert (d["H5D_OPENS"], d["H5D_WRITES"], d["H5D_BYTES_WRITTEN"]) == (1, 4, 800)
    assert file_ids == [darshan_hash(str(data))]
    c, _, _ = _records(log, "H5F")
    assert c.loc[str(data), "H5F_OPENS"] == 1
