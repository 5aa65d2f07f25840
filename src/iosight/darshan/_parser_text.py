"""Read ``darshan-parser --all`` text dumps (Darshan 3.x output format).

Facilities that archive parser output instead of binary logs can ingest it with
:func:`read_parser_text`; :func:`write_parser_text` (``_parser_text_write.py``) renders
warehouse tables back in the same format. 1.x/2.x dumps fill the same 2.x record
interface as the binary 2.x reader (:func:`~iosight.darshan._darshan2.cp_record_tables`).
The format is that of ``darshan-util/darshan-parser.c`` and
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
- per module ``total_<COUNTER>: <value>`` lines (``--total``) and ``# performance``
  comments (``--perf``: ``total_bytes``, ``agg_perf_by_slowest``,
  ``agg_time_by_slowest``); other comments (``--file``, descriptions) are ignored;
- Darshan 1.x/2.x dumps, whose rows have no module column
  (``<rank>\\t<file>\\t<CP_counter>\\t<value>\\t...<suffix>[\\t<mount>\\t<fs>]``).

iosight's readings: ``job_totals`` is taken from the ``total_*`` and
``--perf`` lines when the dump has them (they are darshan's own reduction, the
same as :func:`read_pydarshan` gets from libdarshan-util's accumulator) and
recomputed from the records otherwise (:func:`job_totals`). darshan-parser
prints fcounters with six decimals, DXT times with four and job times in whole
seconds, so a dump holds less precision than the binary log;
``write_parser_text(..., exact=True)`` writes full precision instead (still
readable by :func:`read_parser_text`). Lustre components are numbered from 0
(darshan-parser prints ``COMP1`` for component 0), as :func:`read_pydarshan`
numbers them. 1.x/2.x dumps map ``CP_*`` counters as :func:`read_darshan2`
does.
"""

from __future__ import annotations

import bz2
import gzip
import io
import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import CorruptLogError, read_naming_file
from iosight.darshan._darshan2 import cp_record_tables, job_totals
from iosight.darshan._darshan2_counters import (
    CP_COUNTERS,
    CP_F_COUNTERS,
)
from iosight.darshan._tables import JOB_COLUMNS, MODULE_TABLES, jobs_schema, table_for_module

if TYPE_CHECKING:
    import pyarrow as pa

_ROW_FIELDS = ("module", "rank", "record_id", "counter", "value", "name", "mount", "fs")
_LEGACY_FIELDS = _ROW_FIELDS[1:]
_DXT_TABLES = {"X_POSIX": "dxt_posix", "X_MPIIO": "dxt_mpiio"}
_MODULE_NAMES = {table: module for module, table in MODULE_TABLES.items()}
_LUSTRE_PATTERNS = {"raid0": 0, "mdt": 2, "raid0,overstriped": 4, "foreign": 8, "N/A": -1}
_LUSTRE_FLAGS = (
    "stale prefrd prefwr offline init nosync extension parity compress partial nocompr neg"
).split()
_COMP = re.compile(r"LUSTRE_COMP(\d+)_(.+)")
_OST = re.compile(r"OST_ID_(\d+)")
_PERF = re.compile(r"(total_bytes|agg_perf_by_slowest|agg_time_by_slowest): (\S+)")
_PERF_KEYS = ("agg_perf_by_slowest", "agg_time_by_slowest", "total_bytes")  # read_pydarshan's order
_TOTAL = re.compile(r"\n(total_[A-Za-z0-9_]+): ([^\n]*)")


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
    return raw.decode("utf-8", "replace").replace("\r\n", "\n")


def _header(lines: list[str]) -> dict:
    """Job fields, metadata, mounts, module sections and partial flags from ``# `` lines."""
    head: dict = {"metadata": {}, "mounts": [], "modules": [], "partial": [], "perf": {}}
    head["dxt_names"] = {}
    module = ""
    for line in lines:
        if not line.startswith("# "):
            continue
        body = line[2:]
        perf = _PERF.match(body)
        if perf and module:
            tag = module.replace("-", "").replace("/", "")
            head["perf"].setdefault(tag, {})[perf.group(1)] = perf.group(2)
            continue
        if body.startswith("DXT, file_id:"):
            rid, _, name = body[len("DXT, file_id:") :].partition(", file_name: ")
            head["dxt_names"].setdefault(int(rid), name)
            continue
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
            module = m.group(1)
            head["modules"].append(module)
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
        file_list = text.split("\t", 1)[0].isdigit()  # --file-list rows: record id first
        if text[:1] not in ("#", " ", "") and "\t" in text and not file_list:
            if len(fields) == 8:
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
    tables = cp_record_tables(rank[first], rid[first], ints, floats)
    for name, values in extra.items():
        tables["posix"] = tables["posix"].append_column(name, pa.array(values, pa.int64()))
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


_LUSTRE_COMP_COUNTERS = tuple(
    f"LUSTRE_COMP_{c}"
    for c in "STRIPE_SIZE STRIPE_COUNT STRIPE_PATTERN FLAGS EXT_START EXT_END MIRROR_ID".split()
)
# a pre-3.4 record read as one component, as libdarshan-util 3.5 up-converts it
_LUSTRE_V1 = {"STRIPE_SIZE": "LUSTRE_COMP_STRIPE_SIZE", "STRIPE_WIDTH": "LUSTRE_COMP_STRIPE_COUNT"}
_LUSTRE_V1_DEFAULTS = {
    "LUSTRE_COMP_STRIPE_PATTERN": -1,
    "LUSTRE_COMP_FLAGS": -1,
    "LUSTRE_COMP_EXT_START": 0,
    "LUSTRE_COMP_EXT_END": -1,
    "LUSTRE_COMP_MIRROR_ID": -1,
}


def _lustre_table(rows: pa.Table) -> pa.Table:
    """LUSTRE rows -> one row per (record, component) with pool name and OST list.

    Components are numbered from 0 (darshan-parser prints ``COMP<n>`` from 1).
    Pre-3.4 rows (``LUSTRE_STRIPE_SIZE``, ``LUSTRE_STRIPE_WIDTH``,
    ``LUSTRE_OST_ID_<k>``) become component 0 with the values libdarshan-util
    3.5 gives such records; ``LUSTRE_OSTS``, ``LUSTRE_MDTS`` and
    ``LUSTRE_STRIPE_OFFSET`` have no place there and are dropped.
    """
    import pyarrow as pa

    out: dict[tuple[int, int, int], dict] = {}
    for rank, rid, counter, value in zip(
        *(rows[c].to_pylist() for c in ("rank", "record_id", "counter", "value")), strict=True
    ):
        m = _COMP.fullmatch(counter)
        comp, rest = (int(m.group(1)) - 1, m.group(2)) if m else (0, counter[len("LUSTRE_") :])
        if rest in ("NUM_COMPONENTS", "NUM_STRIPES", "OSTS", "MDTS", "STRIPE_OFFSET"):
            continue
        row = out.get((int(rank), int(rid), comp))
        if row is None:
            row = out[(int(rank), int(rid), comp)] = {"pool_name": "", "ost_ids": []}
            if not m:
                row |= _LUSTRE_V1_DEFAULTS
        if _OST.fullmatch(rest):
            row["ost_ids"].append(_lustre_value(counter, value))
        elif rest == "POOL_NAME":
            row["pool_name"] = "" if value == "N/A" else value
        elif m:
            row["LUSTRE_COMP_" + rest] = _lustre_value(counter, value)
        elif rest in _LUSTRE_V1:
            row[_LUSTRE_V1[rest]] = _lustre_value(counter, value)
        else:
            raise CorruptLogError(f"unknown LUSTRE counter {counter[:40]!r}")
    keys = list(out)
    cols: dict[str, pa.Array] = {
        "rank": pa.array([k[0] for k in keys], pa.int64()),
        "record_id": pa.array([k[1] for k in keys], pa.uint64()),
        "component": pa.array([k[2] for k in keys], pa.int64()),
    }
    for c in _LUSTRE_COMP_COUNTERS:
        cols[c] = pa.array([out[k].get(c, 0) for k in keys], pa.int64())
    cols["pool_name"] = pa.array([out[k]["pool_name"] for k in keys], pa.string())
    cols["ost_ids"] = pa.array([out[k]["ost_ids"] for k in keys], pa.list_(pa.int64()))
    return pa.table(cols)


def _heatmap_table(rows: pa.Table) -> pa.Table:
    """HEATMAP rows -> ``module, rank, record_id, bin, bin_width, bin_start, read/write bytes``.

    A record prints ``HEATMAP_F_BIN_WIDTH_SECONDS`` then ``HEATMAP_READ_BIN_<k>``
    and ``HEATMAP_WRITE_BIN_<k>`` for every bin; its name is ``heatmap:<MODULE>``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    rank = _as(rows["rank"], pa.int64(), "HEATMAP rank")
    rid = _as(rows["record_id"], pa.uint64(), "HEATMAP record id")
    rec, first = _records(rank, rid)
    counter = rows["counter"]
    is_width = pc.equal(counter, "HEATMAP_F_BIN_WIDTH_SECONDS").to_numpy(zero_copy_only=False)
    ops = {}
    for op in ("READ", "WRITE"):
        prefix = f"HEATMAP_{op}_BIN_"
        sel = np.flatnonzero(pc.starts_with(counter, prefix).to_numpy(zero_copy_only=False))
        names = pc.utf8_slice_codeunits(counter.take(pa.array(sel)), len(prefix))
        ops[op] = (sel, _as(names, pa.int64(), "HEATMAP bin"))
    n_known = is_width.sum() + sum(len(sel) for sel, _ in ops.values())
    if n_known != len(counter):
        raise CorruptLogError("unknown HEATMAP counter in parser output")
    n = len(first)
    width = np.zeros(n)
    wsel = np.flatnonzero(is_width)
    width[rec[wsel]] = _as(rows["value"].take(pa.array(wsel)), pa.float64(), "HEATMAP width")
    nbins = np.zeros(n, np.int64)
    for sel, bins in ops.values():
        np.maximum.at(nbins, rec[sel], bins + 1)
    start = np.cumsum(nbins) - nbins
    out = {}
    for op, (sel, bins) in ops.items():
        values = np.zeros(nbins.sum(), np.int64)
        values[start[rec[sel]] + bins] = _as(rows["value"].take(pa.array(sel)), pa.int64(), op)
        out[op] = values
    rec_of = np.repeat(np.arange(n), nbins)
    bin_no = np.arange(nbins.sum()) - np.repeat(start, nbins)
    module = pc.replace_substring_regex(rows["name"].take(pa.array(first)), "^heatmap:", "")
    return pa.table(
        {
            "module": module.take(pa.array(rec_of)),
            "rank": pa.array(rank[first][rec_of], pa.int64()),
            "record_id": pa.array(rid[first][rec_of], pa.uint64()),
            "bin": pa.array(bin_no, pa.int64()),
            "bin_width": pa.array(width[rec_of], pa.float64()),
            "bin_start": pa.array(bin_no * width[rec_of], pa.float64()),
            "read_bytes": pa.array(out["READ"], pa.int64()),
            "write_bytes": pa.array(out["WRITE"], pa.int64()),
        }
    )


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
    return read_naming_file(Path(path), _read)


def _read(path: Path) -> dict[str, pa.Table]:
    import pyarrow as pa
    import pyarrow.compute as pc

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
    tables["names"] = _names_table(rows, head["dxt_names"], legacy)
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
        "source_format": "parser-text",
        "log_version": version,
        "lib_version": head["metadata"].get("lib_ver", ""),
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
        "metadata": "\n".join(f"{k}={v}" for k, v in head["metadata"].items()),
    }
    tables["jobs"] = pa.Table.from_pylist([{c: row[c] for c in JOB_COLUMNS}], jobs_schema())
    tables["job_totals"] = _printed_totals(text, head["perf"]) or job_totals(tables)
    return {k: v for k, v in tables.items() if v.num_columns}  # no counters: no job_totals


def _names_table(rows: pa.Table, dxt_names: dict[int, str], legacy: bool) -> pa.Table:
    """Record id -> name, mount point, fs type, from the counter rows and DXT headers."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rid = _as(rows["record_id"], pa.uint64(), "record id")
    _, first = np.unique(rid, return_index=True)
    first.sort()
    take = pa.array(first)
    name = rows["name"].take(take)
    if legacy:  # 2.x prints the name suffix as "...<suffix>"
        name = pc.replace_substring_regex(name, r"^\.\.\.", "")
    has_mounts = "mount" in rows.column_names  # 1.x dumps print only the name suffix
    cols = {
        "record_id": rid[first].tolist(),
        "name": name.to_pylist(),
        "mount_point": rows["mount"].take(take).to_pylist() if has_mounts else [],
        "fs_type": rows["fs"].take(take).to_pylist() if has_mounts else [],
    }
    if not has_mounts:
        cols["mount_point"], cols["fs_type"] = ["UNKNOWN"] * len(first), ["UNKNOWN"] * len(first)
    known = set(cols["record_id"])
    for r, n in dxt_names.items():  # DXT-only records
        if r not in known:
            for key, value in zip(cols, (r, n, "UNKNOWN", "UNKNOWN"), strict=True):
                cols[key].append(value)
    types = (pa.uint64(), pa.string(), pa.string(), pa.string())
    return pa.table({k: pa.array(v, t) for (k, v), t in zip(cols.items(), types, strict=True)})


def _printed_totals(text: str, perf: dict[str, dict[str, str]]) -> pa.Table | None:
    """``job_totals`` from the dump's own ``total_*`` and ``--perf`` lines, if it has them.

    These are darshan-parser's own reduction (libdarshan-util's accumulator), so
    they are preferred over recomputing. Integer counters stay int64; ``*_F_*``
    counters and ``<MOD>_agg_perf_by_slowest``/``<MOD>_agg_time_by_slowest`` are
    float64, ``<MOD>_total_bytes`` int64; each module's perf values follow its
    ``total_*`` columns, as :func:`read_pydarshan` orders them.
    """
    import pyarrow as pa

    printed = _TOTAL.findall(text)
    if not printed:
        return None

    def tag_of(key: str) -> str | None:
        return next((t for t in perf if key.startswith(f"total_{t}_")), None)

    items: list[tuple[str, str]] = []
    for i, (key, value) in enumerate(printed):
        items.append((key, value))
        tag = tag_of(key)
        if tag and (i + 1 == len(printed) or tag_of(printed[i + 1][0]) != tag):
            items += [(f"{tag}_{k}", perf[tag][k]) for k in _PERF_KEYS if k in perf[tag]]
    cols: dict[str, pa.Array] = {}
    for key, value in items:
        is_float = "_F_" in key or "_agg_" in key
        try:
            number = float(value) if is_float else int(value)
        except ValueError:
            raise CorruptLogError(f"non-numeric value in {key}") from None
        cols[key] = pa.array([number], pa.float64() if is_float else pa.int64())
    return pa.table(cols)
