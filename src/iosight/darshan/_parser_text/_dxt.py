"""DXT sections of a dump, as ``darshan-dxt-parser`` prints them -> ``dxt_posix`` and
``dxt_mpiio`` tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iosight._errors import CorruptLogError

if TYPE_CHECKING:
    import pyarrow as pa

_DXT_TABLES = {"X_POSIX": "dxt_posix", "X_MPIIO": "dxt_mpiio"}


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
