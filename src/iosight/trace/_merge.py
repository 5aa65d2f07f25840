"""Merging per-process logs into one job log, reducing shared-file records (§III-A, §III-C).

Darshan reduces, at shutdown, the records of files that every rank opened into one
record of rank -1 (``posix_record_reduction_op`` / ``stdio_record_reduction_op``, and
``hdf5_file_record_reduction_op`` / ``hdf5_dataset_record_reduction_op`` for H5F/H5D):
counts and bytes and times are summed, maxima kept, first timestamps are the earliest
non-zero ones, last timestamps the latest, the four common access sizes and strides
are recombined, and the fastest/slowest rank (by read+write+meta time) and the
variances of time and bytes across ranks are filled in. ``darshan-merge`` does the
same for per-process logs; :func:`merge` is iosight's version of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from iosight._errors import IosightError
from iosight.trace._counters import merge_top_four
from iosight.trace._extra import align_heatmaps, shift_dxt
from iosight.trace._format import (
    COUNTER_NAMES,
    H5D_MAX_NDIMS,
    Job,
    LogContent,
    log_name,
    read_log,
    write_log,
)


def _idx(module: str, names: str, f: bool = False) -> list[int]:
    table = COUNTER_NAMES[module][1 if f else 0]
    prefix = f"{module}_F_" if f else f"{module}_"
    return [table.index(prefix + n) for n in names.split()]


def _span(module: str, first: str, last: str, f: bool = False) -> list[int]:
    a, b = _idx(module, f"{first} {last}", f)
    return list(range(a, b + 1))


_SPEC = {
    "POSIX": {
        "sum": _span("POSIX", "OPENS", "RENAME_TARGETS")
        + _span("POSIX", "BYTES_READ", "BYTES_WRITTEN")
        + _span("POSIX", "CONSEC_READS", "MEM_NOT_ALIGNED")
        + _idx("POSIX", "FILE_NOT_ALIGNED")
        + _span("POSIX", "SIZE_READ_0_100", "SIZE_WRITE_1G_PLUS"),
        "max": _span("POSIX", "MAX_BYTE_READ", "MAX_BYTE_WRITTEN"),
        "fsum": _span("POSIX", "READ_TIME", "META_TIME", True),
        "fmin": _span("POSIX", "OPEN_START_TIMESTAMP", "CLOSE_START_TIMESTAMP", True),
        "fmax": _span("POSIX", "OPEN_END_TIMESTAMP", "CLOSE_END_TIMESTAMP", True),
        "maxtime": [
            (*_idx("POSIX", "MAX_READ_TIME", True), *_idx("POSIX", "MAX_READ_TIME_SIZE")),
            (*_idx("POSIX", "MAX_WRITE_TIME", True), *_idx("POSIX", "MAX_WRITE_TIME_SIZE")),
        ],
        "common": [
            _idx("POSIX", "STRIDE1_STRIDE")[0],
            _idx("POSIX", "ACCESS1_ACCESS")[0],
        ],
        "bytes": _idx("POSIX", "BYTES_READ BYTES_WRITTEN"),
    },
    # hdf5_file_record_reduction_op / hdf5_dataset_record_reduction_op of darshan-hdf5.c;
    # the 0/1 flags (USE_MPIIO, USE_MPIIO_COLLECTIVE, USE_DEPRECATED) are set if any rank set
    # them, i.e. their maximum; dataspace, datatype and chunk sizes are the first rank's
    "H5F": {
        "sum": _span("H5F", "OPENS", "FLUSHES"),
        "max": _idx("H5F", "USE_MPIIO"),
        "fsum": _idx("H5F", "META_TIME", True),
        "fmin": _span("H5F", "OPEN_START_TIMESTAMP", "CLOSE_START_TIMESTAMP", True),
        "fmax": _span("H5F", "OPEN_END_TIMESTAMP", "CLOSE_END_TIMESTAMP", True),
        "maxtime": [],
        "common": [],
        "bytes": [],
    },
    "H5D": {
        "sum": _span("H5D", "OPENS", "POINT_SELECTS")
        + _span("H5D", "SIZE_READ_AGG_0_100", "SIZE_WRITE_AGG_1G_PLUS"),
        "max": _idx("H5D", "USE_MPIIO_COLLECTIVE USE_DEPRECATED"),
        "fsum": _span("H5D", "READ_TIME", "META_TIME", True),
        "fmin": _span("H5D", "OPEN_START_TIMESTAMP", "CLOSE_START_TIMESTAMP", True),
        "fmax": _span("H5D", "OPEN_END_TIMESTAMP", "CLOSE_END_TIMESTAMP", True),
        "maxtime": [
            (*_idx("H5D", "MAX_READ_TIME", True), *_idx("H5D", "MAX_READ_TIME_SIZE")),
            (*_idx("H5D", "MAX_WRITE_TIME", True), *_idx("H5D", "MAX_WRITE_TIME_SIZE")),
        ],
        "common": [],
        # (first value, first count, values per entry): access size, 5 lengths, 5 strides
        "vectors": [(*_idx("H5D", "ACCESS1_ACCESS ACCESS1_COUNT"), 1 + 2 * H5D_MAX_NDIMS)],
        "bytes": _idx("H5D", "BYTES_READ BYTES_WRITTEN"),
    },
    "STDIO": {
        "sum": _span("STDIO", "OPENS", "BYTES_READ"),
        "max": _span("STDIO", "MAX_BYTE_READ", "MAX_BYTE_WRITTEN"),
        "fsum": _span("STDIO", "META_TIME", "READ_TIME", True),
        "fmin": _span("STDIO", "OPEN_START_TIMESTAMP", "READ_START_TIMESTAMP", True),
        "fmax": _span("STDIO", "OPEN_END_TIMESTAMP", "READ_END_TIMESTAMP", True),
        "maxtime": [],
        "common": [],
        "bytes": _idx("STDIO", "BYTES_READ BYTES_WRITTEN"),
    },
}


def reduce_shared(module: str, rows: np.ndarray) -> np.ndarray:
    """One rank -1 record from the records of one file on several ranks (Darshan's rules)."""
    spec = _SPEC[module]
    ranks = rows["rank"]
    c, f = rows["counters"], rows["fcounters"]
    out = rows[:1].copy()
    oc, of = out["counters"][0], out["fcounters"][0]  # non-summed fields: first rank's
    s = spec["sum"]
    oc[s] = c[:, s].sum(axis=0)
    oc[s] = np.where(oc[s] < 0, -1, oc[s])
    oc[spec["max"]] = c[:, spec["max"]].max(axis=0)
    of[spec["fsum"]] = f[:, spec["fsum"]].sum(axis=0)
    fm = f[:, spec["fmin"]]
    of[spec["fmin"]] = np.where(fm > 0, fm, np.inf).min(axis=0)
    of[spec["fmin"]] = np.where(np.isinf(of[spec["fmin"]]), 0.0, of[spec["fmin"]])
    of[spec["fmax"]] = f[:, spec["fmax"]].max(axis=0)
    for fi, ci in spec["maxtime"]:
        k = int(np.argmax(f[:, fi]))
        of[fi], oc[ci] = f[k, fi], c[k, ci]
    for base in spec["common"]:
        vals, cnts = [0] * 4, [0] * 4
        for r in range(len(rows)):
            vals, cnts = merge_top_four(
                vals, cnts, c[r, base : base + 4].tolist(), c[r, base + 4 : base + 8].tolist()
            )
        oc[base : base + 4], oc[base + 4 : base + 8] = vals, cnts
    for base, cbase, k in spec.get("vectors", []):
        vecs = c[:, base : base + 4 * k].reshape(len(rows), 4, k)
        best = top_vectors(vecs.tolist(), c[:, cbase : cbase + 4].tolist())
        for e, (vec, cnt) in enumerate(best):
            oc[base + e * k : base + (e + 1) * k], oc[cbase + e] = vec, cnt
    names, fnames = COUNTER_NAMES[module]
    if f"{module}_FASTEST_RANK" not in names:  # H5F keeps no per-rank extremes
        out["rank"] = -1
        return out
    # fastest / slowest rank by total I/O time; variance of time and bytes across ranks
    t = f[:, spec["fsum"]].sum(axis=1)
    b = c[:, spec["bytes"]].sum(axis=1)
    fast, slow = int(np.argmin(t)), int(np.argmax(t))
    for tag, k in (("FASTEST", fast), ("SLOWEST", slow)):
        oc[names.index(f"{module}_{tag}_RANK")] = ranks[k]
        oc[names.index(f"{module}_{tag}_RANK_BYTES")] = b[k]
        of[fnames.index(f"{module}_F_{tag}_RANK_TIME")] = t[k]
    of[fnames.index(f"{module}_F_VARIANCE_RANK_TIME")] = float(np.var(t))
    of[fnames.index(f"{module}_F_VARIANCE_RANK_BYTES")] = float(np.var(b.astype(float)))
    out["rank"] = -1
    return out


def top_vectors(vecs: list[list[list[int]]], cnts: list[list[int]]) -> list[tuple[list[int], int]]:
    """The four most common value vectors of several ranks (H5D's access size, lengths
    and strides): counts of identical vectors added up, then ordered by count and first
    value, both descending; zero-padded to four."""
    table: dict[tuple[int, ...], int] = {}
    for rank_vecs, rank_cnts in zip(vecs, cnts, strict=True):
        for vec, cnt in zip(rank_vecs, rank_cnts, strict=True):
            if vec[0] != 0 and cnt:
                table[tuple(vec)] = table.get(tuple(vec), 0) + cnt
    best = sorted(table.items(), key=lambda kv: (kv[1], kv[0][0]), reverse=True)[:4]
    k = len(vecs[0][0])
    return [(list(v), n) for v, n in best] + [([0] * k, 0)] * (4 - len(best))


def combine(logs: Sequence[LogContent], *, labels: Sequence[str] | None = None) -> LogContent:
    """One job log from the logs of its processes (already-merged logs may be among them).

    Each rank must come from one log only: two logs holding the same rank (the same log
    given twice, a merged log and one of its ranks, or two single-process runs) are
    refused, as their records would be counted twice. ``labels`` name the logs in that
    error (e.g. their paths).

    ``logs``: the processes' logs.
    """
    if not logs:
        raise IosightError("nothing to merge: no per-process logs given")
    ranks = _distinct_ranks(logs, labels)
    nprocs = max(max(log.job.nprocs for log in logs), len(ranks))
    first = min(logs, key=lambda g: (g.job.start_time_sec, g.job.start_time_nsec))
    last = max(logs, key=lambda g: (g.job.end_time_sec, g.job.end_time_nsec))
    meta = {k: v for log in logs for k, v in log.job.metadata.items()}
    for key in {k for k in meta if k.startswith("iosight_dropped_")}:
        meta[key] = str(sum(int(g.job.metadata.get(key, 0)) for g in logs))
    job = Job(
        uid=first.job.uid,
        start_time_sec=first.job.start_time_sec,
        start_time_nsec=first.job.start_time_nsec,
        end_time_sec=last.job.end_time_sec,
        end_time_nsec=last.job.end_time_nsec,
        nprocs=nprocs,
        jobid=first.job.jobid,
        metadata=meta,
    )
    names = {k: v for log in logs for k, v in log.names.items()}
    job_start = _ns(first.job, "start")
    shifts = [(_ns(log.job, "start") - job_start) / 1e9 for log in logs]
    records = {}
    for mod in sorted({m for log in logs for m in log.records}):
        allrecs = np.concatenate(
            [_shifted(mod, log.records[mod], s) for log, s in zip(logs, shifts, strict=True)
             if mod in log.records]
        )  # fmt: skip
        shared_ids, keep = _shared_ids(allrecs, nprocs)
        if mod not in _SPEC:
            keep[:] = True
        parts = [allrecs[keep]]
        for rid in shared_ids if mod in _SPEC else []:
            parts.append(reduce_shared(mod, allrecs[allrecs["id"] == rid]))
        records[mod] = np.concatenate(parts)
    mounts = first.mounts or next((g.mounts for g in logs if g.mounts), [])
    partial = set().union(*(g.partial for g in logs))
    blobs = {}
    pairs = list(zip(logs, shifts, strict=True))
    dxt = b"".join(shift_dxt(g.blobs.get("DXT_POSIX", b""), s) for g, s in pairs)
    if dxt:
        blobs["DXT_POSIX"] = dxt
    run_time = (_ns(last.job, "end") - job_start) / 1e9
    heat = align_heatmaps([g.blobs.get("HEATMAP", b"") for g in logs], shifts, run_time)
    if heat:
        blobs["HEATMAP"] = heat
    return LogContent(job, first.exe, mounts, names, records, partial, blobs)


def log_ranks(log: LogContent) -> set[int]:
    """The ranks whose I/O ``log`` holds: those of its records, and every rank of the job
    when it has shared (rank -1) records, i.e. when it is already merged."""
    found = [np.unique(np.asarray(recs["rank"])) for recs in log.records.values()]
    ranks = {int(r) for r in (np.unique(np.concatenate(found)) if found else ())}
    if -1 in ranks:
        ranks |= set(range(log.job.nprocs))
    ranks.discard(-1)
    return ranks


def _distinct_ranks(logs: Sequence[LogContent], labels: Sequence[str] | None) -> set[int]:
    """Every rank the logs hold, each from one log only (else an error naming both)."""
    names = list(labels) if labels is not None else [f"log {k + 1}" for k in range(len(logs))]
    owner: dict[int, int] = {}
    for k, log in enumerate(logs):
        for rank in sorted(log_ranks(log)):
            if rank in owner and names[owner[rank]] == names[k]:
                raise IosightError(f"{names[k]} is given twice: merge each log once")
            if rank in owner:
                a, b = logs[owner[rank]].job.jobid, log.job.jobid
                raise IosightError(
                    f"{names[owner[rank]]} (job {a}) and {names[k]} (job {b}) both hold rank "
                    f"{rank}: merge the per-rank logs of one job, each once"
                )
            owner[rank] = k
    return set(owner)


def _ns(job: Job, which: str) -> int:
    return getattr(job, f"{which}_time_sec") * 10**9 + getattr(job, f"{which}_time_nsec")


def _shifted(module: str, recs: np.ndarray, shift: float) -> np.ndarray:
    """Records with their set timestamps moved from their process's clock to the job's."""
    if shift == 0 or module not in COUNTER_NAMES:
        return recs
    recs = recs.copy()
    cols = [i for i, n in enumerate(COUNTER_NAMES[module][1]) if n.endswith("_TIMESTAMP")]
    ts = recs["fcounters"][:, cols]
    recs["fcounters"][:, cols] = np.where(ts != 0, ts + shift, 0.0)
    return recs


def _shared_ids(recs: np.ndarray, nprocs: int) -> tuple[list[int], np.ndarray]:
    """Ids of files every rank has a record of (and the mask of records to keep as they are)."""
    per_rank = recs[recs["rank"] >= 0]
    if nprocs < 2 or len(per_rank) == 0:
        return [], np.ones(len(recs), dtype=bool)
    pairs = set(zip(per_rank["id"].tolist(), per_rank["rank"].tolist(), strict=True))
    ids, counts = np.unique(np.array([i for i, _ in pairs], dtype=np.uint64), return_counts=True)
    shared = ids[counts >= nprocs]
    keep = ~(np.isin(recs["id"], shared) & (recs["rank"] >= 0))
    return shared.tolist(), keep


def merge(paths: Sequence[str | Path], out: str | Path | None = None) -> Path:
    """Merge per-process logs (files, or directories of ``*.darshan``) into one job log.

    ``out`` is an existing directory, where the log gets Darshan's name (the default: the
    first input's directory), or a ``.darshan`` file path in an existing directory. The
    log never replaces an input, and inputs holding the same rank are refused (see
    :func:`~iosight.trace.combine`), so merging a directory again fails rather than
    counting its logs twice.

    ``paths``: logs, or directories of them.
    """
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.darshan")) if p.is_dir() else [p]
    if not files:
        raise IosightError("no .darshan logs to merge in the given paths")
    dest = Path(out) if out is not None else files[0].parent
    _check_merge_dest(dest)
    merged = combine([read_log(f) for f in files], labels=[str(f) for f in files])
    target = dest / log_name(merged) if dest.is_dir() else dest
    refuse_input_as_output(files, target)
    return write_log(target, merged)


def _check_merge_dest(dest: Path) -> None:
    """An existing directory, or a ``.darshan`` path in one: nothing is created."""
    if dest.is_dir():
        return
    if dest.suffix != ".darshan":
        raise IosightError(
            f"no directory {dest}; give an existing directory or a .darshan file path for the"
            " merged log"
        )
    if not dest.parent.is_dir():
        raise IosightError(f"cannot write the merged log {dest}: no directory {dest.parent}")


def refuse_input_as_output(paths: Sequence[str | Path], out: str | Path) -> None:
    """An error when writing ``out`` would replace one of the input logs ``paths``."""
    target = Path(out).resolve()
    for p in paths:
        if Path(p).resolve() == target:
            raise IosightError(
                f"the merged log would overwrite its input {p}; write it elsewhere (--out)"
            )
