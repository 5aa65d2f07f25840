"""Darshan's LDMS stream into the warehouse: table ``live_io``, per job, module and bin.

Darshan's runtime, built ``--with-ldms`` and run with ``DARSHAN_LDMS_ENABLE`` set,
publishes one JSON message per open, read, write and close to an LDMS stream
(``darshanConnector``; the format: :mod:`iosight.live._ldms_format`). An LDMS daemon
subscribed to it writes the messages as JSON lines (``ldmsd_stream_subscribe -f FILE``,
or to standard output, piped in or sent to a local socket); :class:`LdmsFeed` reads
them, a bounded step per :meth:`~LdmsFeed.poll`.

The lines are parsed in bulk (DuckDB's JSON reader on the block a poll read, only the
fields used; a block that fails is cut in halves until its bad lines stand alone, so a
bad line costs a few re-parses, not a per-line parser for all). Each message's bytes
(``seg[0].len`` of ``read`` and ``write``) count in the 5-minute bin of its end
(``seg[0].timestamp``, absolute epoch seconds). A message is left out, counted and
logged once per poll, when it is not JSON of the expected types (``malformed``), lacks a
field used (``missing_field``), names a module the connector does not publish
(``unknown_module``), or ends later than the poll's clock plus ``future_tolerance``
(``future_clock``: a node whose clock runs ahead would otherwise place I/O in bins not
yet begun) or earlier than the clock less ``max_age`` (``past_clock``).

Each poll appends one row per (job, module, bin) of what it took, stamped ``known_at`` =
the poll's clock, and, for a file, its resume point (table ``live_ldms_state``) in the
same commit: a feed killed at any moment and started again takes every line once.
"""

from __future__ import annotations

import io
import math
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param, is_integer
from iosight.live._feed import FeedReport
from iosight.live._ldms_format import LDMS_MODULES
from iosight.live._lines import FileLines, FilePosition, Lines, StreamLines, TcpLines

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from iosight.warehouse import Warehouse

BIN_WIDTH = 300.0  # seconds: the timeline's bins (Saeedizade et al. (2023), §IV)
LIVE_IO, STATE = "live_io", "live_ldms_state"
LIVE_IO_COLUMNS = ("jobid", "uid", "exe", "module", "bin_start", "read_bytes",
                   "write_bytes", "reads", "writes", "known_at")  # fmt: skip
_EXAMPLE = 120  # characters of a bad line quoted in its warning


@dataclass(frozen=True)
class LdmsOptions:
    """Where an :class:`LdmsFeed` reads, and its bounds.

    ``source``: a JSON-lines file (read from where the last stored poll stopped), ``-``
    (standard input) or ``tcp:PORT`` / ``tcp://127.0.0.1:PORT`` (a port on the loopback
    interface: it takes no credentials). ``name`` keys the stored resume point (one per
    feed). At most ``max_bytes`` are read per poll; a line over ``max_line`` bytes is
    dropped (the connector's messages fit 1,024); a message that ends more than
    ``future_tolerance`` seconds after the poll's clock, or more than ``max_age`` seconds
    before it (a node whose clock was never set says 1970: its bins would stretch the
    live timeline over decades), is left out.
    """

    source: str
    name: str = "ldms"
    max_line: int = 1 << 16
    max_bytes: int = 64 << 20
    future_tolerance: float = 300.0
    max_age: float = 7 * 86400.0

    def __post_init__(self) -> None:
        check_param("source", self.source, bool(self.source), "a file, '-' or 'tcp:PORT'")
        ok = is_integer(self.max_line) and self.max_line >= 1024
        check_param("max_line", self.max_line, ok, "an integer >= 1024 (bytes)")
        ok = is_integer(self.max_bytes) and self.max_bytes > self.max_line
        check_param("max_bytes", self.max_bytes, ok, "an integer > max_line (bytes)")
        ok = self.future_tolerance >= 0 and math.isfinite(self.future_tolerance)
        check_param("future_tolerance", self.future_tolerance, ok, "seconds >= 0")
        ok = self.max_age > 0 and math.isfinite(self.max_age)
        check_param("max_age", self.max_age, ok, "seconds > 0")
        if self.source.startswith("tcp:"):
            tcp_address(self.source)


def ldms_feed(settings: Mapping, base: Path = Path(".")) -> LdmsFeed:
    """The feed of ``iosight live``'s ``feeds: {ldms: {...}}`` section, whose keys are
    :class:`LdmsOptions`' fields (``source`` at least: a file relative to ``base``, ``-``
    or ``tcp:PORT``; ``future_tolerance`` and ``max_age`` are durations: ``5m``, ``7d``)."""
    from iosight.live._config import feed_options

    if "source" not in settings:
        raise IosightError("live config: feeds.ldms needs 'source' (a file, '-' or 'tcp:PORT')")
    opts = feed_options("ldms", settings, LdmsOptions, ("future_tolerance", "max_age"))
    source = str(opts["source"])
    if source != "-" and not source.startswith("tcp:"):
        opts["source"] = str(base / source)
    return LdmsFeed(LdmsOptions(**opts))


def tcp_address(source: str) -> tuple[str, int]:
    """(host, port) of ``tcp:PORT`` or ``tcp://HOST:PORT``; only a loopback host."""
    rest = source.removeprefix("tcp:").removeprefix("//")
    host, _, port = rest.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise IosightError(
            f"{source}: the LDMS socket listens on 127.0.0.1 only (it takes no credentials); "
            "forward other hosts to it (e.g. ssh -L)"
        )
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise IosightError(f"{source}: not a port; write e.g. tcp:5140")
    return host, int(port)


# ------------------------------------------------------------------ parsing
#: the fields used, as DuckDB's ``read_json`` takes them (any other field is skipped)
_COLUMNS = {"uid": "BIGINT", "exe": "VARCHAR", "job_id": "BIGINT", "module": "VARCHAR",
            "op": "VARCHAR", "seg": 'STRUCT(len BIGINT, "timestamp" DOUBLE)[]'}  # fmt: skip


def parser_connection() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection of its own for parsing, on one thread (a feed shares the
    machine with the service it runs in)."""
    import duckdb

    con = duckdb.connect()
    con.execute("set threads = 1")
    return con


def _read_block(data: bytes, con: duckdb.DuckDBPyConnection) -> pa.Table:
    rel = con.read_json(io.BytesIO(data), format="newline_delimited", columns=_COLUMNS)
    return rel.to_arrow_table()


def _parse(data: bytes, con: duckdb.DuckDBPyConnection, bad: list[bytes]) -> list[pa.Table]:
    """Tables of the valid lines of ``data``; the invalid lines go to ``bad``."""
    import duckdb

    try:
        return [_read_block(data, con)]
    except duckdb.Error:
        pass
    mid = data.find(b"\n", len(data) // 2)
    if mid in (-1, len(data) - 1):
        mid = data.rfind(b"\n", 0, len(data) - 1)
    if mid < 0:  # one line
        bad.append(data)
        return []
    return _parse(data[: mid + 1], con, bad) + _parse(data[mid + 1 :], con, bad)


def parse_messages(
    data: bytes, con: duckdb.DuckDBPyConnection | None = None
) -> tuple[pa.Table, list[bytes]]:
    """The messages of complete JSON lines ``data`` (the fields used: ``uid``, ``exe``,
    ``job_id``, ``module``, ``op``, ``seg[].len``, ``seg[].timestamp``), and the lines
    that are not JSON objects of those types. DuckDB's JSON reader parses them, about
    twice as fast as ``pyarrow.json`` here (``con``: a :func:`parser_connection`, made
    when not given). NUL bytes are dropped first: the connector publishes its C string
    with the terminating NUL, which some subscribers write out."""
    import pyarrow as pa

    bad: list[bytes] = []
    if b"\x00" in data:
        data = data.replace(b"\x00", b"")
    if not data or data.isspace():  # isspace stops at the first other byte: no copy
        return _empty(), bad
    parts = _parse(data, con or parser_connection(), bad)
    parts = [p for p in parts if p.num_rows]
    return (pa.concat_tables(parts) if parts else _empty()), bad


def _empty() -> pa.Table:
    import pyarrow as pa

    seg = pa.struct([("len", pa.int64()), ("timestamp", pa.float64())])
    return pa.schema([("uid", pa.int64()), ("exe", pa.string()), ("job_id", pa.int64()),
                      ("module", pa.string()), ("op", pa.string()),
                      ("seg", pa.list_(seg))]).empty_table()  # fmt: skip


def _first_segment(msgs: pa.Table) -> pa.Table:
    """The messages that have every field used, with ``len`` and ``timestamp`` of their
    first segment (the connector writes one)."""
    import pyarrow.compute as pc

    msgs = msgs.filter(pc.fill_null(pc.greater(pc.list_value_length(msgs["seg"]), 0), False))
    seg = pc.list_element(msgs["seg"], 0)
    msgs = msgs.drop_columns("seg")
    msgs = msgs.append_column("len", pc.struct_field(seg, "len"))
    msgs = msgs.append_column("timestamp", pc.struct_field(seg, "timestamp"))
    ok = None
    for name in ("uid", "job_id", "module", "op", "len", "timestamp"):
        valid = msgs[name].is_valid()
        ok = valid if ok is None else pc.and_(ok, valid)
    return msgs.filter(ok) if ok is not None and msgs.num_rows else msgs


def message_rows(msgs: pa.Table, now: float, options: LdmsOptions, report: FeedReport) -> pa.Table:
    """``live_io`` rows of the messages ``msgs`` (:func:`parse_messages`) taken at
    ``now``; the messages left out (``options``' clock bounds) are counted in
    ``report``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    taken = msgs.num_rows
    msgs = _first_segment(msgs)
    report.warn("missing_field", taken - msgs.num_rows, "messages without job_id, uid, "
                "module, op, seg[0].len or seg[0].timestamp")  # fmt: skip
    known = pc.is_in(msgs["module"], value_set=pa.array(LDMS_MODULES)).to_numpy()
    if not known.all():
        names = sorted(set(msgs["module"].filter(pa.array(~known)).to_pylist()))[:5]
        report.warn("unknown_module", int((~known).sum()), f"messages of modules {names}")
    msgs = msgs.filter(pa.array(known))
    ts = msgs["timestamp"].to_numpy()
    future, past = ts > now + options.future_tolerance, ts < now - options.max_age
    if future.any():
        report.warn("future_clock", int(future.sum()), f"messages up to "
                    f"{float(ts.max() - now):.0f} s after the poll's clock")  # fmt: skip
    if past.any():
        report.warn("past_clock", int(past.sum()), f"messages up to "
                    f"{float(now - ts.min()):.0f} s before the poll's clock")  # fmt: skip
    if future.any() or past.any():
        keep = ~(future | past)
        msgs, ts = msgs.filter(pa.array(keep)), ts[keep]
    if len(ts):
        report.lag = max(now - float(ts.max()), 0.0)
    return _aggregate(msgs, ts, now)


def _aggregate(msgs: pa.Table, ts: np.ndarray, now: float) -> pa.Table:
    """One row per (job, module, bin) of the valid messages ``msgs`` (end times ``ts``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    length = np.maximum(msgs["len"].to_numpy(), 0)
    is_read = pc.equal(msgs["op"], "read").to_numpy(zero_copy_only=False)
    is_write = pc.equal(msgs["op"], "write").to_numpy(zero_copy_only=False)
    exe = msgs["exe"]
    exe = pc.if_else(pc.equal(exe, "N/A"), pa.scalar(None, pa.string()), exe)
    flat = pa.table({
        "jobid": msgs["job_id"], "module": msgs["module"],
        "bin_start": np.floor(ts / BIN_WIDTH) * BIN_WIDTH, "uid": msgs["uid"], "exe": exe,
        "read_bytes": np.where(is_read, length, 0), "write_bytes": np.where(is_write, length, 0),
        "reads": is_read.astype(np.int64), "writes": is_write.astype(np.int64),
    })  # fmt: skip
    sums = ("read_bytes", "write_bytes", "reads", "writes")
    out = flat.group_by(["jobid", "module", "bin_start"], use_threads=False).aggregate(
        [(c, "sum") for c in sums] + [("uid", "max"), ("exe", "max")]
    )
    cols = {c: out[f"{c}_sum"] for c in sums}
    return pa.table({
        "jobid": out["jobid"], "uid": out["uid_max"], "exe": out["exe_max"],
        "module": out["module"], "bin_start": out["bin_start"], **cols,
        "known_at": np.full(out.num_rows, float(now)),
    })  # fmt: skip


# ------------------------------------------------------------------ the feed
def _report_lines(lines: Lines, report: FeedReport) -> None:
    """The line source's warnings, one line per kind (the first one's detail)."""
    counts: dict[str, int] = {}
    details: dict[str, str] = {}
    for kind, count, detail in lines.warnings:
        counts[kind] = counts.get(kind, 0) + count
        details.setdefault(kind, detail)
    for kind, count in counts.items():
        report.warn(kind, count, details[kind])


def _source(options: LdmsOptions) -> FileLines | StreamLines | TcpLines:
    if options.source == "-":
        return StreamLines(sys.stdin.fileno(), options.max_line)
    if options.source.startswith("tcp:"):
        host, port = tcp_address(options.source)
        return TcpLines(port, options.max_line, host)
    return FileLines(options.source, options.max_line)


def stored_position(warehouse: Warehouse, name: str) -> FilePosition:
    """The resume point the last committed poll of feed ``name`` stored (none: the
    file's start)."""
    if not warehouse.has_table(STATE):
        return FilePosition()
    got = warehouse.rows(f"select inode, \"offset\", skipping from {STATE} where source = ?",
                         [name])  # fmt: skip
    if not len(got):
        return FilePosition()
    row = got.records()[0]
    return FilePosition(int(row["inode"]), int(row["offset"]), bool(row["skipping"]))


class LdmsFeed:
    """Darshan's LDMS stream, read from ``options.source``: each :meth:`poll` takes what
    has arrived (at most ``options.max_bytes``) into ``live_io``. No thread of its own.
    ``options``: the feed's settings (:class:`LdmsOptions`)."""

    def __init__(self, options: LdmsOptions) -> None:
        self.options = options
        self.source = _source(options)
        self._resumed = False
        self._con: duckdb.DuckDBPyConnection | None = None

    def poll(self, warehouse: Warehouse, now: float | None = None) -> FeedReport:
        """One bounded step at ``now`` (epoch s; default the clock): read, parse, and
        commit the rows to ``warehouse`` (with a file's resume point) atomically; bad
        input is counted and logged, never raised."""
        now = time.time() if now is None else float(now)
        report = FeedReport(self.options.name, now)
        lines, position = self._read(warehouse)
        _report_lines(lines, report)
        if self._con is None:
            self._con = parser_connection()
        msgs, bad = parse_messages(lines.data, self._con)
        if bad:
            example = bad[0][:_EXAMPLE].decode("utf-8", "replace").strip()
            report.warn("malformed", len(bad), f"lines that are not a Darshan message: {example}")
        report.messages = msgs.num_rows
        rows = message_rows(msgs, now, self.options, report)
        report.rows = rows.num_rows
        self._commit(warehouse, rows, position, now)
        return report

    def _read(self, warehouse: Warehouse) -> tuple[Lines, FilePosition | None]:
        if not isinstance(self.source, FileLines):
            return self.source.read(self.options.max_bytes), None
        if not self._resumed:
            self.source.advance(stored_position(warehouse, self.options.name))
            self._resumed = True
        return self.source.read(self.options.max_bytes)

    def _commit(self, warehouse: Warehouse, rows: pa.Table, position, now: float) -> None:
        """``rows`` and the resume point in one commit (nothing when nothing changed)."""
        import pyarrow as pa

        moved = position is not None and position != self.source.position
        if not rows.num_rows and not moved:
            return
        batch, delete = {LIVE_IO: [rows]}, {}
        if position is not None:
            batch[STATE] = [pa.table({
                "source": [self.options.name], "path": [os.fspath(self.options.source)],
                "inode": [position.inode], "offset": [position.offset],
                "skipping": [position.skipping], "known_at": [now],
            })]  # fmt: skip
            delete = {STATE: {"source": [self.options.name]}}
        warehouse.commit(batch, delete_keys=delete)
        if position is not None:
            self.source.advance(position)

    def close(self) -> None:
        """Release the socket (a TCP source)."""
        if isinstance(self.source, TcpLines):
            self.source.close()
