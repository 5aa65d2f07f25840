"""Arrow tables that both Darshan 3.x readers (the native one, ``_darshan3``, and the
libdarshan-util one, ``_pydarshan``) build the same way, from arrays each reads its own
way: names, job totals, HEATMAP rows, and the filter that keeps named records only."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from iosight.darshan._tables import RowBlock, TableChunks


def heatmap_table(ids, ranks, widths, nbins, write_bins, read_bins, names) -> pa.Table:
    """HEATMAP rows, one per (record, bin) with bytes, from per-record arrays (id, rank,
    bin width in seconds, bin count) and every record's write and read bins concatenated;
    the module is the part of the record's name after ``:`` (Darshan names heatmaps
    ``heatmap:MODULE``).

    A bin without bytes (read and written 0) is not a row: 65 % of the bins of 2,000
    replicated real logs were such, the largest share of ingest's Parquet writes. Each row keeps
    its record's ``nbins``, the heatmap's extent, which the dropped bins no longer show.
    """
    write_bins = np.asarray(write_bins, np.int64)
    read_bins = np.asarray(read_bins, np.int64)
    nbins = np.asarray(nbins, np.int64)
    rec_of = np.repeat(np.arange(len(nbins)), nbins)
    bins = np.arange(len(rec_of)) - np.repeat(np.cumsum(nbins) - nbins, nbins)
    keep = (write_bins != 0) | (read_bins != 0)
    if not keep.all():  # else no copy: a region of bins all with bytes peaks as before
        rec_of, bins = rec_of[keep], bins[keep]
        write_bins, read_bins = write_bins[keep], read_bins[keep]
    del keep
    width = np.asarray(widths, np.float64)[rec_of]
    known, which = np.unique(np.asarray(ids, np.uint64), return_inverse=True)
    full = [names.get(rid, "") for rid in known.tolist()]
    mods = [n.split(":", 1)[1] if ":" in n else n for n in full]
    module = pa.DictionaryArray.from_arrays(
        pa.array(which.astype(np.int32)[rec_of]), pa.array(mods, pa.string())
    )
    return pa.table(
        {
            "module": module.cast(pa.string()),
            "rank": pa.array(np.asarray(ranks, np.int64)[rec_of]),
            "record_id": pa.array(np.asarray(ids, np.uint64)[rec_of]),
            "bin": pa.array(bins),
            "nbins": pa.array(nbins[rec_of]),
            "bin_width": pa.array(width),
            "bin_start": pa.array(bins * width),
            "read_bytes": pa.array(read_bins),
            "write_bytes": pa.array(write_bins),
        }
    )


def concat_int64(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays end to end as native int64 (empty without arrays)."""
    return np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)


_PYTHON_PREFIX_PAIRS = 4096  # names x mounts below which a Python loop is faster


def named_tables(tables: dict[str, pa.Table], names: dict[int, str]) -> dict[str, pa.Table]:
    """The tables with only records that have a name (:func:`named_only`), and without the
    tables left empty (a module table with no named record is left out, as the text and
    2.x readers do). :class:`TableChunks` and :class:`RowBlock` hold named records only
    already."""
    ids = named_ids(names)
    return {
        k: t
        for k, t in (
            (k, t if isinstance(t, (TableChunks, RowBlock)) else named_only(t, ids))
            for k, t in tables.items()
        )
        if t.num_rows
    }


def named_ids(names: dict[int, str]) -> np.ndarray:
    """The ids of the name records, sorted (for :func:`known_ids`)."""
    return np.sort(np.fromiter(names, np.uint64, len(names)))


_ID_BLOCK = 1 << 16  # ids looked up at once (bounds the lookup's arrays)


def known_ids(ids: np.ndarray, named: np.ndarray) -> np.ndarray:
    """Which of ``ids`` are in ``named`` (:func:`named_ids`), as a boolean mask."""
    known = np.zeros(len(ids), bool)
    for lo in range(0, len(ids) if len(named) else 0, _ID_BLOCK):
        part = ids[lo : lo + _ID_BLOCK]
        at = np.minimum(np.searchsorted(named, part), len(named) - 1)
        known[lo : lo + _ID_BLOCK] = named[at] == part
    return known


def named_only(table: pa.Table, named: np.ndarray) -> pa.Table:
    """Drop records whose id is not in ``named`` (:func:`named_ids`), as PyDarshan does
    (ids outside the name table are a writer's garbage, e.g. id 2**64-1 in some DAOS
    logs)."""
    known = known_ids(table["record_id"].to_numpy(), named)
    return table if known.all() else table.filter(pa.array(known))


def _longest_prefixes(paths: Iterable[str], by_len: list[tuple[str, str]]) -> list[int]:
    """For each path, the index in ``by_len`` (mounts, longest first) of the first mount
    point it starts with, ``len(by_len)`` when none: the path's first characters looked
    up once per mount-point length (a dict), not compared with every mount point."""
    first: dict[str, int] = {}
    for i, (mnt, _) in enumerate(by_len):
        first.setdefault(mnt, i)
    lengths = sorted({len(m) for m in first}, reverse=True)
    get, out = first.get, []
    for p in paths:
        for n in lengths:  # p[:n] of a shorter p is p: a hit is still a prefix of p
            if (i := get(p[:n])) is not None:
                break
        else:
            i = len(by_len)
        out.append(i)
    return out


def names_table(names: dict[int, str], mounts: list[tuple[str, str]]) -> pa.Table:
    """Record id -> name, with the mount point and file-system type of the longest prefix.

    Many names: one vectorised ``starts_with`` per mount (longest first), not a loop
    per name; few names (most logs): :func:`_longest_prefixes`, which costs less than
    the calls into Arrow.
    """
    import pyarrow.compute as pc

    by_len = sorted(mounts, key=lambda m: len(m[0]), reverse=True)
    paths = pa.array(list(names.values()), pa.string())
    unknown = len(by_len)  # index into by_len; last: UNKNOWN
    if len(names) * len(by_len) <= _PYTHON_PREFIX_PAIRS:
        which = np.array(_longest_prefixes(names.values(), by_len), np.int32)
    else:
        which = np.full(len(paths), unknown, np.int32)
        for i, (mnt, _) in enumerate(by_len):
            hit = pc.starts_with(paths, pattern=mnt).to_numpy(zero_copy_only=False)
            which[hit & (which == unknown)] = i
    idx = pa.array(which)
    return pa.table(
        {
            "record_id": pa.array(list(names), pa.uint64()),
            "name": paths,
            "mount_point": pa.array([m[0] for m in by_len] + ["UNKNOWN"]).take(idx),
            "fs_type": pa.array([m[1] for m in by_len] + ["UNKNOWN"], pa.string()).take(idx),
        }
    )
