"""Shared-record reduction and merging, on hand-built per-rank records (hand-worked)."""

from __future__ import annotations

import numpy as np
import pytest

from iosight._errors import IosightError
from iosight.trace import combine, darshan_hash, merge, read_log, write_log
from iosight.trace._format import COUNTER_NAMES, Job, LogContent, log_name, record_dtype
from iosight.trace._merge import reduce_shared

PC, PF = ({n: i for i, n in enumerate(x)} for x in COUNTER_NAMES["POSIX"])


def _posix(rank, rid, **vals):
    rec = np.zeros(1, dtype=record_dtype("POSIX"))
    rec["id"], rec["rank"] = rid, rank
    for k, v in vals.items():
        if k.startswith("POSIX_F_"):
            rec["fcounters"][0, PF[k]] = v
        else:
            rec["counters"][0, PC[k]] = v
    return rec


def test_reduce_shared_hand_worked():
    rid = darshan_hash("/s/shared")
    rows = np.concatenate(
        [
            _posix(0, rid, POSIX_OPENS=1, POSIX_WRITES=2, POSIX_BYTES_WRITTEN=200,
                   POSIX_MAX_BYTE_WRITTEN=199, POSIX_ACCESS1_ACCESS=100, POSIX_ACCESS1_COUNT=2,
                   POSIX_F_OPEN_START_TIMESTAMP=0.5, POSIX_F_WRITE_END_TIMESTAMP=2.0,
                   POSIX_F_WRITE_TIME=1.0, POSIX_F_MAX_WRITE_TIME=0.6,
                   POSIX_MAX_WRITE_TIME_SIZE=100),
            _posix(1, rid, POSIX_OPENS=1, POSIX_WRITES=1, POSIX_BYTES_WRITTEN=300,
                   POSIX_MAX_BYTE_WRITTEN=499, POSIX_ACCESS1_ACCESS=300, POSIX_ACCESS1_COUNT=1,
                   POSIX_ACCESS2_ACCESS=100, POSIX_ACCESS2_COUNT=1,
                   POSIX_F_OPEN_START_TIMESTAMP=0.25, POSIX_F_WRITE_END_TIMESTAMP=3.0,
                   POSIX_F_WRITE_TIME=3.0, POSIX_F_MAX_WRITE_TIME=0.9,
                   POSIX_MAX_WRITE_TIME_SIZE=300),
            _posix(2, rid, POSIX_OPENS=1, POSIX_F_OPEN_START_TIMESTAMP=0.0),  # opened, no I/O
        ]
    )  # fmt: skip
    out = reduce_shared("POSIX", rows)[0]
    c, f = out["counters"], out["fcounters"]
    assert out["rank"] == -1 and out["id"] == rid
    assert (c[PC["POSIX_OPENS"]], c[PC["POSIX_WRITES"]], c[PC["POSIX_BYTES_WRITTEN"]]) == (
        3,
        3,
        500,
    )
    assert c[PC["POSIX_MAX_BYTE_WRITTEN"]] == 499
    # access 100 happened 2 + 1 times, 300 once
    assert c[PC["POSIX_ACCESS1_ACCESS"]] == 100 and c[PC["POSIX_ACCESS1_COUNT"]] == 3
    assert c[PC["POSIX_ACCESS2_ACCESS"]] == 300 and c[PC["POSIX_ACCESS2_COUNT"]] == 1
    assert f[PF["POSIX_F_OPEN_START_TIMESTAMP"]] == 0.25  # earliest non-zero
    assert f[PF["POSIX_F_WRITE_END_TIMESTAMP"]] == 3.0
    assert f[PF["POSIX_F_WRITE_TIME"]] == 4.0
    assert (f[PF["POSIX_F_MAX_WRITE_TIME"]], c[PC["POSIX_MAX_WRITE_TIME_SIZE"]]) == (0.9, 300)
    # times per rank 1, 3, 0 -> fastest rank 2 (0 s, 0 B), slowest rank 1 (3 s, 300 B)
    assert (c[PC["POSIX_FASTEST_RANK"]], c[PC["POSIX_FASTEST_RANK_BYTES"]]) == (2, 0)
    assert (c[PC["POSIX_SLOWEST_RANK"]], c[PC["POSIX_SLOWEST_RANK_BYTES"]]) == (1, 300)
    assert f[PF["POSIX_F_SLOWEST_RANK_TIME"]] == 3.0
    assert f[PF["POSIX_F_VARIANCE_RANK_TIME"]] == pytest.approx(np.var([1.0, 3.0, 0.0]))
    assert f[PF["POSIX_F_VARIANCE_RANK_BYTES"]] == pytest.approx(np.var([200, 300, 0]))


def _log(rank, nprocs, paths, start):
    recs = np.concatenate([_posix(rank, darshan_hash(p), POSIX_OPENS=1) for p in paths])
    job = Job(start_time_sec=start, end_time_sec=start + 10, nprocs=nprocs, jobid=9)
    names = {darshan_hash(p): p for p in paths}
    return LogContent(job, f"python rank{rank}.py", [("/", "ext4")], names, {"POSIX": recs})


def test_combine_keeps_partly_shared_files_per_rank(tmp_path):
    logs = [
        _log(0, 3, ["/a/all", "/a/two", "/a/r0"], 100),
        _log(1, 3, ["/a/all", "/a/two"], 99),
        _log(2, 3, ["/a/all"], 101),
    ]
    merged = combine(logs)
    recs = merged.records["POSIX"]
    got = sorted(
        (merged.names[int(i)], int(r)) for i, r in zip(recs["id"], recs["rank"], strict=True)
    )
    assert got == [("/a/all", -1), ("/a/r0", 0), ("/a/two", 0), ("/a/two", 1)]
    assert (merged.job.start_time_sec, merged.job.end_time_sec, merged.job.nprocs) == (99, 111, 3)
    assert merged.exe == "python rank1.py"  # the earliest-starting process
    paths = [write_log(tmp_path / f"r{k}.darshan", log) for k, log in enumerate(logs)]
    out = merge(paths, tmp_path / "job.darshan")
    again = read_log(write_log(tmp_path / "again.darshan", merged))
    assert read_log(out).records["POSIX"].tobytes() == again.records["POSIX"].tobytes()


def test_merge_refuses_empty_input(tmp_path):
    with pytest.raises(IosightError, match="no .darshan logs"):
        merge([tmp_path])


def test_cli_merge(tmp_path):
    from typer.testing import CliRunner

    from iosight.cli import app

    for k in range(2):
        write_log(tmp_path / "partial" / f"r{k}.darshan", _log(k, 2, ["/a/all"], 100 + k))
    res = CliRunner().invoke(
        app, ["trace", "merge", str(tmp_path / "partial"), "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    out = read_log(res.output.strip())
    assert out.records["POSIX"]["rank"].tolist() == [-1] and out.job.nprocs == 2


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_merge_without_out_never_overwrites_an_input(tmp_path):
    # two single-process runs traced into one folder: both are rank 0 (of jobs 9 and 10);
    # 'trace merge DIR' wrote onto the first log, adding a rank-0 copy of its records each time
    runs = tmp_path / "logs"
    first = _log(0, 1, ["/a/data"], 100)
    second = _log(0, 1, ["/a/data"], 200)
    second.job.jobid = 10
    for log in (first, second):
        write_log(runs / log_name(log), log)
    before = _snapshot(runs)
    for _ in range(2):
        with pytest.raises(IosightError, match=r"\(job 10\) and .* \(job 9\) both hold rank 0"):
            merge([runs])
    assert _snapshot(runs) == before
    one = runs / log_name(first)
    (runs / log_name(second)).unlink()
    with pytest.raises(IosightError, match="would overwrite its input"):
        merge([runs])  # one log: its merged name is its own
    with pytest.raises(IosightError, match="given twice"):
        merge([one, one], tmp_path / "job.darshan")
    assert _snapshot(runs) == {one.name: before[one.name]}
    assert not (tmp_path / "job.darshan").exists()


def test_merging_a_folder_twice_is_refused(tmp_path):
    part = tmp_path / "partial"
    for k in range(2):
        write_log(part / f"id9.rank{k}.darshan", _log(k, 2, ["/a/all", f"/a/r{k}"], 100 + k))
    out = merge([part])  # default: next to the inputs
    assert out.parent == part
    assert sorted(read_log(out).records["POSIX"]["rank"].tolist()) == [-1, 0, 1]
    before = _snapshot(part)
    with pytest.raises(IosightError, match="both hold rank 0"):
        merge([part])  # the merged log holds ranks 0 and 1 again
    assert _snapshot(part) == before


def test_merge_out_is_an_existing_folder_or_a_log_path(tmp_path):
    part = tmp_path / "partial"
    for k in range(2):
        write_log(part / f"id9.rank{k}.darshan", _log(k, 2, ["/a/all"], 100))
    for out, msg in [
        (tmp_path / "none", "no directory .*none; give an existing directory"),
        (tmp_path / "none" / "job.darshan", "no directory .*none$"),
    ]:
        with pytest.raises(IosightError, match=msg):
            merge([part], out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["partial"]  # nothing created
    assert merge([part], tmp_path / "job.darshan") == tmp_path / "job.darshan"
    assert merge([part], tmp_path).parent == tmp_path


def test_cli_merge_errors_are_one_line(tmp_path):
    from typer.testing import CliRunner

    from iosight.cli import app

    log = write_log(tmp_path / "r0.darshan", _log(0, 1, ["/a/data"], 100))
    for args, msg in [
        ([str(log), str(log)], "given twice"),
        ([str(log), "--out", str(tmp_path / "no" / "")], "no directory"),
        ([str(log), "--out", str(log)], "would overwrite its input"),
    ]:
        res = CliRunner().invoke(app, ["trace", "merge", *args])
        assert res.exit_code == 1 and msg in res.output, res.output
        assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_merge_puts_ranks_on_the_job_clock(tmp_path):
    darshan = pytest.importorskip("darshan")
    from iosight.trace._extra import Heatmap

    logs = []
    for rank, (start, run) in enumerate([(100, 3.0), (101, 30.0)]):  # rank 1 starts 1 s later
        log = _log(rank, 2, [f"/a/r{rank}"], start)
        log.records["POSIX"]["fcounters"][0, PF["POSIX_F_OPEN_START_TIMESTAMP"]] = 0.5
        h = Heatmap()
        h.add(np.array([0.2]), np.array([0.2]), np.array([1000.0]), np.array([True]))
        h.add(np.array([run - 0.5]), np.array([run - 0.5]), np.array([10.0]), np.array([False]))
        rid, name, blob = h.record_bytes("POSIX", rank, run)
        log.names[rid] = name
        log.blobs["HEATMAP"] = blob
        log.job.end_time_sec = start + int(run)
        logs.append(log)
    out = write_log(tmp_path / "job.darshan", combine(logs))
    with darshan.DarshanReport(str(out), read_all=True) as r:
        c = r.records["POSIX"].to_df()["fcounters"]
        starts = dict(zip(c["rank"], c["POSIX_F_OPEN_START_TIMESTAMP"], strict=True))
        assert starts == {0: 0.5, 1: 1.5}  # rank 1's clock started 1 s after the job's
        hm = r.heatmaps["POSIX"]
        w, rd = hm.to_df(ops=["write"]), hm.to_df(ops=["read"])
    assert w.sum(axis=1).tolist() == [1000, 1000] and rd.sum(axis=1).tolist() == [10, 10]
    assert w.shape[1] <= 200
    # rank 1's first write (0.2 s on its clock) lands 1 s later than rank 0's on the job clock
    first = [int(np.flatnonzero(w.loc[k].to_numpy())[0]) for k in (0, 1)]
    width = w.columns[0].length
    assert (first[1] - first[0]) * width == pytest.approx(1.0, abs=width)


def _record(module, rank, rid, **vals):
    """One hand-built record of ``module``; counter names without the module prefix."""
    names, fnames = COUNTER_NAMES[module]
    rec = np.zeros(1, dtype=record_dtype(module))
    rec["id"], rec["rank"] = rid, rank
    for k, v in vals.items():
        if k == "file_rec_id":
            rec["file_rec_id"] = v
        elif f"{module}_{k}" in names:
            rec["counters"][0, names.index(f"{module}_{k}")] = v
        else:
            rec["fcounters"][0, fnames.index(f"{module}_{k}")] = v
    return rec


def test_hdf5_records_reduce_as_darshan_hdf5_does(tmp_path):
    fid, did = darshan_hash("/s/run.h5"), darshan_hash("/s/run.h5:/temp")
    acc_a = dict(
        ACCESS1_ACCESS=4000,
        ACCESS1_LENGTH_D4=50,
        ACCESS1_LENGTH_D5=10,
        ACCESS1_STRIDE_D4=1,
        ACCESS1_STRIDE_D5=1,
        ACCESS1_COUNT=3,
    )
    h5d = np.concatenate(
        [
            _record("H5D", 0, did, file_rec_id=fid, OPENS=1, WRITES=3, BYTES_WRITTEN=12000,
                    REGULAR_HYPERSLAB_SELECTS=3, SIZE_WRITE_AGG_1K_10K=3, **acc_a,
                    DATASPACE_NDIMS=2, DATASPACE_NPOINTS=5000, DATATYPE_SIZE=8,
                    CHUNK_SIZE_D1=50, CHUNK_SIZE_D2=10, F_WRITE_TIME=0.3, F_META_TIME=0.1,
                    F_MAX_WRITE_TIME=0.2, MAX_WRITE_TIME_SIZE=4000,
                    F_OPEN_START_TIMESTAMP=0.5, F_WRITE_END_TIMESTAMP=1.5),
            _record("H5D", 1, did, file_rec_id=fid, OPENS=1, WRITES=1, READS=1,
                    BYTES_WRITTEN=4000, BYTES_READ=40000, RW_SWITCHES=1,
                    REGULAR_HYPERSLAB_SELECTS=1, SIZE_WRITE_AGG_1K_10K=1,
                    SIZE_READ_AGG_10K_100K=1, **{**acc_a, "ACCESS1_COUNT": 1},
                    ACCESS2_ACCESS=40000, ACCESS2_COUNT=1,
                    DATASPACE_NDIMS=2, DATASPACE_NPOINTS=5000, DATATYPE_SIZE=8,
                    CHUNK_SIZE_D1=50, CHUNK_SIZE_D2=10, F_WRITE_TIME=0.05, F_READ_TIME=0.2,
                    F_META_TIME=0.1, F_MAX_WRITE_TIME=0.05, MAX_WRITE_TIME_SIZE=4000,
                    F_OPEN_START_TIMESTAMP=0.25, F_WRITE_END_TIMESTAMP=1.0),
        ]
    )  # fmt: skip
    h5f = np.concatenate(
        [
            _record("H5F", r, fid, OPENS=2, FLUSHES=r, F_OPEN_START_TIMESTAMP=0.1 + r,
                    F_CLOSE_END_TIMESTAMP=2.0 + r, F_META_TIME=0.25)
            for r in (0, 1)
        ]
    )  # fmt: skip
    logs = [
        LogContent(
            Job(nprocs=2, jobid=9, start_time_sec=100, end_time_sec=110),
            "python run.py",
            names={fid: "/s/run.h5", did: "/s/run.h5:/temp"},
            records={"H5F": h5f[h5f["rank"] == r], "H5D": h5d[h5d["rank"] == r]},
        )
        for r in (0, 1)
    ]
    log = write_log(tmp_path / "merged.darshan", combine(logs))
    darshan = pytest.importorskip("darshan")
    with darshan.DarshanReport(str(log), read_all=True) as r:
        (f,) = r.records["H5F"].to_df()["counters"].to_dict("records")
        (ff,) = r.records["H5F"].to_df()["fcounters"].to_dict("records")
        (d,) = r.records["H5D"].to_df()["counters"].to_dict("records")
        (df,) = r.records["H5D"].to_df()["fcounters"].to_dict("records")
        assert r.records["H5D"][0]["file_rec_id"] == fid
    assert (f["rank"], f["H5F_OPENS"], f["H5F_FLUSHES"]) == (-1, 4, 1)
    assert (ff["H5F_F_OPEN_START_TIMESTAMP"], ff["H5F_F_CLOSE_END_TIMESTAMP"]) == (0.1, 3.0)
    assert ff["H5F_F_META_TIME"] == 0.5
    assert (d["rank"], d["H5D_OPENS"], d["H5D_WRITES"], d["H5D_READS"]) == (-1, 2, 4, 1)
    assert (d["H5D_BYTES_WRITTEN"], d["H5D_BYTES_READ"], d["H5D_RW_SWITCHES"]) == (16000, 40000, 1)
    assert (d["H5D_SIZE_WRITE_AGG_1K_10K"], d["H5D_REGULAR_HYPERSLAB_SELECTS"]) == (4, 4)
    # the 4000-byte 10 x 50 access happened 3 + 1 times; the 40000-byte read once
    assert (d["H5D_ACCESS1_ACCESS"], d["H5D_ACCESS1_COUNT"], d["H5D_ACCESS1_LENGTH_D4"]) == (
        4000,
        4,
        50,
    )
    assert (d["H5D_ACCESS2_ACCESS"], d["H5D_ACCESS2_COUNT"]) == (40000, 1)
    assert d["H5D_ACCESS3_COUNT"] == 0
    assert (d["H5D_DATASPACE_NPOINTS"], d["H5D_DATATYPE_SIZE"], d["H5D_CHUNK_SIZE_D1"]) == (
        5000,
        8,
        50,
    )
    assert (df["H5D_F_MAX_WRITE_TIME"], d["H5D_MAX_WRITE_TIME_SIZE"]) == (0.2, 4000)
    assert df["H5D_F_OPEN_START_TIMESTAMP"] == 0.25 and df["H5D_F_WRITE_END_TIMESTAMP"] == 1.5
    # rank 1 spent 0.35 s and moved 44000 bytes, rank 0 0.4 s and 12000 bytes
    assert (d["H5D_FASTEST_RANK"], d["H5D_FASTEST_RANK_BYTES"]) == (1, 44000)
    assert (d["H5D_SLOWEST_RANK"], d["H5D_SLOWEST_RANK_BYTES"]) == (0, 12000)
    assert df["H5D_F_VARIANCE_RANK_BYTES"] == pytest.approx(np.var([12000.0, 44000.0]))
