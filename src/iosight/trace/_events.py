"""Operation queues: how wrappers stay cheap while counters stay exact.

A wrapper appends five numbers per operation (kind, offset, bytes, start, end) to its
record's queue, an in-place list extend that the interpreter does atomically; the
core's background thread (and the final stop) takes whole batches off the front of
the queue and folds them into the counters with numpy, applying Darshan's
per-operation rules in order. The batch is also the record's DXT trace when asked.
"""

from __future__ import annotations

from itertools import islice

import numpy as np

# the POSIX wrappers queue READ and WRITE as the literals 0 and 1 (no global lookup)
READ, WRITE, SYNC, RESET, FLUSH = 0, 1, 2, 3, 4
DXT_MAX_SEGMENTS = 1 << 20  # per record; later segments are counted, not kept


class Discard(list):
    """A queue that keeps nothing: records inherited by a forked child point here."""

    def __iadd__(self, other):
        return self


class EventRecord:
    """A record whose operations are queued in ``ev`` and folded in by ``apply``."""

    __slots__ = ("rec_id", "slot", "ev", "dxt", "dxt_dropped")

    def __init__(self, rec_id: int, slot: int) -> None:
        self.rec_id, self.slot = rec_id, slot
        self.ev: list[float] = []
        self.dxt: list[np.ndarray] | None = None
        self.dxt_dropped = 0

    def drain(self, t0: float, heatmap=None) -> None:
        """Fold every queued operation into the counters (one thread at a time), and into
        the module's heatmap when given."""
        ev = self.ev
        n = len(ev) - len(ev) % 5
        if n == 0:
            return
        batch = np.fromiter(islice(ev, n), dtype=np.float64, count=n).reshape(-1, 5)
        del ev[:n]  # the wrappers only ever append, so exactly the batch goes
        self.apply(batch, t0)
        if heatmap is not None:
            io = batch[(batch[:, 0] <= WRITE) & (batch[:, 2] > 0)]
            heatmap.add(io[:, 3] - t0, io[:, 4] - t0, io[:, 2], io[:, 0] == WRITE)
        if self.dxt is not None:
            keep = batch[batch[:, 0] <= WRITE]
            room = DXT_MAX_SEGMENTS - sum(len(x) for x in self.dxt)
            self.dxt.append(keep[: max(room, 0)].copy())
            self.dxt[-1][:, 3:] -= t0
            self.dxt_dropped += max(len(keep) - max(room, 0), 0)

    def apply(self, batch: np.ndarray, t0: float) -> None:
        raise NotImplementedError
