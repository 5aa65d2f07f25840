"""The 3.x reader against PyDarshan itself, value by value, on every real log we have."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from iosight._errors import CorruptLogError
from iosight.darshan._pydarshan import read_pydarshan
from iosight.data import example_logs
from tests_support import SHARED

GENERIC = {
    "POSIX": "posix",
    "MPI-IO": "mpiio",
    "STDIO": "stdio",
    "H5F": "h5f",
    "H5D": "h5d",
    "PNETCDF_FILE": "pnetcdf_file",
    "PNETCDF_VAR": "pnetcdf_var",
    "DFS": "dfs",
    "DAOS": "daos",
}


def _readable_shared_logs() -> list[Path]:
    """Shared 3.x logs that PyDarshan 3.5.0 itself reads (MANIFEST.tsv), plus the aiio set."""
    manifest = SHARED / "darshan-logs" / "MANIFEST.tsv"
    if not manifest.exists():
        return []
    with open(manifest, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    logs = [
        SHARED / "darshan-logs" / r["filename"]
        for r in rows
        if r["format"] == "darshan-3.x" and r["pydarshan_3_5_0_status"] == "ok"
    ]
    return logs + sorted((SHARED / "datasets" / "aiio_cori_logs").glob("*.darshan"))


LOGS = example_logs() + _readable_shared_logs()


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[-60:])
def test_counters_equal_pydarshan(path: Path) -> None:
    import darshan

    ours = read_pydarshan(path)
    with darshan.DarshanReport(str(path), read_all=True) as report:
        assert ours["jobs"]["nprocs"][0].as_py() == report.metadata["job"]["nprocs"]
        assert ours["jobs"]["jobid"][0].as_py() == report.metadata["job"]["jobid"]
        for mod, recs in report.records.items():
            if mod in GENERIC and len(recs):
                _same_generic(ours[GENERIC[mod]], recs.to_df())
            elif mod.startswith("DXT_") and len(recs):
                _same_dxt(ours[mod.lower()], recs.to_df())
            elif mod == "LUSTRE" and len(recs):
                _same_lustre(ours["lustre"], recs.to_df())
        ids, paths = ours["names"]["record_id"].to_pylist(), ours["names"]["name"].to_pylist()
        names = dict(zip(ids, paths, strict=True))
        assert names == report.name_records


def _same_generic(table, dfs) -> None:
    for kind in ("counters", "fcounters"):
        df = dfs[kind]
        assert table.num_rows == len(df)
        assert table["record_id"].to_pylist() == [int(x) for x in df["id"]]
        assert table["rank"].to_pylist() == df["rank"].tolist()
        for col in df.columns.drop(["id", "rank"]):
            np.testing.assert_array_equal(table[col].to_numpy(), df[col].to_numpy(), err_msg=col)


def _same_dxt(table, records) -> None:
    ops = table["op"].to_numpy(zero_copy_only=False)
    lengths = table["length"].to_numpy()
    assert sum(len(r["write_segments"]) + len(r["read_segments"]) for r in records) == len(ops)
    for op in ("read", "write"):
        expected = sum(
            int(r[f"{op}_segments"]["length"].sum()) for r in records if len(r[f"{op}_segments"])
        )
        assert int(lengths[ops == op].sum()) == expected


def _same_lustre(table, df) -> None:
    comps = df if not isinstance(df, dict) else df["components"]
    for col in [c for c in comps.columns if c.startswith("LUSTRE_COMP_")]:
        np.testing.assert_array_equal(table[col].to_numpy(), comps[col].to_numpy(), err_msg=col)


@pytest.mark.parametrize("path", example_logs()[:6], ids=lambda p: p.name[-40:])
def test_job_totals_equal_pydarshan_accumulator(path: Path) -> None:
    import darshan
    from darshan.backend.cffi_backend import accumulate_records

    totals = read_pydarshan(path)["job_totals"].to_pylist()[0]
    with darshan.DarshanReport(str(path), read_all=True) as report:
        nprocs = report.metadata["job"]["nprocs"]
        for mod in ("POSIX", "MPI-IO", "STDIO"):
            if mod not in report.records or not len(report.records[mod]):
                continue
            acc = accumulate_records(report.records[mod].to_df(), mod, nprocs)
            for kind in ("counters", "fcounters"):
                row = acc.summary_record[kind].iloc[0]
                for col in row.index.drop(["id", "rank"]):
                    assert totals[f"total_{col}"] == pytest.approx(row[col]), col


def test_corrupt_inputs_raise_clear_errors(tmp_path: Path) -> None:
    good = example_logs()[0].read_bytes()
    cases = {
        "empty.darshan": b"",
        "random.darshan": np.random.default_rng(0).bytes(4096),
        "truncated.darshan": good[: len(good) // 3],
        "header-only.darshan": good[:40],
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(CorruptLogError, match=name):
            read_pydarshan(p)
