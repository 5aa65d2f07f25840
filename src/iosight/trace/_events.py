"""Operation queues: how wrappers stay cheap while counters stay exact.

A wrapper packs four numbers per operation (kind, bytes, start, end) into 32 bytes
(:data:`pack_event`) and appends them to its record's queue, a ``bytearray`` extended
in place, which the interpreter does atomically. Reads and writes happen at the
record's current offset, so the wrapper does not track it: an operation that sets the
offset (an open, ``lseek``, ``seek``, a positional ``pread``/``pwrite``) queues a SEEK
to the new offset first (:data:`pack_at` packs both in one call), and the fold works
every operation's offset out from the queue. No Python number outlives the call, so
nothing is left to convert or free later: the core's background thread (and the final
stop) copies whole operations off the front of the queue, reads them as one
structured array (:data:`EVENT`) without conversion, and folds them into the counters
with numpy, applying Darshan's per-operation rules in order. The batch is also the
record's DXT trace when asked.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

# the POSIX wrappers queue READ and WRITE as the literals 0 and 1 (no global lookup)
READ, WRITE, SYNC, RESET, FLUSH, SEEK = 0, 1, 2, 3, 4, 5
DXT_MAX_SEGMENTS = 1 << 20  # per record; later segments are counted, not kept
_FEW_SEEKS = 8  # SEEKs in a batch up to which offsets are shifted one SEEK at a time

EVENT = np.dtype([("kind", "<i8"), ("n", "<i8"), ("t1", "<f8"), ("t2", "<f8")])
pack_event = struct.Struct("<qqdd").pack  # (kind, bytes, start, end) -> 32 bytes
# (SEEK, offset, 0.0, 0.0, kind, bytes, start, end): an operation at a given offset
pack_at = struct.Struct("<qqddqqdd").pack
SEGMENT = np.dtype(
    [("kind", "<i8"), ("off", "<i8"), ("n", "<i8"), ("t1", "<f8"), ("t2", "<f8")]
)  # a read or write with its offset, as DXT keeps it


class Ops(NamedTuple):
    """A batch of queued operations as columns: kind, offset and bytes (int64), start
    and end (seconds since the job started)."""

    kind: np.ndarray
    off: np.ndarray
    n: np.ndarray
    t1: np.ndarray
    t2: np.ndarray

    @classmethod
    def of(cls, batch: np.ndarray, t0: float, pos: int) -> tuple[Ops, int]:
        """The operations of an :data:`EVENT` batch with their offsets, worked out from
        ``pos``, the offset before the batch; and the offset after it.

        A read or write starts where the last SEEK before it put the offset (``pos``
        when none did) plus the bytes of the operations in between. SEEK rows stay in
        the batch with 0 bytes, so nothing is copied to leave them out."""
        kind, n = np.ascontiguousarray(batch["kind"]), batch["n"].copy()
        t1, t2 = batch["t1"] - t0, batch["t2"] - t0
        seeks = np.flatnonzero(kind == SEEK)
        targets = n[seeks]
        n[seeks] = 0
        done = np.cumsum(n)  # bytes moved up to and including each operation
        off = pos + done - n
        if len(seeks) <= _FEW_SEEKS:  # usually: each SEEK shifts what follows it
            for j, target in zip(seeks.tolist(), targets.tolist(), strict=True):
                off[j:] += target - off[j]
        else:  # the latest SEEK's target plus the bytes moved since it
            target = np.zeros(len(kind), dtype=np.int64)
            target[seeks] = targets
            last = np.maximum.accumulate(np.where(kind == SEEK, np.arange(len(kind)), -1))
            at = np.maximum(last, 0)
            off = np.where(last >= 0, target[at] + done - n - done[at], off)
        return cls(kind, off, n, t1, t2), int(off[-1] + n[-1])

    def part(self, a: int, b: int) -> Ops:
        return Ops(*(x[a:b] for x in self))


class Discard(bytearray):
    """A queue that keeps nothing: records inherited by a forked child point here."""

    def __iadd__(self, other):
        return self


class EventRecord:
    """A record whose operations are queued in ``ev`` and folded in by ``apply``."""

    __slots__ = ("rec_id", "slot", "ev", "pos", "dxt", "dxt_dropped")

    def __init__(self, rec_id: int, slot: int) -> None:
        self.rec_id, self.slot = rec_id, slot
        self.ev = bytearray()
        self.pos = 0  # the record's offset after the operations folded so far
        self.dxt: list[np.ndarray] | None = None
        self.dxt_dropped = 0

    def drain(self, t0: float, heatmap=None) -> None:
        """Fold every queued operation into the counters (one thread at a time), and into
        the module's heatmap when given."""
        ev = self.ev
        n = len(ev)  # whole operations: each wrapper appends one in a single extend
        if n == 0:
            return
        # copy, never view: a bytearray exporting its buffer could not be extended
        batch = np.frombuffer(ev[:n], dtype=EVENT)
        del ev[:n]  # the wrappers only ever append, so exactly the batch goes
        ops, self.pos = Ops.of(batch, t0, self.pos)
        self.apply(ops)
        if heatmap is not None:
            moved = ops.n > 0  # reads and writes that moved bytes (others have 0 bytes)
            io = ops if moved.all() else Ops(*(x[moved] for x in ops))  # usually all
            heatmap.add(io.t1, io.t2, io.n, io.kind == WRITE)
        if self.dxt is not None:
            keep = np.flatnonzero(ops.kind <= WRITE)
            room = max(DXT_MAX_SEGMENTS - sum(len(x) for x in self.dxt), 0)
            seg = np.empty(min(len(keep), room), dtype=SEGMENT)
            for name, col in zip(SEGMENT.names, ops, strict=True):
                seg[name] = col[keep[:room]]
            self.dxt.append(seg)
            self.dxt_dropped += max(len(keep) - room, 0)

    def apply(self, ops: Ops) -> None:
        """Fold a batch of operations, in the order they were queued, into the counters."""
        raise NotImplementedError
