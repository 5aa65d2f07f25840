"""Operation queues: how wrappers stay cheap while counters stay exact.

A wrapper packs five numbers per operation (kind, offset, bytes, start, end) into 40
bytes (:data:`pack_event`) and appends them to its record's queue, a ``bytearray``
extended in place, which the interpreter does atomically. No Python number outlives
the call, so nothing is left to convert or free later: the core's background thread
(and the final stop) copies whole operations off the front of the queue, reads them
as one structured array (:data:`EVENT`) without conversion, and folds them into the
counters with numpy, applying Darshan's per-operation rules in order. The batch is
also the record's DXT trace when asked.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

# the POSIX wrappers queue READ and WRITE as the literals 0 and 1 (no global lookup)
READ, WRITE, SYNC, RESET, FLUSH = 0, 1, 2, 3, 4
DXT_MAX_SEGMENTS = 1 << 20  # per record; later segments are counted, not kept

EVENT = np.dtype([("kind", "<i8"), ("off", "<i8"), ("n", "<i8"), ("t1", "<f8"), ("t2", "<f8")])
pack_event = struct.Struct("<qqqdd").pack  # (kind, offset, bytes, start, end) -> 40 bytes


class Ops(NamedTuple):
    """A batch of queued operations as columns: kind, offset and bytes (int64), start
    and end (seconds since the job started)."""

    kind: np.ndarray
    off: np.ndarray
    n: np.ndarray
    t1: np.ndarray
    t2: np.ndarray

    @classmethod
    def of(cls, batch: np.ndarray, t0: float) -> Ops:
        """Columns of an :data:`EVENT` array whose times are clock readings."""
        return cls(*(np.ascontiguousarray(batch[k]) for k in ("kind", "off", "n")),
                   batch["t1"] - t0, batch["t2"] - t0)  # fmt: skip

    def part(self, a: int, b: int) -> Ops:
        return Ops(*(x[a:b] for x in self))


class Discard(bytearray):
    """A queue that keeps nothing: records inherited by a forked child point here."""

    def __iadd__(self, other):
        return self


class EventRecord:
    """A record whose operations are queued in ``ev`` and folded in by ``apply``."""

    __slots__ = ("rec_id", "slot", "ev", "dxt", "dxt_dropped")

    def __init__(self, rec_id: int, slot: int) -> None:
        self.rec_id, self.slot = rec_id, slot
        self.ev = bytearray()
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
        ops = Ops.of(batch, t0)
        self.apply(ops)
        if heatmap is not None:
            moved = ops.n > 0  # reads and writes that moved bytes (others queue 0 bytes)
            io = ops if moved.all() else Ops(*(x[moved] for x in ops))  # usually all
            heatmap.add(io.t1, io.t2, io.n, io.kind == WRITE)
        if self.dxt is not None:
            keep = batch[batch["kind"] <= WRITE]
            room = DXT_MAX_SEGMENTS - sum(len(x) for x in self.dxt)
            seg = keep[: max(room, 0)].copy()
            seg["t1"] -= t0
            seg["t2"] -= t0
            self.dxt.append(seg)
            self.dxt_dropped += max(len(keep) - max(room, 0), 0)

    def apply(self, ops: Ops) -> None:
        """Fold a batch of operations, in the order they were queued, into the counters."""
        raise NotImplementedError
