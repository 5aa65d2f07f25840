"""The native 3.x reader against libdarshan-util (the oracle), table by table, value by value."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from iosight._errors import CorruptLogError
from iosight.darshan import MODULE_TABLES, warnings_in
from iosight.darshan import _pydarshan as lib
from iosight.darshan._accumulate import ACCUMULATED
from iosight.darshan._darshan3 import read_darshan3
from iosight.darshan._pydarshan import read_pydarshan
from iosight.darshan._record_tables import named_tables, names_table
from iosight.data import example_logs
from tests_support import SHARED


def _shared_3x_logs() -> list[Path]:
    manifest = SHARED / "darshan-logs" / "MANIFEST.tsv"
    if not manifest.exists():
        return []
    with open(manifest, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    logs = [SHARED / "darshan-logs" / r["filename"] for r in rows if r["format"] == "darshan-3.x"]
    return logs + sorted((SHARED / "datasets" / "aiio_cori_logs").glob("*.darshan"))


LOGS = example_logs() + _shared_3x_logs()

# libdarshan-util 3.5 byte-swaps a big-endian POSIX record of version < 4 but skips the
# fcounters whose *index* equals POSIX_RENAME_SOURCES/_TARGETS/RENAMED_FROM (10, 11, 12:
# a counter enum used on the fcounter array), so those three come back as byte-swapped
# garbage (e.g. 5.35e-305 s). The native reader swaps every field; these columns (and the
# totals the accumulator derives from them) are checked for plausibility instead.
_BE_POSIX_GARBAGE = ("POSIX_F_META_TIME", "POSIX_F_MAX_READ_TIME", "POSIX_F_MAX_WRITE_TIME")
_BE_TOTALS_GARBAGE = tuple(f"total_{c}" for c in _BE_POSIX_GARBAGE) + (
    "total_POSIX_MAX_READ_TIME_SIZE",
    "total_POSIX_MAX_WRITE_TIME_SIZE",
    "total_POSIX_F_VARIANCE_RANK_TIME",
    "POSIX_agg_perf_by_slowest",
    "POSIX_agg_time_by_slowest",
)


def _big_endian_old_posix(path: Path) -> bool:
    head = path.read_bytes()[:400]
    return head[8:16] == (6567223).to_bytes(8, "big") and head[:4] < b"3.41"


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[-60:])
def test_native_tables_equal_libdarshan(path: Path) -> None:
    try:
        oracle = read_pydarshan(path)
    except CorruptLogError as err:
        if "garbage header" in str(err):
            _garbage_job_record_keeps_records(path)
        else:
            reasons = "nprocs|implausible|version|malformed|region|truncated"
            with pytest.raises(CorruptLogError, match=reasons):
                read_darshan3(path)
        return
    ours = read_darshan3(path)
    assert sorted(ours) == sorted(oracle)
    be_garbage = _big_endian_old_posix(path)
    for name, want in oracle.items():
        got = ours[name]
        assert got.schema == want.schema, name
        if be_garbage and name in ("posix", "job_totals"):
            cols = _BE_POSIX_GARBAGE if name == "posix" else _BE_TOTALS_GARBAGE
            _plausible_times(got, cols, ours["jobs"]["run_time"][0].as_py())
            keep = [c for c in want.schema.names if c not in cols]
            got, want = got.select(keep), want.select(keep)
        assert got.equals(want), (name, _first_difference(got, want))


def _garbage_job_record_keeps_records(path: Path) -> None:
    """libdarshan-util rejects the pre-release 3.4 development logs (their job record is
    not in the 3.41 layout: nprocs=4427712942739450220): the native reader keeps their
    records, job fields unknown and said so, and what it keeps is what libdarshan-util
    reads, module by module (the others: regions that are not whole records of their
    version, e.g. a LUSTRE region libdarshan-util crashes on), job totals included."""
    ours = read_darshan3(path)
    job = ours["jobs"].to_pylist()[0]
    assert (job["nprocs"], job["uid"], job["jobid"]) == (-1, -1, None)
    assert job["start_time"] is job["end_time"] is job["run_time"] is None
    said = warnings_in(job["metadata"])
    assert said[0].startswith("job record not in the format 3.41 layout"), said
    by_table = {t: m for m, t in MODULE_TABLES.items()}
    modules = [by_table[t] for t in ours if t in by_table]
    skipped = [w.split()[1] for w in said[1:]]
    assert modules and not set(modules) & set(skipped)
    theirs = _libdarshan_tables(path, modules)
    assert sorted(theirs) == sorted(t for t in ours if t not in ("jobs", "mounts"))
    for name, want in theirs.items():
        assert ours[name].equals(want), (name, _first_difference(ours[name], want))


def _libdarshan_tables(path: Path, modules: list[str]) -> dict[str, pa.Table]:
    """What libdarshan-util reads of ``modules`` (names and job totals too), the job
    record aside: its accumulator is given the ranks the records hold."""
    be = lib._backend()
    log = be.log_open(str(path))
    try:
        info, names = be.log_get_modules(log), be.log_get_name_records(log)
        tables, totals = {}, {}
        for mod in modules:
            idx = info[mod]["idx"]
            if mod not in lib._GENERIC:
                read = {"HEATMAP": lib._heatmap_table, "LUSTRE": lib._lustre_table}
                args = (names,) if mod == "HEATMAP" else ()
                tables[MODULE_TABLES[mod]] = read.get(mod, lib._dxt_table)(be, log, idx, *args)
                continue
            raw, count = lib._raw_records(be, log, idx, lib._GENERIC[mod])
            tables[MODULE_TABLES[mod]] = table = lib._generic_table(be, mod, raw, count)
            if mod in ACCUMULATED:
                nprocs = max(int(np.max(table["rank"])) + 1, 1)
                totals.update(lib._accumulate(be, mod, raw, count, nprocs))
        tables = named_tables(tables, names)
        tables["names"] = names_table(names, be.log_get_mounts(log))
        return tables | ({"job_totals": lib.totals_table(totals)} if totals else {})
    finally:
        be.log_close(log)


def _plausible_times(table: pa.Table, cols: tuple[str, ...], run_time: float) -> None:
    for c in cols:
        if c in table.schema.names and c.startswith(("POSIX_F_", "total_POSIX_F_")):
            v = table[c].to_numpy()
            assert np.all((v == 0) | ((v > 1e-9) & (v <= run_time * 64))), (c, v)


def _first_difference(a: pa.Table, b: pa.Table) -> str:
    if a.num_rows != b.num_rows:
        return f"{a.num_rows} rows vs {b.num_rows}"
    for c in a.schema.names:
        if not a[c].equals(b[c]):
            return f"{c}: {a[c].to_pylist()[:3]} vs {b[c].to_pylist()[:3]}"
    return "?"


def test_every_kind_of_log_is_covered() -> None:
    """The equality test above reaches every format version, byte order and module kind."""
    if len(LOGS) < 50:
        pytest.skip("../shared/darshan-logs not present")
    seen = {(p.read_bytes()[:4], p.read_bytes()[8] == 0) for p in LOGS}
    versions = {v for v, _ in seen}
    assert {b"3.00", b"3.10", b"3.21", b"3.41"} <= versions
    assert {True, False} == {le for _, le in seen}  # both byte orders
    tables = set()
    for p in LOGS:
        try:
            tables |= set(read_darshan3(p))
        except CorruptLogError:
            pass
    assert {"dxt_posix", "dxt_mpiio", "heatmap", "lustre", "h5d", "pnetcdf_file"} <= tables
    assert {"dfs", "daos", "job_totals"} <= tables  # BG/Q records carry no name record


def _without_pydarshan(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "darshan.backend", None)  # import now fails
    monkeypatch.setitem(sys.modules, "darshan.backend.cffi_backend", None)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[-60:])
def test_job_totals_need_no_c_library(path: Path, monkeypatch) -> None:
    """``job_totals`` are iosight's own accumulator: with PyDarshan unimportable they
    equal libdarshan-util's (the oracle) exactly, floats included (tolerance 0), with the
    same columns: POSIX, MPI-IO and STDIO, none for H5F, H5D and PnetCDF."""
    try:
        oracle = read_pydarshan(path)["job_totals"]
    except (CorruptLogError, KeyError):
        pytest.skip("libdarshan-util reads no totals from this log")
    _without_pydarshan(monkeypatch)
    ours = read_darshan3(path)["job_totals"]
    assert ours.column_names == oracle.column_names
    cols = oracle.column_names
    if _big_endian_old_posix(path):
        cols = [c for c in cols if c not in _BE_TOTALS_GARBAGE]
    for c in cols:
        assert ours[c].equals(oracle[c]), (c, ours[c][0], oracle[c][0])


def test_accumulated_modules_are_the_ones_libdarshan_reduces() -> None:
    """Of the modules whose records iosight reduces, libdarshan-util's accumulator takes
    exactly :data:`ACCUMULATED`: it refuses H5F, H5D and PnetCDF records, so totals for
    those would be iosight's invention, not the C library's."""
    be = pytest.importorskip("darshan.backend.cffi_backend")
    accepted = set()
    for mod in ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR"):
        acc = be.ffi.new("darshan_accumulator *")
        if be.libdutil.darshan_accumulator_create(be.mod_name_to_idx(mod), 4, acc) == 0:
            be.libdutil.darshan_accumulator_destroy(acc[0])
            accepted.add(mod)
    assert accepted == set(ACCUMULATED)
    seen = set()
    for path in LOGS:
        try:
            tables = read_darshan3(path)
        except CorruptLogError:
            continue
        seen |= {t for t in ("stdio", "h5f", "h5d", "pnetcdf_file") if t in tables}
        cols = tables["job_totals"].column_names if "job_totals" in tables else []
        assert not [c for c in cols if c.startswith(("total_H5", "total_PNETCDF"))], path
    if len(LOGS) >= 50:  # ../shared present: the oracle test above met all these modules
        assert seen == {"stdio", "h5f", "h5d", "pnetcdf_file"}
