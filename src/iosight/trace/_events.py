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

import numpy as np

# the POSIX wrappers queue READ and WRITE as the literals 0 and 1 (no global lookup)
READ, WRITE, SYNC, RESET, FLUSH = 0, 1, 2, 3, 4
DXT_MAX_SEGMENTS = 1 << 20  # per record; later segments are counted, not kept

EVENT = np.dtype([("kind", "<i8"), ("off", "<i8"), ("n", "<i8"), ("t1", "<f8"), ("t2", "<f8")])
pack_event = struct.Struct("<qqqdd").pack  # (kind, offset, bytes, start, end) -> 40 bytes


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
        self.apply(batch, t0)
        if heatmap is not None:
            moved = (batch["kind"] <= WRITE) & (batch["n"] > 0)
            io = batch if moved.all() else batch[moved]  # usually all: no copy
            heatmap.add(io["t1"] - t0, io["t2"] - t0, io["n"], io["kind"] == WRITE)
        if self.dxt is not None:
            keep = batch[batch["kind"] <= WRITE]
            room = DXT_MAX_SEGMENTS - sum(len(x) for x in self.dxt)
            seg = keep[: max(room, 0)].copy()
            seg["t1"] -= t0
            seg["t2"] -= t0
            self.dxt.append(seg)
            self.dxt_dropped += max(len(keep) - max(room, 0), 0)

    def apply(self, batch: np.ndarray, t0: float) -> None:
        """Fold ``batch`` (an :data:`EVENT` array; times not yet moved by ``t0``) in."""
        raise NotImplementedError
