"""Read published job-total tables: one row per job, ``darshan-parser --total`` columns.

Facilities publish Darshan data sets in this form (e.g. the OLCF Summit 2021
archive: ``jobid, start_time, end_time, nprocs, runtime, exe, uid,
total_POSIX_BYTES_WRITTEN, ...``). Each row becomes one ``jobs`` row and one
``job_totals`` row; a ``_row`` column ties them so ingest can key each job.

Counters are numbers whatever the file holds: a cell that is not one (``xyz``,
``N/A``) is stored as null and its job's ``metadata`` gains an ``iosight_warning=``
line naming the columns, so one bad cell neither fails the table nor turns a
``total_*`` column into text (which would break every sum over the warehouse).
A ``known_at`` column (when each job became known, e.g. a replay's landing times) is
kept as the jobs' ``known_at``, read like the other times; without it ingest sets it.
Identifiers (``jobid``, ``uid``) that are not integers (anonymised data sets hash
them) become stable int64 hashes, each on its own; ``nprocs`` is a count, so a
missing or unusable one is -1, the ``jobs`` table's "not known" (with a warning
line when the cell held something else).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from iosight._errors import CorruptLogError
from iosight.darshan._tables import LogTables, jobs_schema, path_text, with_warning

if TYPE_CHECKING:
    import pandas as pd

# accepted spellings of the job columns, first match wins
_ALIASES = {
    "jobid": ("jobid", "job_id", "JOBID"),
    "uid": ("uid", "user", "UID"),
    "exe": ("exe", "app", "executable", "EXE"),
    "nprocs": ("nprocs", "NPROCS", "num_procs"),
    "start_time": ("start_time", "START_TIME", "start"),
    "end_time": ("end_time", "END_TIME", "end"),
    "run_time": ("runtime", "run_time", "RUN_TIME"),
    "log_version": ("darshan_log_version", "log_version"),
    "known_at": ("known_at",),
}


def is_job_totals_table(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith((".csv", ".csv.gz", ".parquet"))


def read_job_totals(path: str | Path) -> LogTables:
    """Read a CSV or Parquet job-total table into ``jobs`` and ``job_totals`` rows."""
    import pandas as pd

    path = Path(path)
    try:
        if path.name.lower().endswith(".parquet"):
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path, low_memory=False)
    except Exception as err:  # noqa: BLE001 - any parse failure is a bad source
        raise CorruptLogError(f"{path}: not a readable CSV/Parquet table ({err})") from None
    df = df.reset_index(drop=True)
    totals = [c for c in df.columns if str(c).startswith("total_")]
    if not totals:
        raise CorruptLogError(f"{path}: no total_<COUNTER> columns; not a job-total table")
    col = {k: next((a for a in names if a in df.columns), None) for k, names in _ALIASES.items()}
    missing = [k for k in ("jobid", "start_time", "end_time") if col[k] is None]
    if missing:
        raise CorruptLogError(f"{path}: job-total table lacks column(s) {', '.join(missing)}")
    n = len(df)

    def get(key: str, default, dtype):
        return df[col[key]].to_numpy(dtype) if col[key] else np.full(n, default, dtype)

    counters, warnings = _numeric_totals(df, totals)
    start = _times(df[col["start_time"]], warnings, "start_time")
    end = _times(df[col["end_time"]], warnings, "end_time")
    known = (
        _times(df[col["known_at"]], warnings, "known_at") if col["known_at"] else np.full(n, np.nan)
    )
    run = _numbers(df[col["run_time"]]) if col["run_time"] else np.full(n, np.nan)
    run = np.where(np.isnan(run), end - start, run)
    nprocs = _counts(df[col["nprocs"]], warnings, "nprocs") if col["nprocs"] else np.full(n, -1)
    modules = _modules_per_row(counters, totals)
    jobs = pa.table(
        {
            "source_path": pa.array([path_text(path)] * n),
            "source_format": pa.array(["job-totals"] * n),
            "log_version": pa.array(get("log_version", "", object).astype(str)),
            "lib_version": pa.array([""] * n),
            "jobid": pa.array(_ids(df[col["jobid"]])),
            "uid": pa.array(_ids(df[col["uid"]]) if col["uid"] else np.full(n, -1)),
            "exe": pa.array(get("exe", "", object).astype(str)),
            "nprocs": pa.array(nprocs),
            # a time not known is null, never NaN (DuckDB's "is not null" lets NaN through)
            "start_time": pa.array(start, mask=np.isnan(start)),
            "end_time": pa.array(end, mask=np.isnan(end)),
            "run_time": pa.array(run, mask=np.isnan(run)),
            "modules": pa.array(modules),
            "partial_modules": pa.array([""] * n),
            "partial": pa.array(np.zeros(n, bool)),
            "synthetic": pa.array(np.zeros(n, bool)),
            "metadata": pa.array(warnings),
            # when the table says when each job became known; else ingest sets it
            "known_at": pa.array(known, mask=np.isnan(known)),
        },
        schema=jobs_schema(),
    ).append_column("_row", pa.array(np.arange(n, dtype=np.int64)))
    job_totals = pa.Table.from_pandas(counters, preserve_index=False)
    job_totals = job_totals.append_column("_row", pa.array(np.arange(n, dtype=np.int64)))
    return LogTables({"jobs": jobs, "job_totals": job_totals})


def _numeric_totals(df, totals: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The ``total_*`` columns as numbers (a cell that is not one: null) and, per row,
    an ``iosight_warning=`` line naming the columns whose cell was not a number."""
    import pandas as pd

    columns, bad = {}, {}
    for c in totals:
        cells = df[c]
        if pd.api.types.is_numeric_dtype(cells):
            columns[c] = cells
            continue
        columns[c] = pd.to_numeric(cells, errors="coerce")
        wrong = cells.notna().to_numpy() & columns[c].isna().to_numpy()
        for i in np.flatnonzero(wrong):
            bad.setdefault(int(i), []).append(c)
    warnings = [""] * len(df)
    for i, cols in bad.items():
        _warn(
            warnings,
            i,
            f"{len(cols)} job-total cell(s) not a number, stored as null: " + ", ".join(cols),
        )
    return pd.DataFrame(columns), warnings


def _times(series, warnings: list[str], name: str) -> np.ndarray:
    """Seconds since the epoch (UTC) per row: numbers as they are, timestamps and text
    dates (ISO 8601; UTC unless they carry a zone) converted; NaN where the cell is empty
    or unreadable, with a warning line when it held something."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(series):
        stamps = pd.to_datetime(series, utc=True)
        return _epoch(stamps)
    out = _numbers(series)
    text = np.isnan(out) & series.notna().to_numpy()
    if text.any():
        stamps = pd.to_datetime(series[text].astype(str), utc=True, errors="coerce",
                                format="ISO8601")  # fmt: skip
        out[text] = _epoch(stamps)
    out[~np.isfinite(out)] = np.nan
    for i in np.flatnonzero(np.isnan(out) & series.notna().to_numpy()):
        _warn(warnings, int(i), f"{name} '{series.iloc[i]}' is not a time, stored as null")
    return out


def _epoch(stamps) -> np.ndarray:
    """UTC timestamps (a pandas Series, NaT allowed) as float seconds since the epoch."""
    import pandas as pd

    secs = (stamps - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    return secs.to_numpy(np.float64, na_value=np.nan)


def _numbers(series) -> np.ndarray:
    """``series`` as float64 (a writable copy), NaN where a cell is not a number."""
    import pandas as pd

    num = pd.to_numeric(series, errors="coerce")
    return np.array(num.to_numpy(np.float64, na_value=np.nan), np.float64, copy=True)


def _warn(warnings: list[str], row: int, text: str) -> None:
    warnings[row] = with_warning(warnings[row], text)


def _integers(series) -> tuple[np.ndarray, np.ndarray]:
    """``series`` as int64 and where that is exact (an integral number within int64)."""
    import pandas as pd

    num = pd.to_numeric(series, errors="coerce", dtype_backend="numpy_nullable")
    if pd.api.types.is_integer_dtype(num):  # exact, also beyond 2**53
        return np.array(num.fillna(0), np.int64), np.array(num.notna(), bool)
    num = num.to_numpy(np.float64, na_value=np.nan)
    ok = np.isfinite(num) & (num == np.floor(num)) & (np.abs(num) < 2.0**63)
    return np.where(ok, num, 0).astype(np.int64), ok


def _ids(series) -> np.ndarray:
    """Integer ids as they are; any other id (anonymised data sets hash them) a stable int64
    hash of its text, each value on its own; a missing one -1."""
    import pandas as pd

    out, ok = _integers(series)
    text = ~ok & series.notna().to_numpy()
    out[~ok] = -1
    if text.any():
        hashed = pd.util.hash_pandas_object(series[text].astype(str), index=False).to_numpy()
        out[text] = (hashed >> np.uint64(1)).astype(np.int64)
    return out


def _counts(series, warnings: list[str], name: str) -> np.ndarray:
    """A count per row (processes: at least 1); a missing or unusable cell is -1, and a
    cell that held something else gets a warning line."""
    out, ok = _integers(series)
    ok &= out >= 1
    out[~ok] = -1
    for i in np.flatnonzero(~ok & series.notna().to_numpy()):
        _warn(warnings, int(i), f"{name} '{series.iloc[i]}' is not a count, stored as -1")
    return out


def _modules_per_row(df, totals: list[str]) -> list[str]:
    """Modules with any non-null counter in the row, named as Darshan does."""
    mods: dict[str, list[str]] = {}
    for c in totals:
        key = c[len("total_") :].split("_")[0]
        if key == "PNETCDF":
            key = "_".join(c[len("total_") :].split("_")[:2])
        mods.setdefault(key, []).append(c)
    present = {m: df[cols].notna().any(axis=1).to_numpy() for m, cols in mods.items()}
    names = {"MPIIO": "MPI-IO", "BGQ": "BG/Q"}
    out = []
    for i in range(len(df)):
        out.append(",".join(names.get(m, m) for m, has in present.items() if has[i]))
    return out
