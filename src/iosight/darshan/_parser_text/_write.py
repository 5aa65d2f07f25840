"""Write warehouse tables as a ``darshan-parser --all`` text dump (what
:func:`~iosight.darshan.read_parser_text` reads; the format is described there)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from iosight._errors import CorruptLogError
from iosight.darshan._parser_text._dxt import _DXT_TABLES
from iosight.darshan._parser_text._lustre import _LUSTRE_COMP_COUNTERS
from iosight.darshan._parser_text._totals import _PERF_KEYS
from iosight.darshan._tables import table_for_module

if TYPE_CHECKING:
    import pyarrow as pa


# ---- writing -------------------------------------------------------------------


def _fmt_float(exact: bool, digits: int = 6):
    """darshan-parser's ``%f``-style rendering, or the shortest exact one."""
    if exact:
        return lambda v: repr(float(v))
    return lambda v: f"{v:.{digits}f}"


def _names_lookup(tables: dict[str, pa.Table]) -> dict[int, tuple[str, str, str]]:
    names = tables.get("names")
    if names is None:
        return {}
    cols = [names[c].to_pylist() for c in ("record_id", "name", "mount_point", "fs_type")]
    return {r: (n or "", m or "UNKNOWN", f or "UNKNOWN") for r, n, m, f in zip(*cols, strict=True)}


def _write_header(job: dict, tables: dict[str, pa.Table], out: TextIO, exact: bool) -> None:
    when = _fmt_float(True) if exact else (lambda v: str(int(v)))
    out.write(f"# darshan log version: {job['log_version']}\n")
    out.write(f"# exe: {job['exe']}\n# uid: {job['uid']}\n# jobid: {job['jobid']}\n")
    for key in ("start_time", "end_time"):
        out.write(f"# {key}: {when(job[key])}\n")
        out.write(f"# {key}_asci: {time.asctime(time.gmtime(job[key]))}\n")
    out.write(f"# nprocs: {job['nprocs']}\n")
    out.write(f"# run time: {repr(job['run_time']) if exact else format(job['run_time'], '.4f')}\n")
    for line in (job["metadata"] or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out.write(f"# metadata: {key} = {value}\n")
    out.write("\n# mounted file systems (mount point and fs type)\n")
    out.write("# -------------------------------------------------------\n")
    mounts = tables.get("mounts")
    if mounts is not None:
        pairs = zip(mounts["mount_point"].to_pylist(), mounts["fs_type"].to_pylist(), strict=True)
        for mnt, fs in pairs:
            out.write(f"# mount entry:\t{mnt}\t{fs}\n")


def _counter_lines(module: str, table: pa.Table, names: dict, exact: bool) -> list[str]:
    """One darshan-parser row (module, rank, id, counter, value, name, mount, fs) per counter."""
    from pyarrow import types as pat

    ffmt = _fmt_float(exact)
    prefix = module.replace("-", "").replace("/", "")
    rows = table.to_pydict()
    counters = [c for c in table.column_names if c not in ("rank", "record_id", "file_rec_id")]
    floats = {c for c in counters if pat.is_floating(table.schema.field(c).type)}
    if "file_rec_id" in rows:
        counters = ["file_rec_id", *counters]
    lines = []
    for i, (rank, rid) in enumerate(zip(rows["rank"], rows["record_id"], strict=True)):
        name, mnt, fs = names.get(rid, ("<unknown>", "UNKNOWN", "UNKNOWN"))
        tail = f"\t{name}\t{mnt}\t{fs}"
        for c in counters:
            v = rows[c][i]
            label = f"{prefix}_FILE_REC_ID" if c == "file_rec_id" else c
            text = ffmt(v) if c in floats else str(v)
            lines.append(f"{module}\t{rank}\t{rid}\t{label}\t{text}{tail}")
    return lines


def _lustre_lines(table: pa.Table, names: dict) -> list[str]:
    """darshan-parser 3.4+ LUSTRE rows: per record the component and stripe counts,
    then per component its counters, pool name and OST ids (``COMP<n>`` from 1)."""
    df = table.to_pandas()
    lines: list[str] = []
    for (rank, rid), g in df.groupby(["rank", "record_id"], sort=False):
        name, mnt, fs = names.get(rid, ("<unknown>", "UNKNOWN", "UNKNOWN"))
        head, tail = f"LUSTRE\t{rank}\t{rid}\t", f"\t{name}\t{mnt}\t{fs}"
        n_stripes = sum(len(o) for o in g["ost_ids"])
        lines.append(f"{head}LUSTRE_NUM_COMPONENTS\t{len(g)}{tail}")
        lines.append(f"{head}LUSTRE_NUM_STRIPES\t{n_stripes}{tail}")
        for r in g.to_dict("records"):
            comp = f"LUSTRE_COMP{r['component'] + 1}_"
            for c in _LUSTRE_COMP_COUNTERS:
                lines.append(f"{head}{comp}{c[len('LUSTRE_COMP_') :]}\t{r[c]}{tail}")
            lines.append(f"{head}{comp}POOL_NAME\t{r['pool_name'] or 'N/A'}{tail}")
            for k, ost in enumerate(r["ost_ids"]):
                lines.append(f"{head}{comp}OST_ID_{k}\t{ost}{tail}")
    return lines


def _runs(*keys: list) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of equal consecutive key tuples."""
    n = len(keys[0])
    if n == 0:
        return []
    change = np.zeros(n, bool)
    change[0] = True
    for k in keys:
        arr = np.asarray(k, dtype=object)
        change[1:] |= arr[1:] != arr[:-1]
    starts = np.flatnonzero(change).tolist()
    return list(zip(starts, [*starts[1:], n], strict=True))


def _heatmap_lines(table: pa.Table, exact: bool) -> list[str]:
    """Every bin of each record, as darshan-parser prints them: ``nbins`` of them, 0 where
    the table has no row (it keeps bins with bytes only)."""
    ffmt = _fmt_float(exact)
    c = table.to_pydict()
    lines: list[str] = []
    for lo, hi in _runs(c["module"], c["rank"], c["record_id"]):
        tail = f"\theatmap:{c['module'][lo]}\tUNKNOWN\tUNKNOWN"
        head = f"HEATMAP\t{c['rank'][lo]}\t{c['record_id'][lo]}\t"
        lines.append(f"{head}HEATMAP_F_BIN_WIDTH_SECONDS\t{ffmt(c['bin_width'][lo])}{tail}")
        bins = c["bin"][lo:hi]
        for op in ("read", "write"):
            label = f"{head}HEATMAP_{op.upper()}_BIN_"
            values = np.zeros(c["nbins"][lo], np.int64)  # a bin without bytes has no row
            values[bins] = c[f"{op}_bytes"][lo:hi]
            lines += [f"{label}{b}\t{v}{tail}" for b, v in enumerate(values.tolist())]
    return lines


def _dxt_lines(kind: str, table: pa.Table, names: dict, exact: bool) -> list[str]:
    tfmt = _fmt_float(exact, 4)
    c = table.to_pydict()
    lines: list[str] = []
    for lo, hi in _runs(c["record_id"], c["rank"], c["hostname"]):
        rid, rank = c["record_id"][lo], c["rank"][lo]
        name, mnt, fs = names.get(rid, ("<unknown>", "UNKNOWN", "UNKNOWN"))
        n_write = c["op"][lo:hi].count("write")
        lines += [
            f"\n# DXT, file_id: {rid}, file_name: {name}",
            f"# DXT, rank: {rank}, hostname: {c['hostname'][lo]}",
            f"# DXT, write_count: {n_write}, read_count: {hi - lo - n_write}",
            f"# DXT, mnt_pt: {mnt}, fs_type: {fs}",
            "# Module    Rank  Wt/Rd  Segment          Offset       Length    Start(s)      End(s)",
        ]
        cols = (c[k][lo:hi] for k in ("op", "seq", "offset", "length", "start", "end"))
        lines += [
            f" {kind:>7}{rank:8d}{op:>7}{seq:9d}{off:16d}{length:16d} {tfmt(t0):>11} {tfmt(t1):>11}"
            for op, seq, off, length, t0, t1 in zip(*cols, strict=True)
        ]
    return lines


def write_parser_text(tables: dict[str, pa.Table], out: Path | TextIO, *, exact: bool = False):
    """Render one log's warehouse tables in ``darshan-parser --all`` format.

    Parameters
    ----------
    tables : dict of str to pyarrow.Table
        The tables of one log (a reader's output, or one ``job_key`` of a
        warehouse with the ``job_key`` column dropped or kept).
    out : Path or text stream
        Where to write.
    exact : bool, default False
        False prints numbers as darshan-parser does (fcounters with six
        decimals, DXT times with four, job times in whole seconds); True prints
        them in full precision so that :func:`read_parser_text` gives back the
        same values.
    """
    if isinstance(out, (str, Path)):
        with open(out, "w", encoding="utf-8") as fh:
            write_parser_text(tables, fh, exact=exact)
        return
    if "jobs" not in tables or tables["jobs"].num_rows != 1:
        raise CorruptLogError("write_parser_text needs exactly one 'jobs' row")
    job = tables["jobs"].to_pylist()[0]
    _write_header(job, tables, out, exact)
    names = _names_lookup(tables)
    partial = set(filter(None, (job["partial_modules"] or "").split(",")))
    modules = [m for m in (job["modules"] or "").split(",") if m]
    totals = tables.get("job_totals")
    totals = totals.to_pylist()[0] if totals is not None and totals.num_rows == 1 else {}
    ffmt = _fmt_float(exact)
    for module in modules:
        table = tables.get(table_for_module(module))
        out.write("\n# *******************************************************\n")
        out.write(f"# {module} module data\n")
        out.write("# *******************************************************\n")
        if module in partial:
            out.write(f"\n# *WARNING*: The {module} module contains incomplete data!\n")
        if module.startswith("DXT_"):
            out.write("# (segments follow at the end, in darshan-dxt-parser format)\n")
            continue
        if table is not None and table.num_rows:
            out.write("\n#<module>\t<rank>\t<record id>\t<counter>\t<value>")
            out.write("\t<file name>\t<mount pt>\t<fs type>\n")
            if module == "LUSTRE":
                lines = _lustre_lines(table, names)
            elif module == "HEATMAP":
                lines = _heatmap_lines(table, exact)
            else:
                lines = _counter_lines(module, table, names, exact)
            out.write("\n".join(lines) + "\n")
        tag = module.replace("-", "").replace("/", "")
        perf = [(k, totals[f"{tag}_{k}"]) for k in _PERF_KEYS if f"{tag}_{k}" in totals]
        if perf:
            out.write("\n# performance\n# -----------\n")
            for key, value in perf:
                out.write(f"# {key}: {ffmt(value) if isinstance(value, float) else value}\n")
    for kind, tname in _DXT_TABLES.items():
        if tname in tables and tables[tname].num_rows:
            out.write("\n".join(_dxt_lines(kind, tables[tname], names, exact)) + "\n")
    printed = [(k, v) for k, v in totals.items() if k.startswith("total_")]
    if printed:
        out.write("\n")
    for key, value in printed:
        out.write(f"{key}: {ffmt(value) if isinstance(value, float) else value}\n")
