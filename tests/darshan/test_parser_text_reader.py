"""darshan-parser text: a hand-made dump, round trips through the writer, bad input."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from iosight._errors import CorruptLogError
from iosight.darshan import read_parser_text, write_parser_text
from iosight.darshan._darshan2 import read_darshan2
from iosight.darshan._pydarshan import read_pydarshan

DATA = Path(__file__).parent / "data"
SHARED_3X = (  # HEATMAP + DFS/DAOS, LUSTRE 3.4 components, PNETCDF + APMPI + HEATMAP
    "ior-DFS_id1057716",
    "snyder_python3_id3116902-2110365",
    "e3sm_io_heatmap_only",
    "empty_log",  # no records at all: no job_totals either way
)


def _logs_3x(shared) -> list[Path]:
    pytest.importorskip("darshan")
    from darshan.examples import __file__ as examples

    root = Path(examples).parent / "example_logs"
    # example.darshan: pre-3.4 LUSTRE, MPI-IO, STDIO; dxt.darshan: DXT_POSIX;
    # ior_hdf5_example.darshan: H5F/H5D, DXT_POSIX and DXT_MPIIO
    logs = [root / "example.darshan", root / "dxt.darshan", root / "ior_hdf5_example.darshan"]
    pool = sorted(shared("darshan-logs").glob("*.darshan"))
    return logs + [next(p for p in pool if key in p.name) for key in SHARED_3X]


def _assert_same(a: pa.Table, b: pa.Table, tol: float = 0.0) -> None:
    assert a.column_names == b.column_names
    for name in a.column_names:
        x, y = a[name], b[name]
        if pa.types.is_floating(x.type) and tol:
            np.testing.assert_allclose(y.to_numpy(), x.to_numpy(), rtol=0, atol=tol)
        else:
            assert x.to_pylist() == y.to_pylist(), name


@pytest.mark.parametrize("exact", [True, False])
def test_3x_logs_read_both_ways_give_equal_tables(shared, tmp_path, exact):
    """read_pydarshan(log) == read_parser_text(write_parser_text(read_pydarshan(log)))."""
    for log in _logs_3x(shared):
        tables = read_pydarshan(log)
        out = tmp_path / f"{log.stem}.txt"
        write_parser_text(tables, out, exact=exact)
        back = read_parser_text(out)
        assert set(back) == set(tables), log.name
        for name in tables:
            if name in ("jobs", "names"):
                continue
            tol = 0.0 if exact else (5.1e-5 if name.startswith("dxt") else 5.1e-7)
            if name == "job_totals" and not exact:
                tol = 5.1e-3  # darshan-parser prints totals with %f, perf with two decimals
            _assert_same(tables[name], back[name], tol)
        want, got = tables["jobs"].to_pylist()[0], back["jobs"].to_pylist()[0]
        for key in want:
            if key in ("source_path", "source_format"):
                continue
            if not exact and key in ("start_time", "end_time", "run_time"):
                assert abs(got[key] - want[key]) < 1.0, key
            else:
                assert got[key] == want[key], (log.name, key)
        by_id = {r["record_id"]: r for r in tables["names"].to_pylist()}
        for row in back["names"].to_pylist():
            assert row == by_id[row["record_id"]] or row["mount_point"] == "UNKNOWN"


def test_shared_2x_logs_round_trip(shared, tmp_path):
    logs = sorted(shared("darshan-logs").glob("*mpi-io-test*.darshan.gz"))[:8]
    for log in logs:
        tables = read_darshan2(log)
        buf = io.StringIO()
        write_parser_text(tables, buf, exact=True)
        path = tmp_path / "x.txt"
        path.write_text(buf.getvalue())
        back = read_parser_text(path)
        for name in ("posix", "mpiio", "names", "mounts", "job_totals"):
            if name in tables:
                assert back[name].equals(tables[name]), (log.name, name)


def test_hand_made_dump_with_lustre_heatmap_and_dxt():
    t = read_parser_text(DATA / "parser_all_small.txt")
    job = t["jobs"].to_pylist()[0]
    assert job["log_version"] == "3.41" and job["nprocs"] == 2 and job["jobid"] == 4242
    assert job["start_time"] == 1700000000 and job["run_time"] == 10.5
    assert job["exe"] == "/apps/ior -w -t 1m" and job["lib_version"] == "3.4.4"
    assert job["partial_modules"] == "STDIO" and job["partial"]
    assert job["modules"] == "POSIX,LUSTRE,STDIO,HEATMAP,DXT_POSIX"
    assert t["mounts"].to_pylist()[0] == {"mount_point": "/lus/grand", "fs_type": "lustre"}
    posix = t["posix"].to_pylist()
    assert [(r["rank"], r["record_id"]) for r in posix] == [(0, 111), (1, 111)]
    assert [r["POSIX_BYTES_WRITTEN"] for r in posix] == [1048576, 2097152]
    assert posix[1]["POSIX_F_WRITE_TIME"] == 0.25
    assert t["posix"].schema.field("POSIX_F_WRITE_TIME").type == pa.float64()
    lustre = t["lustre"].to_pylist()
    assert lustre[0]["ost_ids"] == [3, 4] and lustre[0]["LUSTRE_COMP_STRIPE_SIZE"] == 1048576
    assert lustre[0]["LUSTRE_COMP_STRIPE_PATTERN"] == 0 and lustre[0]["LUSTRE_COMP_FLAGS"] == 16
    assert lustre[0]["pool_name"] == "" and lustre[0]["component"] == 0
    heat = t["heatmap"].to_pylist()
    assert [(h["bin"], h["bin_start"], h["read_bytes"], h["write_bytes"]) for h in heat] == [
        (0, 0.0, 0, 1048576),
        (1, 0.5, 10, 2097152),
    ]
    assert heat[0]["module"] == "POSIX"
    dxt = t["dxt_posix"].to_pylist()
    assert len(dxt) == 3 and dxt[2]["op"] == "read" and dxt[2]["hostname"] == "nid0002"
    assert dxt[1]["offset"] == 1048576 and dxt[1]["end"] == 0.25
    # the dump's own --total/--perf lines are darshan's reduction: taken as printed
    assert t["job_totals"].to_pylist() == [
        {
            "total_POSIX_OPENS": 2,
            "total_POSIX_BYTES_WRITTEN": 3145728,
            "POSIX_agg_perf_by_slowest": 12.0,
            "POSIX_total_bytes": 3145728,
        }
    ]
    names = {r["record_id"]: r["name"] for r in t["names"].to_pylist()}
    assert names == {111: "/lus/grand/out.dat", 222: "<STDOUT>", 333: "heatmap:POSIX"}


def test_heatmap_bins_without_bytes_are_no_rows_and_written_back(tmp_path):
    """A bin read and written 0 is not a row of ``heatmap``; ``nbins`` keeps the record's
    extent, so the writer prints every bin again, 0 where no row is."""
    text = (DATA / "parser_all_small.txt").read_text()
    last = "HEATMAP\t-1\t333\tHEATMAP_WRITE_BIN_1\t2097152\theatmap:POSIX\tUNKNOWN\tUNKNOWN\n"
    zero = [f"HEATMAP\t-1\t333\tHEATMAP_{op}_BIN_2\t0\theatmap:POSIX\tUNKNOWN\tUNKNOWN\n"
            for op in ("READ", "WRITE")]  # fmt: skip
    path = tmp_path / "zero_bin.txt"
    path.write_text(text.replace(last, last + "".join(zero)))
    t = read_parser_text(path)
    heat = t["heatmap"].to_pylist()
    assert [(h["bin"], h["nbins"], h["read_bytes"], h["write_bytes"]) for h in heat] == [
        (0, 3, 0, 1048576),
        (1, 3, 10, 2097152),
    ]
    out = tmp_path / "back.txt"
    write_parser_text(t, out, exact=True)
    assert zero[0].rstrip("\n") in out.read_text().splitlines()
    assert read_parser_text(out)["heatmap"].equals(t["heatmap"])
    # no bin with bytes: no table, as the binary readers leave it out
    rows = [ln.split("\t") for ln in text.splitlines()]
    for f in rows:
        if f[0] == "HEATMAP" and "_BIN_" in f[3]:
            f[4] = "0"
    path.write_text("\n".join("\t".join(f) for f in rows) + "\n")
    without = read_parser_text(path)
    assert "heatmap" not in without and "posix" in without


def test_dump_without_totals_gets_them_recomputed(tmp_path):
    text = (DATA / "parser_all_small.txt").read_text()
    kept = [ln for ln in text.splitlines() if not ln.startswith("total_")]
    path = tmp_path / "no_totals.txt"
    path.write_text("\n".join(kept) + "\n")
    tot = read_parser_text(path)["job_totals"].to_pylist()[0]
    assert tot["total_POSIX_BYTES_WRITTEN"] == 3145728
    assert tot["total_POSIX_F_WRITE_START_TIMESTAMP"] == 0.1  # min of positive values
    assert tot["total_POSIX_F_WRITE_TIME"] == 0.375
    assert tot["total_STDIO_OPENS"] == 1


def test_2x_log_and_its_2x_style_dump_give_equal_tables(shared, tmp_path):
    """Render a 2.x log as Darshan 2.x's darshan-parser did (7 fields, CP_* names), read it."""
    from iosight.darshan._darshan2_counters import (
        CP_COUNTERS,
        CP_F_COUNTERS,
        MPIIO_COLUMNS,
        POSIX_COLUMNS,
    )

    log = next(shared("darshan-logs").glob("*ppc64-2.2.8_id121829*.darshan.gz"))
    tables = read_darshan2(log)
    posix = tables["posix"].to_pylist()
    mpiio = {(r["rank"], r["record_id"]): r for r in tables["mpiio"].to_pylist()}
    names = {r["record_id"]: r for r in tables["names"].to_pylist()}
    lines = ["# darshan log version: 2.02", "# exe: x", "# uid: 1", "# jobid: 2"]
    lines += ["# start_time: 3", "# end_time: 4", "# nprocs: 16", "# run time: 2"]
    for row in posix:
        mrow = mpiio.get((row["rank"], row["record_id"]), {})
        n = names[row["record_id"]]
        tail = f"\t...{n['name']}\t{n['mount_point']}\t{n['fs_type']}"
        for cp in (*CP_COUNTERS, *CP_F_COUNTERS):
            value = (
                row[POSIX_COLUMNS[cp]] if cp in POSIX_COLUMNS else mrow.get(MPIIO_COLUMNS[cp], 0)
            )
            text = f"{value:f}" if cp.startswith("CP_F_") else str(value)
            lines.append(f"{row['rank']}\t{row['record_id']}\t{cp}\t{text}{tail}")
    path = tmp_path / "dump2x.txt"
    path.write_text("\n".join(lines) + "\n")
    back = read_parser_text(path)
    for name in ("posix", "mpiio", "names"):
        _assert_same(tables[name], back[name], tol=5.1e-7)


def test_real_darshan_118_parser_output():
    """Darshan 1.x/2.x dumps have no module column; CP_* counters map as in the 2.x reader."""
    t = read_parser_text(DATA / "parser_darshan118_iomi3d_excerpt.txt")
    job = t["jobs"].to_pylist()[0]
    assert (job["log_version"], job["nprocs"], job["uid"], job["jobid"]) == ("1.18", 512, 4279, 0)
    assert (job["start_time"], job["end_time"], job["run_time"]) == (1236266552, 1236266719, 168)
    assert job["exe"].startswith("/home/carns/tar/Chombo/benchmark/IOMI/iomi3d.Linux")
    assert job["modules"] == "POSIX" and "mpiio" not in t
    (row,) = t["posix"].to_pylist()
    assert (row["rank"], row["record_id"]) == (-1, 6908978163965080775)
    assert row["POSIX_BYTES_READ"] == 381440 and row["POSIX_MAX_BYTE_READ"] == 744
    assert row["CP_POSIX_FREADS"] == 512 and row["POSIX_STATS"] == 1024
    assert row["POSIX_SIZE_READ_100_1K"] == 512 and row["POSIX_ACCESS1_ACCESS"] == 745
    assert row["POSIX_F_OPEN_START_TIMESTAMP"] == 0.164145
    assert row["POSIX_F_READ_TIME"] == 0.001774 and row["POSIX_F_META_TIME"] == 0.0
    assert t["names"].to_pylist() == [
        {
            "record_id": 6908978163965080775,
            "name": "uns/in.r444",
            "mount_point": "UNKNOWN",
            "fs_type": "UNKNOWN",
        }
    ]
    assert t["job_totals"].to_pylist()[0]["total_POSIX_BYTES_READ"] == 381440


def test_writer_renders_darshan_parser_rows():
    t = read_parser_text(DATA / "parser_all_small.txt")
    buf = io.StringIO()
    write_parser_text(t, buf)
    text = buf.getvalue()
    row = "POSIX\t1\t111\tPOSIX_F_WRITE_TIME\t0.250000\t/lus/grand/out.dat\t/lus/grand\tlustre"
    assert row in text.splitlines()
    assert "# mount entry:\t/lus/grand\tlustre" in text
    assert "LUSTRE\t-1\t111\tLUSTRE_COMP1_OST_ID_1\t4\t/lus/grand/out.dat" in text
    assert "total_POSIX_BYTES_WRITTEN: 3145728" in text


@pytest.mark.parametrize(
    "content, reason",
    [
        ("", "no '# darshan log version:'"),
        ("hello\tworld\n", "no '# darshan log version:'"),
        ("# darshan log version: 3.41\n# nprocs: 2\n", "start_time"),
        (
            "# darshan log version: 3.41\n# exe: x\n# uid: 1\n# jobid: 1\n# start_time: 1\n"
            "# end_time: 2\n# nprocs: 1\nPOSIX\t0\t1\tPOSIX_OPENS\tmany\tf\t/\text4\n",
            "non-numeric",
        ),
        (
            "# darshan log version: 3.41\n# exe: x\n# uid: 1\n# jobid: 1\n# start_time: 1\n"
            "# end_time: 2\n# nprocs: 1\nPOSIX\t0\tPOSIX_OPENS\t3\n",
            "malformed",
        ),
    ],
)
def test_bad_text_raises(tmp_path, content, reason):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(CorruptLogError, match=reason):
        read_parser_text(path)


def test_gzip_compressed_and_crlf_dumps(tmp_path):
    import gzip

    plain = read_parser_text(DATA / "parser_all_small.txt")
    raw = (DATA / "parser_all_small.txt").read_bytes()
    for name, blob in (("a.txt.gz", gzip.compress(raw)), ("b.txt", raw.replace(b"\n", b"\r\n"))):
        path = tmp_path / name
        path.write_bytes(blob)
        back = read_parser_text(path)
        for table in plain:
            if table != "jobs":
                assert back[table].equals(plain[table]), (name, table)
        assert back["jobs"]["exe"].equals(plain["jobs"]["exe"])
