"""Darshan 3.x modules whose records vary in size, read in memory and time that follow
what a region holds: DXT_POSIX/DXT_MPIIO (a head, then its segments), HEATMAP (a head,
then its bins) and LUSTRE (a head, then its components and OST ids).

Such a region can only be walked one record after another, each record's size read
from its own head, as libdarshan-util's ``darshan_log_get_record`` does (:func:`walk`).
A region that inflates to far more than its file bytes (a decompression bomb: 1 GiB of
zeros is 1 MB of zlib) is mostly records of one size over and over, so the walk checks
a *run* of equal-size records with one numpy view per window of records instead of a
Python step per record; it keeps an int64 offset per record that holds anything. The
tables are then gathered from the region by record and segment offsets, after leaving
out the records that give no row (no segment, bin or component) and those of ids
without a name record (which every table drops), so a region of such records builds
nothing. The name records are walked the same way (:func:`name_records`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import mul
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from iosight._errors import CorruptLogError
from iosight.darshan._darshan3_counters import LUSTRE_COMP_COUNTERS
from iosight.darshan._record_tables import heatmap_table, known_ids
from iosight.darshan._tables import TableChunks

_STREAK = 8  # records of one size in a row after which the rest of the run is one check
_FIRST_WINDOW = 64  # records checked at once when a run starts (doubling while they match)
_MAX_WINDOW = 1 << 16  # records checked at once at most (bounds the check's arrays)
_MAX_CELLS = 1 << 20  # name bytes checked at once at most


@dataclass(frozen=True)
class Layout:
    """Records of a ``head``-byte head whose int64 counts, from byte ``at`` of the head,
    add ``per`` bytes each to the record; a record is at least ``floor`` bytes. With
    ``bare_rows``, a record of counts all 0 still gives a table row (else the walk does
    not keep it)."""

    head: int
    at: int
    per: tuple[int, ...]
    floor: int = 0
    bare_rows: bool = False


class Walked(NamedTuple):
    """A walk's records: their byte offsets, where the walk ended, and the counts of the
    head it stopped at when one of them was negative (None: the region ended, or the
    next record does not fit in it)."""

    offsets: np.ndarray
    end: int
    bad: tuple[int, ...] | None


def walk(data: bytes | bytearray, layout: Layout, order: str) -> Walked:
    """The records of a region, from its start, each as long as its head says.

    A record that does not fit ends the region (libdarshan-util's short read).
    :data:`_STREAK` records of one size in a row start a run (:func:`_run`). Records of
    counts all 0 are stepped over, not kept, unless ``layout.bare_rows``.
    """
    n, head, per = len(data), layout.head, layout.per
    counts_of = struct.Struct(f"{order}{len(per)}q")
    offsets = np.empty(n // head + 1, np.int64)  # pages are touched as filled
    k = pos = streak = 0
    last = -1
    while pos + head <= n:  # a Python step per record but in runs: kept lean
        counts = counts_of.unpack_from(data, pos + layout.at)
        if min(counts) < 0:
            return Walked(offsets[:k].copy(), pos, counts)
        size = max(head + sum(map(mul, per, counts)), layout.floor)
        if pos + size > n:
            break
        streak = streak + 1 if size == last else 0
        if streak < _STREAK:
            if layout.bare_rows or size > head:
                offsets[k] = pos
                k += 1
            pos += size
            last = size
            continue
        run = _run((n - pos) // size, _same_size(data, layout, order, pos, size))
        if layout.bare_rows or size > head:
            offsets[k : k + run] = np.arange(pos, pos + run * size, size)
            k += run
        pos += run * size
    return Walked(offsets[:k].copy(), pos, None)


def _run(fits: int, same: Callable[[int, int], np.ndarray], most: int = _MAX_WINDOW) -> int:
    """How many of ``fits`` records in a row pass ``same(i, k)`` (a boolean per record of
    ``i .. i + k - 1``), the first one known to: checked in windows of at most ``most``
    records that double while all pass."""
    total, window = 1, min(_FIRST_WINDOW, most)
    while total < fits:
        k = min(window, fits - total)
        ok = same(total, k)
        m = k if ok.all() else int(ok.argmin())
        total += m
        if m < k:
            break
        window = min(2 * window, most)
    return total


def _same_size(data, layout: Layout, order: str, pos: int, size: int):
    """:func:`_run`'s check: is record ``i`` from ``pos``, if records are ``size`` bytes,
    one of that size? Its head is viewed where a walk would read it (one strided array
    for ``k`` records)."""
    n = len(data)
    per = np.asarray(layout.per, np.int64)
    view = np.dtype(
        {
            "names": ["c"],
            "formats": [(f"{order}i8", (len(per),))],
            "offsets": [layout.at],
            "itemsize": size,
        }
    )

    def same(i: int, k: int) -> np.ndarray:
        c = np.frombuffer(data, view, k, pos + i * size)["c"].reshape(k, len(per))
        sizes = np.maximum(layout.head + np.minimum(c, n) @ per, layout.floor)
        return (c >= 0).all(axis=1) & (sizes == size)

    return same


def _words_at(walked: Walked) -> np.ndarray:
    """The walk's record offsets as word indices (in place: records start on 8 bytes)."""
    at = walked.offsets
    at //= 8
    return at


class _Words:
    """A region as 8-byte words: signed, unsigned and float views in the log's byte order,
    and raw (unswapped) words for byte strings; indexed by word, i.e. offset // 8."""

    def __init__(self, data: bytes | bytearray, order: str) -> None:
        n = len(data) // 8
        self.i8 = np.frombuffer(data, order + "i8", n)
        self.u8 = np.frombuffer(data, order + "u8", n)
        self.f8 = np.frombuffer(data, order + "f8", n)
        self.raw = np.frombuffer(data, "=u8", n)  # bytes moved as they are

    def ints(self, at: np.ndarray) -> np.ndarray:
        return self.i8[at].astype(np.int64, copy=False)

    def ids(self, at: np.ndarray) -> np.ndarray:
        return self.u8[at].astype(np.uint64, copy=False)

    def floats(self, at: np.ndarray) -> np.ndarray:
        return self.f8[at].astype(np.float64, copy=False)

    def strings(self, at: np.ndarray, nwords: int) -> tuple[list[str], np.ndarray]:
        """The NUL-terminated strings of ``nwords`` words at each word ``at``: the distinct
        ones (decoded) and, per position, which one it is."""
        if not len(at):
            return [], np.zeros(0, np.int32)
        raw = np.stack([self.raw[at + j] for j in range(nwords)], axis=1)
        text, which = np.unique(raw.view(f"S{8 * nwords}").ravel(), return_inverse=True)
        return [_c_string(t) for t in text.tolist()], which.astype(np.int32)


def _c_string(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _ragged(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``counts[i]`` items of each owner ``i``, end to end: each item's owner and its
    index among the owner's items."""
    owner = np.repeat(np.arange(len(counts)), counts)
    within = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, within


def _strings_column(names: list[str], which: np.ndarray) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(which), pa.array(names, pa.string())).cast(
        pa.string()
    )


_OPS = pa.array(["read", "write"])


def layout(mod: str, ver: int) -> Layout:
    """How a version of a variable-size module lays out its records."""
    if mod == "HEATMAP":  # base, bin width, nbins, 2 pointers, then the bins
        return Layout(48, 24, (16,))
    if mod == "LUSTRE":  # v1: every record is a row; a negative width ends the region
        v1 = Layout(56, 48, (8,), floor=64, bare_rows=True)
        return Layout(32, 16, (72, 8)) if ver >= 2 else v1
    seg = 40 if _with_tid(mod, ver) else 32  # DXT: a 104-byte head, then the segments
    return Layout(104, 88, (seg, seg))


def _with_tid(mod: str, ver: int) -> bool:
    """DXT_POSIX v2 and DXT_MPIIO v3 (darshan's development branch) record a pthread id
    per segment."""
    return (mod == "DXT_POSIX" and ver >= 2) or (mod == "DXT_MPIIO" and ver >= 3)


_BAD_HEAD = {
    "DXT_POSIX": "DXT record with {} writes, {} reads",
    "DXT_MPIIO": "DXT record with {} writes, {} reads",
    "HEATMAP": "HEATMAP record with {} bins",
    "LUSTRE": "LUSTRE record with {} components, {} stripes",
}


def row_table(
    data: bytes | bytearray,
    mod: str,
    ver: int,
    order: str,
    names: dict[int, str],
    named,
    *,
    chunked: bool = False,
) -> pa.Table | TableChunks:
    """The table of a region of LUSTRE, DXT_POSIX, DXT_MPIIO or HEATMAP records (of
    module version ``ver``), without the records whose id is not in ``named``.

    DXT segments are built :data:`CHUNK_SEGMENTS` at a time; ``chunked`` gives them as
    :class:`TableChunks` (built as they are iterated), else as one table of the chunks.
    """
    walked = walk(data, layout(mod, ver), order)
    if walked.bad is not None and not (mod == "LUSTRE" and ver < 2):
        raise CorruptLogError(_BAD_HEAD[mod].format(*walked.bad))
    words, at = _Words(data, order), _words_at(walked)
    if mod == "HEATMAP":
        return _heatmap(words, at, names, named)
    if mod == "LUSTRE":
        return (_lustre_v2 if ver >= 2 else _lustre_v1)(words, at, named)
    chunks, rows = _dxt(words, at, mod, ver, named)
    return TableChunks(chunks, rows) if chunked else pa.concat_tables(chunks)


def holds_whole_records(data: bytes | bytearray, mod: str, ver: int, order: str) -> bool:
    """Whether a region of a variable-size module is whole records and nothing more."""
    walked = walk(data, layout(mod, ver), order)
    return walked.bad is None and walked.end == len(data)


CHUNK_SEGMENTS = 1 << 18  # DXT segments built at once (about 20 MB of columns)


class _DxtRecords(NamedTuple):
    """The DXT records that give rows: their first words, write counts, segment counts
    (their ends, cumulated) and host names (distinct, and which one each record has)."""

    at: np.ndarray
    writes: np.ndarray
    counts: np.ndarray
    ends: np.ndarray
    hosts: list[str]
    host_of: np.ndarray


def _dxt(
    words: _Words, at: np.ndarray, mod: str, ver: int, named: np.ndarray
) -> tuple[Iterator[pa.Table], int]:
    """DXT records: a 104-byte head (base, shared flag, hostname[64], write and read
    counts), then the write segments and the read segments (offset, length, start, end
    [, pthread_id]); one row per segment, in tables of at most :data:`CHUNK_SEGMENTS`
    rows built one at a time (a consumer that writes each away holds one: the region's
    segments as Arrow rows are 2-3 times the region). The records are picked here, the
    tables built as the iterator is advanced (at least one, maybe empty); and their rows."""
    writes, reads = words.ints(at + 11), words.ints(at + 12)
    keep = (writes + reads > 0) & known_ids(words.ids(at), named)
    at, writes, counts = at[keep], writes[keep], (writes + reads)[keep]
    hosts, host_of = words.strings(at + 3, 8)
    recs = _DxtRecords(at, writes, counts, np.cumsum(counts), hosts, host_of)
    total = int(recs.ends[-1]) if len(at) else 0
    spans = [(lo, min(lo + CHUNK_SEGMENTS, total)) for lo in range(0, total, CHUNK_SEGMENTS)]
    tables = (_dxt_table(words, recs, mod, ver, lo, hi) for lo, hi in spans or [(0, 0)])
    return tables, total


def _dxt_table(words: _Words, recs: _DxtRecords, mod: str, ver: int, lo: int, hi: int):
    """The table of the job's DXT segments ``lo .. hi - 1`` (counted over its records).
    DXT_MPIIO v1 recorded no offsets (-1, as libdarshan-util says)."""
    with_tid = _with_tid(mod, ver)
    seg = 40 if with_tid else 32
    index = np.arange(lo, hi, dtype=np.int64)
    rec_of = np.searchsorted(recs.ends, index, side="right")
    seq = index - (recs.ends - recs.counts)[rec_of]
    at = recs.at[rec_of]
    s = at + 13 + seq * (seg // 8)  # each segment's first word
    no_offsets = mod == "DXT_MPIIO" and ver == 1
    cols = {
        "rank": pa.array(words.ints(at + 1)),
        "record_id": pa.array(words.ids(at)),
        "hostname": _strings_column(recs.hosts, recs.host_of[rec_of]),
        "seq": pa.array(seq),
        "op": _OPS.take(pa.array((seq < recs.writes[rec_of]).astype(np.int8))),
        "offset": pa.array(np.full(len(s), -1, np.int64) if no_offsets else words.ints(s)),
        "length": pa.array(words.ints(s + 1)),
        "start": pa.array(words.floats(s + 2)),
        "end": pa.array(words.floats(s + 3)),
    }
    if with_tid:
        cols["pthread_id"] = pa.array(words.ids(s + 4))
    return pa.table(cols)


def _heatmap(words: _Words, at: np.ndarray, names: dict[int, str], named) -> pa.Table:
    """HEATMAP records: base, bin width, nbins, 2 pointers, write bins, read bins; one
    row per bin with bytes (:func:`heatmap_table`)."""
    nbins = words.ints(at + 3)
    keep = (nbins > 0) & known_ids(words.ids(at), named)
    at, nbins = at[keep], nbins[keep]
    writes, reads = _bins(words, at, nbins)
    return heatmap_table(
        words.ids(at), words.ints(at + 1), words.floats(at + 2), nbins, writes, reads, names
    )


def _bins(words: _Words, at: np.ndarray, nbins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The write bins and the read bins of the HEATMAP records at words ``at``, each end
    to end (its own function: the index arrays are gone before the table is built)."""
    rec_of, b = _ragged(nbins)
    w = at[rec_of] + 6 + b  # each write bin's word; its read bin is nbins words on
    return words.ints(w), words.ints(w + nbins[rec_of])


class _Components(NamedTuple):
    """LUSTRE components: their record (an index into the records' words), number in it,
    the 7 counters (an array each), pool names (:meth:`_Words.strings`) and OST ids
    (first word, count)."""

    rec_of: np.ndarray
    number: np.ndarray
    counters: list[np.ndarray]
    pools: tuple[list[str], np.ndarray]
    ost_at: np.ndarray
    n_ost: np.ndarray


def _lustre_v2(words: _Words, at: np.ndarray, named: np.ndarray) -> pa.Table:
    """v2 records {base, num_comps, num_stripes, comps[num_comps] (7 counters,
    pool_name[16]), ost_ids[num_stripes]}: a row per component, each taking the next
    STRIPE_COUNT OST ids."""
    ncomp, nstripe = words.ints(at + 2), words.ints(at + 3)
    keep = (ncomp > 0) & known_ids(words.ids(at), named)
    at = at[keep]
    return _lustre_columns(words, at, _components(words, at, ncomp[keep], nstripe[keep]))


def _components(words: _Words, at: np.ndarray, ncomp: np.ndarray, nstripe: np.ndarray):
    """The components of v2 records at words ``at`` (72 bytes each: 9 words)."""
    rec_of, number = _ragged(ncomp)
    c = at[rec_of] + 4 + 9 * number
    counters = [words.ints(c + j) for j in range(7)]
    pools = words.strings(c + 7, 2)
    osts = _ost_slices(at + 4 + 9 * ncomp, nstripe, ncomp, rec_of, counters[1])
    return _Components(rec_of, number, counters, pools, *osts)


def _ost_slices(ost_at, nstripe, ncomp, rec_of, stripe_count) -> tuple[np.ndarray, np.ndarray]:
    """Each component's OST ids: the next STRIPE_COUNT of its record's list (``nstripe``
    words from word ``ost_at``), cut at the list's end (counts clipped first, so that
    their sums cannot overflow), as libdarshan-util hands them out."""
    n_ost = nstripe[rec_of]
    take = np.minimum(np.maximum(stripe_count, 0), n_ost)
    first = np.cumsum(take) - take
    first -= first[np.cumsum(ncomp) - ncomp][rec_of]
    lo = np.minimum(first, n_ost)
    return ost_at[rec_of] + lo, np.minimum(first + take, n_ost) - lo


def _lustre_v1(words: _Words, at: np.ndarray, named: np.ndarray) -> pa.Table:
    """v1 records {base, 5 counters, ost_ids[stripe_width]} as one component each:
    STRIPE_SIZE and STRIPE_COUNT (the width) kept, the counters v1 did not have set as
    libdarshan-util 3.5 sets them."""
    at = at[known_ids(words.ids(at), named)]
    n = len(at)
    width = words.ints(at + 6)
    counters = [words.ints(at + 5), width]
    counters += [np.full(n, v, np.int64) for v in (-1, -1, 0, -1, -1)]
    no_pool = ([""], np.zeros(n, np.int32))
    comps = _Components(np.arange(n), np.zeros(n, np.int64), counters, no_pool, at + 7, width)
    return _lustre_columns(words, at, comps)


def _lustre_columns(words: _Words, at: np.ndarray, comps: _Components) -> pa.Table:
    """The ``lustre`` table: one row per component of the records at words ``at``."""
    owner, i = _ragged(comps.n_ost)
    offsets = np.concatenate([[0], np.cumsum(comps.n_ost)]).astype(np.int32)
    ost_ids = words.ints(comps.ost_at[owner] + i)
    return pa.table(
        {
            "rank": pa.array(words.ints(at + 1)[comps.rec_of]),
            "record_id": pa.array(words.ids(at)[comps.rec_of]),
            "component": pa.array(comps.number),
            **dict(zip(LUSTRE_COMP_COUNTERS, map(pa.array, comps.counters), strict=True)),
            "pool_name": _strings_column(*comps.pools),
            "ost_ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(ost_ids)),
        }
    )


def name_records(data: bytes | bytearray, order: str, v300: bool) -> dict[int, str]:
    """The name records, id -> name (a repeated id keeps its last name, as libdarshan-util
    does): ``id, NUL-terminated name`` (format 3.00: ``id, uint32 length, name``).

    Records are read run by run (:func:`_name_runs`): a run's ids and names are strided
    views of the region, and a block of one id over and over is one entry, so a region
    of the same record repeated costs numpy time, not a Python object per record.
    """
    out: dict[int, bytes] = {}
    id_of = struct.Struct(order + "Q")
    for pos, size, count in _name_runs(data, order, v300):
        at = pos + (12 if v300 else 8)  # the name's first byte
        length = size - (12 if v300 else 9)
        if count == 1:
            out[id_of.unpack_from(data, pos)[0]] = bytes(data[at : at + length])
            continue
        ids = np.ndarray((count,), order + "u8", data, pos, (size,))
        names = np.ndarray((count,), f"V{length}", data, at, (size,)) if length else None
        _add_names(out, ids, names)
    return {rid: name.decode("utf-8", "replace") for rid, name in out.items()}


_NAME_BLOCK = 1 << 16  # name records added to the dict at once


def _add_names(out: dict[int, bytes], ids: np.ndarray, names: np.ndarray | None) -> None:
    """``out.update(zip(ids, names))`` (``names`` None: all empty), a block at a time."""
    for lo in range(0, len(ids), _NAME_BLOCK):
        block = ids[lo : lo + _NAME_BLOCK]
        text = names[lo : lo + _NAME_BLOCK].tolist() if names is not None else None
        if (block == block[0]).all():  # one id: its last name wins
            out[int(block[-1])] = text[-1] if text else b""
        else:
            out.update(zip(block.tolist(), text or [b""] * len(block), strict=True))


def _name_runs(data: bytes | bytearray, order: str, v300: bool) -> Iterator[tuple[int, int, int]]:
    """``(offset, size, count)``: runs of name records of one size, from the region's
    start; a record that does not fit (or has no NUL) ends the region."""
    n = len(data)
    length_of = struct.Struct(order + "I")
    pos, last, streak = 0, -1, 0
    while pos + 9 <= n:
        if v300:
            size = 12 + length_of.unpack_from(data, pos + 8)[0]
            if pos + size > n:
                return
        else:
            end = data.find(b"\0", pos + 8)
            if end < 0:
                return
            size = end + 1 - pos
        streak = streak + 1 if size == last else 0
        count = 1
        if streak >= _STREAK:
            fits = (n - pos) // size
            count = _run(fits, _same_name_size(data, order, v300, pos, size), _most(size))
        yield pos, size, count
        pos += count * size
        last = size


def _most(size: int) -> int:
    """Name records checked at once at most: :data:`_MAX_CELLS` bytes of them."""
    return max(1, min(_MAX_WINDOW, _MAX_CELLS // size))


def _same_name_size(data, order: str, v300: bool, pos: int, size: int):
    """:func:`_run`'s check for name records: is the one ``i`` from ``pos``, if records
    are ``size`` bytes, of that size (its length field says so; or its name has no NUL
    before the one ending it there)?"""

    def same(i: int, k: int) -> np.ndarray:
        at = pos + i * size
        if v300:
            return np.ndarray((k,), order + "u4", data, at + 8, (size,)) == size - 12
        cells = np.ndarray((k, size - 8), np.uint8, data, at + 8, (size, 1))
        return (cells[:, :-1] != 0).all(axis=1) & (cells[:, -1] == 0)

    return same
