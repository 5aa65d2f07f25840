"""Read a Darshan 3.x log through libdarshan-util (PyDarshan's cffi backend).

PyDarshan's ``DarshanReport`` builds Python dicts per record and per DXT
segment and keeps a finaliser that can deadlock; this reader
calls the same C library through PyDarshan's ``ffi``/``libdutil`` handles, copies
each module's records as raw struct bytes, and views them as numpy structured
arrays, so a log becomes Arrow columns with one copy and no per-value Python.
The log handle is always closed explicitly.

Job totals use libdarshan-util's own accumulator (``darshan_accumulator_*``),
the reduction behind ``darshan-parser --total`` and PyDarshan's
``accumulate_records``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

from iosight._errors import CorruptLogError
from iosight.darshan._accumulate import ACCUMULATED
from iosight.darshan._record_tables import (
    concat_int64,
    heatmap_table,
    named_tables,
    names_table,
)
from iosight.darshan._tables import (
    LogTables,
    jobs_schema,
    path_text,
    table_for_module,
    totals_table,
)

# modules whose records are {base_rec, [file_rec_id,] counters[], fcounters[], ...}
_GENERIC = {
    "POSIX": "struct darshan_posix_file",
    "MPI-IO": "struct darshan_mpiio_file",
    "STDIO": "struct darshan_stdio_file",
    "H5F": "struct darshan_hdf5_file",
    "H5D": "struct darshan_hdf5_dataset",
    "PNETCDF_FILE": "struct darshan_pnetcdf_file",
    "PNETCDF_VAR": "struct darshan_pnetcdf_var",
    "BG/Q": "struct darshan_bgq_record",
    "DFS": "struct darshan_dfs_file",
    "DAOS": "struct darshan_daos_object",
}
_MAX_NPROCS = 1 << 27  # larger means a garbage header (pre-release formats)
_SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])


def _backend():
    from darshan.backend import cffi_backend as be

    return be


def read_pydarshan(path: str | Path) -> LogTables:
    """Read every module of one Darshan 3.x log into warehouse tables.

    libdarshan-util's own messages (it prints to the C ``stderr``) are kept off the
    terminal: the first one becomes part of the error's reason.

    ``path``: the log.

    Raises
    ------
    CorruptLogError
        When libdarshan-util cannot open the log or its header is implausible.
    """
    be = _backend()
    path = Path(path)
    if not path.is_file():
        raise CorruptLogError(f"{path}: not a file")
    if path.stat().st_size == 0:
        raise CorruptLogError(f"{path}: empty file")
    with _c_stderr() as said:
        try:
            return _read_with(be, path)
        except CorruptLogError as err:
            msg = str(err) if str(err).startswith(f"{path}: ") else f"{path}: {err}"
            first = next((line for line in said() if line.strip()), "")
            raise CorruptLogError(f"{msg} [{first.strip()}]" if first else msg) from None


def _read_with(be, path: Path) -> LogTables:
    log = be.log_open(str(path))
    if log["handle"] == be.ffi.NULL:
        raise CorruptLogError("libdarshan-util cannot open it (not a Darshan 3.x log?)")
    try:
        return _read_open_log(be, log, path)
    finally:
        be.log_close(log)


@contextlib.contextmanager
def _c_stderr():
    """Send file descriptor 2 (where C code writes) to a temporary file for the block;
    yields a function returning what was written, as lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)

        def said() -> list[str]:
            tmp.flush()
            tmp.seek(0)
            return tmp.read(4096).decode("utf-8", "replace").splitlines()

        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _read_open_log(be, log, path: Path) -> LogTables:
    job = _job(be, log, path)
    mounts = be.log_get_mounts(log)
    modules = be.log_get_modules(log)
    names = be.log_get_name_records(log)
    tables: dict[str, pa.Table] = {}
    totals: dict[str, float] = {}
    for mod, info in modules.items():
        if info["len"] == 0:
            continue
        if mod in _GENERIC:
            raw, count = _raw_records(be, log, info["idx"], _GENERIC[mod])
            if count == 0:
                continue
            tables[table_for_module(mod)] = _generic_table(be, mod, raw, count)
            if mod in ACCUMULATED:  # libdarshan-util's accumulator refuses the others
                totals.update(_accumulate(be, mod, raw, count, job["nprocs"]))
        elif mod == "LUSTRE":
            tables["lustre"] = _lustre_table(be, log, info["idx"])
        elif mod in ("DXT_POSIX", "DXT_MPIIO"):
            tables[table_for_module(mod)] = _dxt_table(be, log, info["idx"])
        elif mod == "HEATMAP":
            tables["heatmap"] = _heatmap_table(be, log, info["idx"], names)
    tables = named_tables(tables, names)
    present = [m for m, i in modules.items() if i["len"] > 0]
    partial = [m for m, i in modules.items() if i["partial_flag"]]
    job.update(modules=",".join(present), partial_modules=",".join(partial), partial=bool(partial))
    tables["jobs"] = pa.Table.from_pylist([job], schema=jobs_schema())
    tables["mounts"] = pa.table(
        {
            "mount_point": pa.array([m[0] for m in mounts], pa.string()),
            "fs_type": pa.array([m[1] for m in mounts], pa.string()),
        }
    )
    tables["names"] = names_table(names, mounts)
    tables["job_totals"] = totals_table(totals) if totals else pa.table({})
    return LogTables({k: v for k, v in tables.items() if v.num_columns})


def _job(be, log, path: Path) -> dict:
    ffi, lib = be.ffi, be.libdutil
    rec = ffi.new("struct darshan_job *")
    if lib.darshan_log_get_job(log["handle"], rec) < 0:
        raise CorruptLogError(f"{path}: cannot read the job record")
    j = rec[0]
    if not 0 < j.nprocs <= _MAX_NPROCS:
        raise CorruptLogError(f"{path}: garbage header (nprocs={j.nprocs})")
    runtime = ffi.new("double *")
    lib.darshan_log_get_job_runtime(log["handle"], j, runtime)
    meta = ffi.string(j.metadata).decode("utf-8", "replace")
    kv = dict(line.split("=", 1) for line in meta.splitlines() if "=" in line)
    exe = ffi.new("char[]", 4096)
    lib.darshan_log_get_exe(log["handle"], exe)
    return {
        "source_path": path_text(path),
        "source_format": "darshan3",
        "log_version": ffi.string(ffi.cast("char *", log["handle"])).decode("ascii", "replace"),
        "lib_version": kv.get("lib_ver", ""),
        "jobid": int(j.jobid),
        "uid": int(j.uid),
        "exe": ffi.string(exe).decode("utf-8", "replace"),
        "nprocs": int(j.nprocs),
        "start_time": j.start_time_sec + j.start_time_nsec * 1e-9,
        "end_time": j.end_time_sec + j.end_time_nsec * 1e-9,
        "run_time": float(runtime[0]),
        "synthetic": False,
        "metadata": meta.strip(),
    }


def _raw_records(be, log, idx: int, struct: str) -> tuple[bytes, int]:
    """All records of one module as the concatenated bytes of their C structs."""
    ffi = be.ffi
    size = ffi.sizeof(struct)
    chunks = [bytes(ffi.buffer(rec, size)) for rec in _records(be, log, idx)]
    return b"".join(chunks), len(chunks)


def _records(be, log, idx: int):
    """Yield each record buffer of module ``idx``; a read error is a corrupt log.

    Each record gets a fresh buffer (some modules' readers, DAOS, misread into a
    reused one), freed once the caller has copied what it needs.
    """
    ffi, lib = be.ffi, be.libdutil
    buf = ffi.new("void **")
    while True:
        r = lib.darshan_log_get_record(log["handle"], idx, buf)
        if r < 0:
            raise CorruptLogError(f"module {be._mod_names[idx]} data truncated or corrupt")
        if r == 0:
            return
        try:
            yield buf[0]
        finally:
            lib.darshan_free(buf[0])
            buf[0] = ffi.NULL


def _struct_dtype(be, mod: str) -> np.dtype:
    ffi, struct = be.ffi, _GENERIC[mod]
    n_c = len(_names(be, mod))
    n_f = len(_fnames(be, mod))
    fields = {"names": ["record_id", "rank"], "formats": ["<u8", "<i8"], "offsets": [0, 8]}
    if mod in ("H5D", "PNETCDF_VAR"):
        fields["names"].append("file_rec_id")
        fields["formats"].append("<u8")
        fields["offsets"].append(ffi.offsetof(struct, "file_rec_id"))
    fields["names"] += ["counters", "fcounters"]
    fields["formats"] += [("<i8", (n_c,)), ("<f8", (n_f,))]
    fields["offsets"] += [ffi.offsetof(struct, "counters"), ffi.offsetof(struct, "fcounters")]
    return np.dtype({**fields, "itemsize": ffi.sizeof(struct)})


def _names(be, mod: str) -> list[str]:
    # libdarshan-util spells the BG/Q tables bgq_*; PyDarshan's lookup misses them
    return be.counter_names("BGQ" if mod == "BG/Q" else mod)


def _fnames(be, mod: str) -> list[str]:
    return be.fcounter_names("BGQ" if mod == "BG/Q" else mod)


def _generic_table(be, mod: str, raw: bytes, count: int) -> pa.Table:
    arr = np.frombuffer(raw, dtype=_struct_dtype(be, mod), count=count)
    cols = {"rank": pa.array(arr["rank"]), "record_id": pa.array(arr["record_id"])}
    if "file_rec_id" in arr.dtype.names:
        cols["file_rec_id"] = pa.array(arr["file_rec_id"])
    counters, fcounters = arr["counters"], arr["fcounters"]
    for i, name in enumerate(_names(be, mod)):
        cols[name] = pa.array(counters[:, i])
    for i, name in enumerate(_fnames(be, mod)):
        cols[name] = pa.array(fcounters[:, i])
    return pa.table(cols)


def _accumulate(be, mod: str, raw: bytes, count: int, nprocs: int) -> dict[str, float]:
    """``darshan-parser --total`` for one module: the C accumulator's summary record."""
    ffi, lib = be.ffi, be.libdutil
    acc = ffi.new("darshan_accumulator *")
    if lib.darshan_accumulator_create(be.mod_name_to_idx(mod), nprocs, acc) != 0:
        return {}
    try:
        records = ffi.from_buffer(raw)
        if lib.darshan_accumulator_inject(acc[0], records, count) != 0:
            return {}
        metrics = ffi.new("struct darshan_derived_metrics *")
        summary = ffi.new(_GENERIC[mod] + " *")
        if lib.darshan_accumulator_emit(acc[0], metrics, summary) != 0:
            return {}
    finally:
        lib.darshan_accumulator_destroy(acc[0])
    out: dict[str, float] = {}
    counters = np.frombuffer(ffi.buffer(summary[0].counters), dtype=np.int64)
    fcounters = np.frombuffer(ffi.buffer(summary[0].fcounters), dtype=np.float64)
    names = be.counter_names(mod) + be.fcounter_names(mod)
    for name, v in zip(names, counters.tolist() + fcounters.tolist(), strict=True):
        out["total_" + name] = v  # total_POSIX_OPENS, total_MPIIO_..., as darshan-parser
    m = metrics[0]
    tag = mod.replace("-", "")
    out[f"{tag}_agg_perf_by_slowest"] = m.agg_perf_by_slowest
    out[f"{tag}_agg_time_by_slowest"] = m.agg_time_by_slowest
    out[f"{tag}_total_bytes"] = m.total_bytes
    return out


def _lustre_table(be, log, idx: int) -> pa.Table:
    ffi = be.ffi
    names = be.counter_names("LUSTRE_COMP")
    rows: dict[str, list] = {"rank": [], "record_id": [], "component": [], "pool_name": []}
    rows.update({n: [] for n in names})
    osts: list[list[int]] = []
    for ptr in _records(be, log, idx):
        rec = ffi.cast("struct darshan_lustre_record *", ptr)
        ost_ptr = ffi.cast("int64_t *", rec.ost_ids)
        pos = 0
        for c in range(rec.num_comps):
            comp = rec.comps[c]
            values = np.frombuffer(ffi.buffer(comp.counters), dtype=np.int64).tolist()
            for n, v in zip(names, values, strict=True):
                rows[n].append(v)
            stripes = max(int(values[names.index("LUSTRE_COMP_STRIPE_COUNT")]), 0)
            osts.append(ffi.unpack(ost_ptr + pos, stripes) if stripes else [])
            pos += stripes
            rows["rank"].append(rec.base_rec.rank)
            rows["record_id"].append(rec.base_rec.id)
            rows["component"].append(c)
            rows["pool_name"].append(ffi.string(comp.pool_name).decode("utf-8", "replace"))
    table = pa.table(
        {
            "rank": pa.array(rows.pop("rank"), pa.int64()),
            "record_id": pa.array(rows.pop("record_id"), pa.uint64()),
            "component": pa.array(rows.pop("component"), pa.int64()),
            **{n: pa.array(rows[n], pa.int64()) for n in names},
            "pool_name": pa.array(rows["pool_name"], pa.string()),
            "ost_ids": pa.array(osts, pa.list_(pa.int64())),
        }
    )
    return table


def _dxt_table(be, log, idx: int) -> pa.Table:
    ffi = be.ffi
    head = ffi.sizeof("struct dxt_file_record")
    parts: list[np.ndarray] = []
    ids, ranks, hosts, nwrites, nreads = [], [], [], [], []
    for ptr in _records(be, log, idx):
        rec = ffi.cast("struct dxt_file_record *", ptr)
        w, r = int(rec.write_count), int(rec.read_count)
        seg = np.frombuffer(ffi.buffer(ffi.cast("char *", ptr) + head, (w + r) * 32), _SEGMENT)
        parts.append(seg.copy())
        ids.append(rec.base_rec.id)
        ranks.append(rec.base_rec.rank)
        hosts.append(ffi.string(rec.hostname).decode("utf-8", "replace"))
        nwrites.append(w)
        nreads.append(r)
    counts = np.add(nwrites, nreads, dtype=np.int64) if ids else np.zeros(0, np.int64)
    seg = np.concatenate(parts) if parts else np.zeros(0, _SEGMENT)
    rec_of = np.repeat(np.arange(len(ids)), counts)
    seq = np.arange(len(seg)) - np.repeat(np.cumsum(counts) - counts, counts)
    is_write = seq < np.repeat(np.asarray(nwrites, dtype=np.int64), counts)
    return pa.table(
        {
            "rank": pa.array(np.asarray(ranks, np.int64)[rec_of]),
            "record_id": pa.array(np.asarray(ids, np.uint64)[rec_of]),
            "hostname": pa.DictionaryArray.from_arrays(
                pa.array(rec_of.astype(np.int32)), pa.array(hosts, pa.string())
            ).cast(pa.string()),
            "seq": pa.array(seq.astype(np.int64)),
            "op": pa.array(np.where(is_write, "write", "read")),
            "offset": pa.array(seg["offset"]),
            "length": pa.array(seg["length"]),
            "start": pa.array(seg["start"]),
            "end": pa.array(seg["end"]),
        }
    )


def _heatmap_table(be, log, idx: int, names: dict[int, str]) -> pa.Table:
    ffi = be.ffi
    cols: dict[str, list] = {k: [] for k in ("rank", "record_id", "width", "w", "r")}
    for ptr in _records(be, log, idx):
        rec = ffi.cast("struct darshan_heatmap_record *", ptr)
        n = int(rec.nbins)
        cols["rank"].append(rec.base_rec.rank)
        cols["record_id"].append(rec.base_rec.id)
        cols["width"].append(rec.bin_width_seconds)
        cols["w"].append(np.frombuffer(ffi.buffer(rec.write_bins, 8 * n), np.int64).copy())
        cols["r"].append(np.frombuffer(ffi.buffer(rec.read_bins, 8 * n), np.int64).copy())
    return heatmap_table(
        np.asarray(cols["record_id"], np.uint64),
        np.asarray(cols["rank"], np.int64),
        np.asarray(cols["width"], np.float64),
        np.array([len(w) for w in cols["w"]], np.int64),
        concat_int64(cols["w"]),
        concat_int64(cols["r"]),
        names,
    )
