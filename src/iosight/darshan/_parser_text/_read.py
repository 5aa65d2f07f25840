"""Read ``darshan-parser --all`` text dumps (Darshan 3.x output format).

Facilities that archive parser output instead of binary logs can ingest it with
:func:`read_parser_text`; :func:`write_parser_text` (``_write.py``) renders
warehouse tables back in the same format. 1.x/2.x dumps fill the same 2.x record
interface as the binary 2.x reader (:func:`~iosight.darshan._darshan2.cp_record_tables`).
This module is the entry point; each part of the dump has its own module beside it:
``_header`` (``# `` lines), ``_rows`` (counter records), ``_lustre``, ``_heatmap``,
``_dxt`` and ``_totals`` (``total_*``/``--perf`` lines).
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

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import CorruptLogError, read_naming_file
from iosight.darshan._darshan2 import job_totals
from iosight.darshan._parser_text._dxt import _dxt_tables
from iosight.darshan._parser_text._header import _header, _number, _text_of
from iosight.darshan._parser_text._heatmap import _heatmap_table
from iosight.darshan._parser_text._lustre import _lustre_table
from iosight.darshan._parser_text._rows import (
    LEGACY_FIELDS,
    _as,
    _legacy_tables,
    _module_table,
    _record_rows,
)
from iosight.darshan._parser_text._totals import _printed_totals
from iosight.darshan._tables import MODULE_TABLES, LogTables, jobs_schema, table_for_module

if TYPE_CHECKING:
    import pyarrow as pa

_MODULE_NAMES = {table: module for module, table in MODULE_TABLES.items()}


def read_parser_text(path: Path) -> LogTables:
    """Read one ``darshan-parser --all`` dump (plain, gzip or bzip2) into warehouse tables.

    Parameters
    ----------
    path : Path
        Text written by ``darshan-parser`` (3.x), optionally followed or
        accompanied by ``darshan-dxt-parser`` sections.

    Returns
    -------
    LogTables
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


def _read(path: Path) -> LogTables:
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
        rows = _record_rows(text.encode(), LEGACY_FIELDS[:n_fields])
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
            elif module == "HEATMAP":  # no table when no bin has bytes, as the others read it
                if (heat := _heatmap_table(sub)).num_rows:
                    tables["heatmap"] = heat
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
    tables["jobs"] = pa.Table.from_pylist([row], jobs_schema())  # known_at: null, ingest sets it
    tables["job_totals"] = _printed_totals(text, head["perf"]) or job_totals(tables)
    # no counters: no job_totals
    return LogTables({k: v for k, v in tables.items() if v.num_columns})


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
