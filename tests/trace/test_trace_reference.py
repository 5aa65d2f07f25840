"""Batched counter folding agrees with a literal per-operation port of Darshan's macros."""

from __future__ import annotations

import numpy as np
import pytest

from iosight.trace._events import READ, RESET, SEEK, SYNC, WRITE, pack_at, pack_event
from iosight.trace._format import POSIX_COUNTERS, POSIX_FCOUNTERS
from iosight.trace._posix import PosixRecord

C = {n: i for i, n in enumerate(POSIX_COUNTERS)}
F = {n: i for i, n in enumerate(POSIX_FCOUNTERS)}


def _update_common(vals, cnts, val, count):
    """DARSHAN_UPDATE_COMMON_VAL_COUNTERS with __add_flag = 0, line by line."""
    if val == 0:
        return
    tmp_v, tmp_c, i = [], [], 0
    while i < 4 and (cnts[i] > count or (cnts[i] == count and vals[i] > val)):
        tmp_v.append(vals[i])
        tmp_c.append(cnts[i])
        i += 1
    if len(tmp_v) == 4:
        return
    tmp_v.append(val)
    tmp_c.append(count)
    while len(tmp_v) != 4:
        if vals[i] != val:
            tmp_v.append(vals[i])
            tmp_c.append(cnts[i])
        i += 1
    vals[:], cnts[:] = tmp_v, tmp_c


class Reference:
    """POSIX_RECORD_READ / POSIX_RECORD_WRITE / fsync / close of darshan-posix.c."""

    def __init__(self, fa):
        self.c = [0] * len(POSIX_COUNTERS)
        self.f = [0.0] * len(POSIX_FCOUNTERS)
        self.c[C["FILE_ALIGNMENT"]] = fa
        self.c[C["MEM_ALIGNMENT"]] = 8
        self.lbr = self.lbw = self.last_io = 0
        self.read_end = self.write_end = 0.0
        self.acc, self.strd = {}, {}
        self.av, self.ac, self.sv, self.sc = [0] * 4, [0] * 4, [0] * 4, [0] * 4

    def _track(self, table, vals, cnts, v):
        if v in table:
            table[v] += 1
        elif len(table) < 32:
            table[v] = 1
        else:
            return
        _update_common(vals, cnts, v, table[v])

    def op(self, kind, off, n, t1, t2):
        c, f = self.c, self.f
        if kind == RESET:
            self.lbr = self.lbw = 0
            return
        if kind == SYNC:
            f[F["WRITE_TIME"]] += t2 - (t1 if t1 > self.write_end else self.write_end)
            self.write_end = max(self.write_end, t2)
            return
        d = "READ" if kind == READ else "WRITE"
        last = self.lbr if kind == READ else self.lbw
        if off > last:
            c[C[f"SEQ_{d}S"]] += 1
        if off == last + 1:
            c[C[f"CONSEC_{d}S"]] += 1
        stride = off - last - 1 if (off > 0 and off > last and last != 0) else 0
        if kind == READ:
            self.lbr = off + n - 1
        else:
            self.lbw = off + n - 1
        mb = C["MAX_BYTE_READ" if kind == READ else "MAX_BYTE_WRITTEN"]
        c[mb] = max(c[mb], off + n - 1)
        c[C["BYTES_READ" if kind == READ else "BYTES_WRITTEN"]] += n
        c[C[f"{d}S"]] += 1
        edges = [101, 1025, 10241, 102401, 1048577, 4194305, 10485761, 104857601, 1073741825]
        b = sum(n >= e for e in edges)
        c[C[f"SIZE_{d}_0_100"] + b] += 1
        self._track(self.acc, self.av, self.ac, n)
        self._track(self.strd, self.sv, self.sc, stride)
        if c[C["FILE_ALIGNMENT"]] > 0 and off % c[C["FILE_ALIGNMENT"]]:
            c[C["FILE_NOT_ALIGNED"]] += 1
        me = 1 if kind == READ else 2
        if self.last_io and self.last_io != me:
            c[C["RW_SWITCHES"]] += 1
        self.last_io = me
        st, en = F[f"{d}_START_TIMESTAMP"], F[f"{d}_END_TIMESTAMP"]
        if f[st] == 0 or f[st] > t1:
            f[st] = t1
        f[en] = t2
        if f[F[f"MAX_{d}_TIME"]] < t2 - t1:
            f[F[f"MAX_{d}_TIME"]] = t2 - t1
            c[C[f"MAX_{d}_TIME_SIZE"]] = n
        end = "read_end" if kind == READ else "write_end"
        f[F[f"{d}_TIME"]] += t2 - (t1 if t1 > getattr(self, end) else getattr(self, end))
        setattr(self, end, max(getattr(self, end), t2))

    def counters(self):
        c = list(self.c)
        a, s = C["ACCESS1_ACCESS"], C["STRIDE1_STRIDE"]
        c[a : a + 4], c[a + 4 : a + 8] = self.av, self.ac
        c[s : s + 4], c[s + 4 : s + 8] = self.sv, self.sc
        return c


def _events(ops, pos: int = 0) -> list[bytes]:
    """``(kind, offset, bytes, start, end)`` operations queued as the wrappers queue them:
    at the record's offset when they are there, else after a SEEK (an ``lseek`` of its
    own every other time, so batches may end between the two)."""
    out = []
    for kind, off, n, t1, t2 in ops:
        if kind not in (READ, WRITE):
            out.append(pack_event(kind, 0, t1, t2))
            continue
        if off != pos and len(out) % 2:
            out.append(pack_event(SEEK, off, 0.0, 0.0))
        elif off != pos:
            out.append(pack_at(SEEK, off, 0.0, 0.0, kind, n, t1, t2))
            pos = off + n
            continue
        out.append(pack_event(kind, n, t1, t2))
        pos = off + n
    return out


def _ops(rng, n_ops):
    t, off, ops = 1.0, 0, []
    sizes = [1, 100, 512, 4096, 4096, 65536, 1 << 20, 5 << 20]
    for _ in range(n_ops):
        kind = rng.choice(
            [READ, WRITE, READ, WRITE, SYNC, RESET], p=[0.3, 0.3, 0.15, 0.15, 0.05, 0.05]
        )
        n = int(rng.choice(sizes)) if kind in (READ, WRITE) else 0
        if rng.random() < 0.3:
            off = int(rng.integers(0, 1 << 24))
        t1 = t + float(rng.random()) * 1e-3
        t2 = t1 + float(rng.random()) * 1e-3
        t = t2
        ops.append((int(kind), off, n, t1, t2))
        off += n
    return ops


@pytest.mark.parametrize("n_cuts", [0, 7, 60])  # one batch (~20 resets), some, many small
@pytest.mark.parametrize("seed", range(4))
def test_batches_match_per_operation_reference(seed, n_cuts):
    rng = np.random.default_rng(seed)
    ops = _ops(rng, 400)
    ref = Reference(4096)
    for op in ops:
        ref.op(*op)
    rec = PosixRecord(1, 0, 4096)
    events = _events(ops)
    cuts = sorted(rng.choice(len(events), size=n_cuts, replace=False).tolist()) + [len(events)]
    start = 0
    for cut in cuts:  # several batches of arbitrary sizes
        rec.ev += b"".join(events[start:cut])
        rec.drain(0.0)
        start = cut
    row = np.zeros(
        1, dtype=[("id", "<u8"), ("counters", "<i8", (69,)), ("fcounters", "<f8", (17,))]
    )
    rec.to_row(row[0])
    assert row["counters"][0].tolist() == ref.counters()
    np.testing.assert_allclose(row["fcounters"][0], ref.f, rtol=1e-12, atol=1e-12)


def _runs(rng, n_runs):
    """Blocks of same-size back-to-back accesses in one direction (the closed-form path)."""
    t, blocks = 1.0, []
    for _ in range(n_runs):
        kind = int(rng.choice([READ, WRITE]))
        size = int(rng.choice([0, 1, 512, 4096, 1 << 20]))
        off = int(rng.choice([0, 1, 4096, int(rng.integers(0, 1 << 30))]))
        block = []
        for _ in range(int(rng.integers(1, 40))):
            t1 = t + float(rng.random()) * 1e-4
            t2 = t1 + float(rng.random()) * 1e-4
            t = t2
            block.append((kind, off, size, t1, t2))
            off += size
        if rng.random() < 0.2:
            block.append((RESET, 0, 0, 0.0, 0.0))
        blocks.append(block)
    return blocks


@pytest.mark.parametrize("seed", range(6))
def test_runs_match_per_operation_reference(seed):
    rng = np.random.default_rng(100 + seed)
    blocks = _runs(rng, 30)
    ref = Reference(4096)
    rec = PosixRecord(1, 0, 4096)
    for block in blocks:
        for op in block:
            ref.op(*op)
        regular = [op for op in block if op[0] != RESET]
        rec.ev += b"".join(_events(regular, rec.pos))
        rec.drain(0.0)  # one regular batch
        if len(regular) != len(block):
            rec.ev += pack_event(RESET, 0, 0.0, 0.0)
            rec.drain(0.0)
    row = np.zeros(
        1, dtype=[("id", "<u8"), ("counters", "<i8", (69,)), ("fcounters", "<f8", (17,))]
    )
    rec.to_row(row[0])
    assert row["counters"][0].tolist() == ref.counters()
    np.testing.assert_allclose(row["fcounters"][0], ref.f, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("t1", "t2", "last_end", "added", "end"),
    [
        ([0.0, 1.0, 2.5], [2.0, 3.0, 3.0], 0.0, 3.0, 3.0),  # threads overlap: 2 + 1 + 0
        ([1.0, 2.0], [1.5, 4.0], 0.0, 2.5, 4.0),  # one after the other: 0.5 + 2
        ([1.0, 2.0], [1.5, 4.0], 1.2, 2.3, 4.0),  # the first overlaps the previous batch
    ],
)
def test_no_overlap_time_by_hand(t1, t2, last_end, added, end):
    """DARSHAN_TIMER_INC_NO_OVERLAP worked by hand, on the fast (sequential) path and not."""
    from iosight.trace._counters import no_overlap_time

    got = no_overlap_time(np.array(t1), np.array(t2), last_end)
    assert got == pytest.approx((added, end), rel=1e-12)
