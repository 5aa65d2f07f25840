"""Read and write ``darshan-parser --all`` text dumps (Darshan 3.x output format).

Facilities that archive parser output instead of binary logs can ingest it with
:func:`read_parser_text`; :func:`write_parser_text` renders warehouse tables back
in the same format. The format is that of ``darshan-util/darshan-parser.c`` and
the modules' ``darshan_log_print_*`` functions (Listing 1 of Saeedizade et al.,
"I/O Burst Prediction for HPC Clusters using Darshan Logs", shows an excerpt):

- header comments ``# darshan log version:``, ``# exe:``, ``# uid:``, ``# jobid:``,
  ``# start_time:``, ``# end_time:``, ``# nprocs:``, ``# run time:``,
  ``# metadata: k = v``, ``# mount entry:\\t<path>\\t<type>``;
- per module a ``# <MODULE> module data`` section (with
  ``# *WARNING*: The <MODULE> module contains incomplete data!`` for partial
  modules) and one row per counter:
  ``<module>\\t<rank>\\t<record id>\\t<counter>\\t<value>\\t<file name>\\t<mount pt>\\t<fs type>``;
- LUSTRE rows (``LUSTRE_COMP<n>_*``, ``..._POOL_NAME``, ``..._OST_ID_<k>``; or the
  pre-3.4 ``LUSTRE_STRIPE_*`` and ``LUSTRE_OST_ID_<k>``), HEATMAP rows
  (``HEATMAP_F_BIN_WIDTH_SECONDS``, ``HEATMAP_READ_BIN_<k>``, ``HEATMAP_WRITE_BIN_<k>``);
- DXT sections as ``darshan-dxt-parser`` prints them (``# DXT, file_id: ...``,
  ``# DXT, rank: ..., hostname: ...`` and `` X_POSIX <rank> <op> <seg> <offset>
  <length> <start> <end>`` rows);
- ``total_<COUNTER>: <value>`` lines and the ``--perf``/``--file`` comments are
  ignored on reading: ``job_totals`` is recomputed from the records.

iosight's readings: darshan-parser prints fcounters with six decimals, DXT
times with four and job times in whole seconds, so a dump holds less precision
than the binary log; ``write_parser_text(..., exact=True)`` writes full
precision instead (still readable by :func:`read_parser_text`). Lustre
components are numbered from 1 as darshan-parser prints them; pre-3.4 Lustre
records (no components) get ``component = 0``.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import re
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from iosight._errors import CorruptLogError
from iosight.darshan._darshan2 import job_totals
from iosight.darshan._darshan2_counters import (
    CP_COUNTERS,
    CP_F_COUNTERS,
    MPIIO_COLUMNS,
    POSIX_COLUMNS,
)
from iosight.darshan._tables import JOB_COLUMNS, MODULE_TABLES, jobs_schema, table_for_module

if TYPE_CHECKING:
    import pyarrow as pa

_ROW_FIELDS = ("module", "rank", "record_id", "counter", "value", "name", "mount", "fs")
_LEGACY_FIELDS = _ROW_FIELDS[1:]
_SPECIAL = ("LUSTRE", "HEATMAP")
_DXT_TABLES = {"X_POSIX": "dxt_posix", "X_MPIIO": "dxt_mpiio"}
_MODULE_NAMES = {table: module for module, table in MODULE_TABLES.items()}
_LUSTRE_PATTERNS = {"raid0": 0, "mdt": 2, "raid0,overstriped": 4, "foreign": 8, "N/A": -1}
_LUSTRE_FLAGS = (
    "stale prefrd prefwr offline init nosync extension parity compress partial nocompr neg"
).split()
_COMP = re.compile(r"LUSTRE_COMP(\d+)_(.+)")
_OST = re.compile(r"OST_ID_(\d+)")


# ---- reading -------------------------------------------------------------------


def _text_of(path: Path) -> str:
    raw = path.read_bytes()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        elif raw[:3] == b"BZh":
            raw = bz2.decompress(raw)
    except (OSError, EOFError, ValueError, zlib.error) as err:
        raise CorruptLogError(f"damaged compressed parser output ({err})") from None
    return raw.decode("utf-8", "replace")


def _header(lines: list[str]) -> dict:
    """Job fields, metadata, mounts, module sections and partial flags from ``# `` lines."""
    head: dict = {"metadata": {}, "mounts": [], "modules": [], "partial": []}
    for line in lines:
        if not line.startswith("# "):
            continue
        body = line[2:]
        if body.startswith("mount entry:"):
            parts = body.split("\t")
            if len(parts) >= 3:
                head["mounts"].append((parts[1], parts[2]))
            continue
        if body.startswith("metadata: "):
            key, _, value = body[len("metadata: ") :].partition(" = ")
            head["metadata"][key] = value
            continue
        m = re.fullmatch(r"(\S+) module data", body)
        if m:
            head["modules"].append(m.group(1))
            continue
        m = re.match(r"\*WARNING\*: The (\S+) module contains incomplete data", body)
        if m:
            head["partial"].append(m.group(1))
            continue
        key, sep, value = body.partition(": ")
        if sep and key in (
            "darshan log version",
            "exe",
            "uid",
            "jobid",
            "start_time",
            "end_time",
            "nprocs",
            "run time",
        ):
            head.setdefault(key, value.strip() if key != "exe" else value)
    return head


def _number(head: dict, key: str, kind: type) -> int | float:
    if key not in head:
        raise CorruptLogError(f"parser output lacks the '# {key}:' header line")
    try:
        return kind(float(head[key])) if kind is int and "." in head[key] else kind(head[key])
    except ValueError:
        raise CorruptLogError(f"bad '# {key}:' value {head[key][:40]!r}") from None


def _record_rows(data: bytes, fields: tuple[str, ...] = _ROW_FIELDS) -> pa.Table:
    """The tab-separated counter rows of the whole dump as an all-string Arrow table.

    Arrow's CSV reader splits the text; lines that are not 8-field rows
    (comments, ``total_*`` lines, DXT rows) are skipped, unless they look like
    a counter row with the wrong number of fields.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    bad: list[str] = []

    def on_bad(row) -> str:
        text = row.text or ""
        if text[:1] not in ("#", " ", "") and "\t" in text and len(fields) == 8:
            bad.append(text)
        return "skip"

    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(column_names=list(fields), block_size=1 << 24),
            parse_options=pacsv.ParseOptions(
                delimiter="\t", quote_char=False, invalid_row_handler=on_bad
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={f: pa.string() for f in fields}, strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid as err:
        raise CorruptLogError(
            f"unreadable parser output ({str(err).splitlines()[0][:80]})"
        ) from None
    if bad:
        raise CorruptLogError(f"malformed counter row {bad[0][:60]!r}")
    first = table[fields[0]]
    drop = pc.starts_with(first, "#")  # the column-title line
    if fields[0] == "module":
        drop = pc.or_(drop, pc.utf8_is_digit(first))  # --file-list rows
    return table.filter(pc.invert(drop))


def _as(values: pa.Array, typ: pa.DataType, what: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(values, typ).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise CorruptLogError(f"non-numeric value in {what}") from None


def _records(rank: np.ndarray, rid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Record index of every row (first-appearance order) and the first row of each record.

    darshan-parser prints a record's counters on consecutive rows, so records
    are runs of equal ``(rank, record id)``; a record split over several runs is
    still merged into one.
    """
    n = len(rank)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    change = np.flatnonzero((rank[1:] != rank[:-1]) | (rid[1:] != rid[:-1])) + 1
    starts = np.concatenate([[0], change])
    seen: dict[tuple[int, int], int] = {}
    run_code = np.array(
        [
            seen.setdefault((r, i), len(seen))
            for r, i in zip(rank[starts].tolist(), rid[starts].tolist(), strict=True)
        ],
        np.int64,
    )
    lengths = np.diff(np.concatenate([starts, [n]]))
    codes = np.repeat(run_code, lengths)
    _, first_run = np.unique(run_code, return_index=True)
    return codes, starts[first_run]


def _counter_groups(rows: pa.Table, rec: np.ndarray):
    """Per counter name (first-appearance order): its rows' record codes and values."""
    import pyarrow as pa

    encoded = rows["counter"].combine_chunks().dictionary_encode()
    col = encoded.indices.to_numpy()
    counters = encoded.dictionary.to_pylist()
    order = np.argsort(col, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(col, minlength=len(counters)))])
    values = rows["value"].combine_chunks().take(pa.array(order))
    rec = rec[order]
    for j, name in enumerate(counters):
        lo, hi = bounds[j], bounds[j + 1]
        yield name, rec[lo:hi], values.slice(lo, hi - lo)


def _module_table(rows: pa.Table, module: str) -> pa.Table:
    """Counter rows of one module pivoted to ``rank, record_id, [file_rec_id,] counters``."""
    import pyarrow as pa

    rank = _as(rows["rank"], pa.int64(), f"{module} rank")
    rid = _as(rows["record_id"], pa.uint64(), f"{module} record id")
    rec, first = _records(rank, rid)
    n = len(first)
    data: dict[str, pa.Array] = {
        "rank": pa.array(rank[first], pa.int64()),
        "record_id": pa.array(rid[first], pa.uint64()),
    }
    for name, where, values in _counter_groups(rows, rec):
        if name.endswith("_FILE_REC_ID"):
            typ, key = pa.uint64(), "file_rec_id"
        else:
            typ, key = (pa.float64() if "_F_" in name else pa.int64()), name
        out = np.zeros(n, typ.to_pandas_dtype())
        out[where] = _as(values, typ, f"{module} {name}")
        data[key] = pa.array(out, typ)
    if "file_rec_id" in data:  # contract: right after record_id
        data = {k: data[k] for k in ("rank", "record_id", "file_rec_id")} | data
    return pa.table(data)


def _legacy_tables(rows: pa.Table) -> dict[str, pa.Table]:
    """Darshan 1.x/2.x parser rows (``<rank> <file> <counter> <value> <suffix>...``).

    The ``CP_*`` counters are laid out as the 2.06 record and then split into
    ``posix``/``mpiio`` exactly as :func:`read_darshan2` does, so a 2.x log and
    its 2.x parser dump give the same tables; counters unknown to 2.06 keep
    their name in ``posix``.
    """
    import pyarrow as pa

    from iosight.darshan import _darshan2 as d2

    rank = _as(rows["rank"], pa.int64(), "rank")
    rid = _as(rows["record_id"], pa.uint64(), "record id")
    rec, first = _records(rank, rid)
    n = len(first)
    ints = np.zeros((n, len(CP_COUNTERS)), np.int64)
    floats = np.zeros((n, len(CP_F_COUNTERS)), np.float64)
    extra: dict[str, np.ndarray] = {}
    for name, where, values in _counter_groups(rows, rec):
        if name in CP_F_COUNTERS:
            floats[where, CP_F_COUNTERS.index(name)] = _as(values, pa.float64(), name)
        elif name in CP_COUNTERS:
            ints[where, CP_COUNTERS.index(name)] = _as(values, pa.int64(), name)
        else:
            extra.setdefault(name, np.zeros(n, np.int64))[where] = _as(values, pa.int64(), name)
    posix = d2._module_table(POSIX_COLUMNS, rank[first], rid[first], ints, floats)
    for name, values in extra.items():
        posix = posix.append_column(name, pa.array(values, pa.int64()))
    tables = {"posix": posix}
    mpi = d2._mpi_activity(ints, floats)
    if mpi.any():
        tables["mpiio"] = d2._module_table(
            MPIIO_COLUMNS, rank[first][mpi], rid[first][mpi], ints[mpi], floats[mpi]
        )
    return tables


def _lustre_value(counter: str, value: str) -> int:
    if counter.endswith("STRIPE_PATTERN"):
        if value in _LUSTRE_PATTERNS:
            return _LUSTRE_PATTERNS[value]
    if counter.endswith("_FLAGS"):
        if value == "N/A":
            return -1
        if value != "0" and all(f in _LUSTRE_FLAGS for f in value.split(",")):
            return sum(1 << _LUSTRE_FLAGS.index(f) for f in value.split(","))
    try:
        return int(value)
    except ValueError:
        raise CorruptLogError(f"non-numeric value in LUSTRE {counter}") from None


def _lustre_table(rows: pa.Table) -> pa.Table:
    """LUSTRE rows -> one row per (record, component) with pool name and OST list."""
    import pyarrow as pa

    out: dict[tuple[int, int, int], dict] = {}
    per_record: dict[tuple[int, int], dict] = {}
    for rank, rid, counter, value in zip(
        *(rows[c].to_pylist() for c in ("rank", "record_id", "counter", "value")), strict=True
    ):
        key = (int(rank), int(rid))
        m = _COMP.fullmatch(counter)
        comp, rest = (int(m.group(1)), m.group(2)) if m else (0, counter.removeprefix("LUSTRE_"))
        if not m and rest in ("NUM_COMPONENTS", "NUM_STRIPES"):
            per_record.setdefault(key, {})[f"LUSTRE_{rest}"] = int(value)
            continue
        row = out.setdefault((*key, comp), {"pool_name": None, "ost_ids": []})
        ost = _OST.fullmatch(rest)
        if ost:
            row["ost_ids"].append(int(value))
        elif rest == "POOL_NAME":
            row["pool_name"] = "" if value == "N/A" else value
        else:
            prefix = "LUSTRE_COMP_" if m else "LUSTRE_"
            row[prefix + rest] = _lustre_value(counter, value)
    records = []
    for (rank, rid, comp), row in out.items():
        extra = per_record.get((rank, rid), {})
        records.append({"rank": rank, "record_id": rid, "component": comp, **extra, **row})
    counters = list(dict.fromkeys(k for r in records for k in r))
    order = ["rank", "record_id", "component"]
    order += [c for c in counters if c not in (*order, "pool_name", "ost_ids")]
    order += ["pool_name", "ost_ids"]
    types = {"record_id": pa.uint64(), "pool_name": pa.string(), "ost_ids": pa.list_(pa.int64())}
    return pa.table(
        {c: pa.array([r.get(c) for r in records], types.get(c, pa.int64())) for c in order}
    )


def _heatmap_table(rows: pa.Table) -> pa.Table:
    """HEATMAP rows -> ``module, rank, record_id, bin, bin_width, bin_start, read/write bytes``."""
    import pyarrow as pa

    bins: dict[tuple[str, int, int], dict] = {}
    for rank, rid, counter, value, name in zip(
        *(rows[c].to_pylist() for c in ("rank", "record_id", "counter", "value", "name")),
        strict=True,
    ):
        rec = bins.setdefault(
            (name.removeprefix("heatmap:"), int(rank), int(rid)),
            {"width": 0.0, "read": {}, "write": {}},
        )
        if counter == "HEATMAP_F_BIN_WIDTH_SECONDS":
            rec["width"] = float(value)
            continue
        m = re.fullmatch(r"HEATMAP_(READ|WRITE)_BIN_(\d+)", counter)
        if not m:
            raise CorruptLogError(f"unknown HEATMAP counter {counter[:40]!r}")
        try:
            rec[m.group(1).lower()][int(m.group(2))] = int(value)
        except ValueError:
            raise CorruptLogError(f"non-numeric value in HEATMAP {counter}") from None
    out = []
    for (module, rank, rid), rec in bins.items():
        width = rec["width"]
        for b in sorted(set(rec["read"]) | set(rec["write"])):
            reads, writes = rec["read"].get(b, 0), rec["write"].get(b, 0)
            out.append((module, rank, rid, b, width, b * width, reads, writes))
    names = ("module", "rank", "record_id", "bin", "bin_width", "bin_start")
    names += ("read_bytes", "write_bytes")
    types = (pa.string(), pa.int64(), pa.uint64(), pa.int64(), pa.float64(), pa.float64())
    types += (pa.int64(), pa.int64())
    cols = dict(zip(names, zip(*out, strict=True) if out else [()] * 8, strict=True))
    return pa.table({k: pa.array(v, t) for (k, v), t in zip(cols.items(), types, strict=True)})


def _dxt_tables(lines: list[str]) -> dict[str, pa.Table]:
    """``darshan-dxt-parser`` lines (``# DXT, ...`` and segment rows) -> DXT tables."""
    import pyarrow as pa

    out: dict[str, dict[str, list]] = {}
    rid, host = None, ""
    cols = ("rank", "record_id", "hostname", "seq", "op", "offset", "length", "start", "end")
    for line in lines:
        if line.startswith("# DXT, file_id:"):
            rid = int(line.split(",")[1].split(":")[1])
        elif line.startswith("# DXT, rank:"):
            host = line.partition("hostname:")[2].strip()
        elif line[:1] == " " and line.lstrip().startswith("X_"):
            parts = line.split()
            if rid is None or len(parts) < 8 or parts[0] not in _DXT_TABLES:
                raise CorruptLogError(f"malformed DXT row {line.strip()[:60]!r}")
            t = out.setdefault(_DXT_TABLES[parts[0]], {c: [] for c in cols})
            try:
                vals = (int(parts[1]), rid, host, int(parts[3]), parts[2], int(parts[4]))
                vals += (int(parts[5]), float(parts[6]), float(parts[7]))
            except ValueError:
                raise CorruptLogError(f"malformed DXT row {line.strip()[:60]!r}") from None
            for c, v in zip(cols, vals, strict=True):
                t[c].append(v)
    types = (pa.int64(), pa.uint64(), pa.string(), pa.int64(), pa.string(), pa.int64())
    types += (pa.int64(), pa.float64(), pa.float64())
    return {
        name: pa.table({c: pa.array(d[c], t) for c, t in zip(cols, types, strict=True)})
        for name, d in out.items()
    }


def read_parser_text(path: Path) -> dict[str, pa.Table]:
    """Read one ``darshan-parser --all`` dump (plain, gzip or bzip2) into warehouse tables.

    Parameters
    ----------
    path : Path
        Text written by ``darshan-parser`` (3.x), optionally followed or
        accompanied by ``darshan-dxt-parser`` sections.

    Returns
    -------
    dict of str to pyarrow.Table
        ``jobs``, ``names``, ``mounts``, one table per module with records
        (``posix``, ``mpiio``, ``stdio``, ``lustre``, ``heatmap``, ``dxt_posix``, ...)
        and ``job_totals``.

    Raises
    ------
    CorruptLogError
        Not parser output (no ``# darshan log version:`` line), missing job
        header lines, malformed counter rows or non-numeric values.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    path = Path(path)
    text = _text_of(path)
    if not any(ln.startswith("# darshan log version:") for ln in text[:20000].splitlines()[:50]):
        raise CorruptLogError("not darshan-parser output: no '# darshan log version:' line")
    marked = re.findall(r"\n([# ][^\n]*)", "\n" + text)  # comment and DXT segment lines
    head = _header(marked)
    version = head.get("darshan log version", "").strip()
    first_row = re.search(r"\n([^#\s\n][^\n]*\t[^\n]*)", "\n" + text)
    # Darshan 1.x/2.x parser rows start with the rank: no module column
    legacy = bool(first_row and re.match(r"-?\d+\t", first_row.group(1)))

    tables: dict[str, pa.Table] = {}
    if legacy:
        n_fields = first_row.group(1).count("\t") + 1
        if n_fields not in (5, 7):
            raise CorruptLogError(f"Darshan {version} parser rows with {n_fields} fields")
        rows = _record_rows(text.encode(), _LEGACY_FIELDS[:n_fields])
        tables |= _legacy_tables(rows)
        seen = list(_MODULE_NAMES[t] for t in ("posix", "mpiio") if t in tables)
        named = rows
    else:
        rows = _record_rows(text.encode())
        module_col = rows["module"]
        seen = list(dict.fromkeys(module_col.to_pylist()))
        for module in seen:
            sub = rows.filter(pc.equal(module_col, module))
            if module == "LUSTRE":
                tables["lustre"] = _lustre_table(sub)
            elif module == "HEATMAP":
                tables["heatmap"] = _heatmap_table(sub)
            else:
                tables[table_for_module(module)] = _module_table(sub, module)
        tables |= _dxt_tables(marked)
        named = rows.filter(pc.invert(pc.equal(module_col, "HEATMAP")))

    rid = _as(named["record_id"], pa.uint64(), "record id")
    _, first = np.unique(rid, return_index=True)
    first.sort()
    take = pa.array(first)
    unknown = pa.array(["UNKNOWN"] * len(first), pa.string())
    name = named["name"].take(take)
    if legacy:  # 2.x prints the name suffix as "...<suffix>"
        name = pc.replace_substring_regex(name, r"^\.\.\.", "")
    tables["names"] = pa.table(
        {
            "record_id": pa.array(rid[first], pa.uint64()),
            "name": name,
            "mount_point": named["mount"].take(take) if "mount" in named.column_names else unknown,
            "fs_type": named["fs"].take(take) if "fs" in named.column_names else unknown,
        }
    )
    tables["mounts"] = pa.table(
        {
            "mount_point": pa.array([m for m, _ in head["mounts"]], pa.string()),
            "fs_type": pa.array([f for _, f in head["mounts"]], pa.string()),
        }
    )
    start = _number(head, "start_time", float)
    end = _number(head, "end_time", float)
    dxt = [_MODULE_NAMES[t] for t in ("dxt_posix", "dxt_mpiio") if t in tables]
    modules = list(dict.fromkeys(head["modules"] + seen + dxt))
    row = {
        "source_path": str(path),
        "source_format": "darshan-parser-text",
        "log_version": version,
        "lib_version": head["metadata"].get("lib_ver"),
        "jobid": _number(head, "jobid", int) if "jobid" in head or not legacy else 0,
        "uid": _number(head, "uid", int),
        "exe": head.get("exe", ""),
        "nprocs": _number(head, "nprocs", int),
        "start_time": start,
        "end_time": end,
        "run_time": _number(head, "run time", float) if "run time" in head else end - start,
        "modules": ",".join(modules),
        "partial_modules": ",".join(head["partial"]),
        "partial": bool(head["partial"]),
        "synthetic": False,
        "metadata": json.dumps(head["metadata"], sort_keys=True),
    }
    tables["jobs"] = pa.Table.from_pylist([{c: row[c] for c in JOB_COLUMNS}], jobs_schema())
    tables["job_totals"] = job_totals(tables)
    return tables


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
    for key, value in json.loads(job["metadata"] or "{}").items():
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
    rows = table.to_pylist()
    lines: list[str] = []
    done: set[tuple[int, int]] = set()
    for r in rows:
        rank, rid = r["rank"], r["record_id"]
        name, mnt, fs = names.get(rid, ("<unknown>", "UNKNOWN", "UNKNOWN"))
        tail = f"\t{name}\t{mnt}\t{fs}"

        def emit(counter: str, value: object, rank=rank, rid=rid, tail=tail) -> None:
            lines.append(f"LUSTRE\t{rank}\t{rid}\t{counter}\t{value}{tail}")

        comp = r["component"]
        if (rank, rid) not in done:
            done.add((rank, rid))
            for key in ("LUSTRE_NUM_COMPONENTS", "LUSTRE_NUM_STRIPES"):
                if r.get(key) is not None:
                    emit(key, r[key])
        for key, value in r.items():
            if key in ("rank", "record_id", "component", "pool_name", "ost_ids"):
                continue
            if key in ("LUSTRE_NUM_COMPONENTS", "LUSTRE_NUM_STRIPES") or value is None:
                continue
            label = key.replace("LUSTRE_COMP_", f"LUSTRE_COMP{comp}_") if comp else key
            emit(label, value)
        base = f"LUSTRE_COMP{comp}_" if comp else "LUSTRE_"
        if comp:
            emit(base + "POOL_NAME", r["pool_name"] or "N/A")
        for k, ost in enumerate(r["ost_ids"] or []):
            emit(f"{base}OST_ID_{k}", ost)
    return lines


def _heatmap_lines(table: pa.Table, exact: bool) -> list[str]:
    ffmt = _fmt_float(exact)
    df = table.to_pandas()
    lines: list[str] = []
    for (module, rank, rid), g in df.groupby(["module", "rank", "record_id"], sort=False):
        tail = f"\theatmap:{module}\tUNKNOWN\tUNKNOWN"
        head = f"HEATMAP\t{rank}\t{rid}\t"
        lines.append(f"{head}HEATMAP_F_BIN_WIDTH_SECONDS\t{ffmt(g['bin_width'].iloc[0])}{tail}")
        for op in ("read", "write"):
            for b, v in zip(g["bin"], g[f"{op}_bytes"], strict=True):
                lines.append(f"{head}HEATMAP_{op.upper()}_BIN_{b}\t{v}{tail}")
    return lines


def _dxt_lines(kind: str, table: pa.Table, names: dict, exact: bool) -> list[str]:
    tfmt = _fmt_float(exact, 4)
    df = table.to_pandas()
    lines: list[str] = []
    for (rid, rank, host), g in df.groupby(["record_id", "rank", "hostname"], sort=False):
        name, mnt, fs = names.get(rid, ("<unknown>", "UNKNOWN", "UNKNOWN"))
        ops = g["op"].value_counts()
        lines += [
            f"\n# DXT, file_id: {rid}, file_name: {name}",
            f"# DXT, rank: {rank}, hostname: {host}",
            f"# DXT, write_count: {ops.get('write', 0)}, read_count: {ops.get('read', 0)}",
            f"# DXT, mnt_pt: {mnt}, fs_type: {fs}",
            "# Module    Rank  Wt/Rd  Segment          Offset       Length    Start(s)      End(s)",
        ]
        for r in g.itertuples(index=False):
            lines.append(
                f" {kind:>7}{r.rank:8d}{r.op:>7}{r.seq:9d}{r.offset:16d}{r.length:16d}"
                f" {tfmt(r.start):>11} {tfmt(r.end):>11}"
            )
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
    for module in modules:
        table = tables.get(table_for_module(module))
        if module.startswith("DXT_"):
            continue
        out.write("\n# *******************************************************\n")
        out.write(f"# {module} module data\n")
        out.write("# *******************************************************\n")
        if module in partial:
            out.write(f"\n# *WARNING*: The {module} module contains incomplete data!\n")
        if table is None or table.num_rows == 0:
            continue
        out.write("\n#<module>\t<rank>\t<record id>\t<counter>\t<value>")
        out.write("\t<file name>\t<mount pt>\t<fs type>\n")
        if module == "LUSTRE":
            lines = _lustre_lines(table, names)
        elif module == "HEATMAP":
            lines = _heatmap_lines(table, exact)
        else:
            lines = _counter_lines(module, table, names, exact)
        out.write("\n".join(lines) + "\n")
    for kind, tname in _DXT_TABLES.items():
        if tname in tables and tables[tname].num_rows:
            out.write("\n".join(_dxt_lines(kind, tables[tname], names, exact)) + "\n")
    totals = tables.get("job_totals")
    if totals is not None and totals.num_rows == 1:
        out.write("\n")
        for key, value in totals.to_pylist()[0].items():
            if key.startswith("total_"):
                out.write(f"{key}: {value}\n")
