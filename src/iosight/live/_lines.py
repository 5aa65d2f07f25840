"""Newline-delimited messages from a growing file, standard input or a local TCP socket.

Each source's :meth:`read` returns at once with the complete lines that have arrived (at
most about ``limit`` bytes), never a partial line, and what went wrong on the way as
``(kind, detail)`` warnings:

- ``too_long``: a line longer than ``max_line`` bytes, dropped whole (Darshan's messages
  fit 1,024 bytes; a runaway writer must not grow iosight's memory);
- ``truncated``: a socket or standard input that closed in the middle of a line (the
  piece is dropped), or a file that became shorter than what was read of it (read again
  from its start);
- ``rotated``: the file at the path is another file (an LDMS store rolled it over): the
  new one is read from its start;
- ``source_down``: the file is missing, standard input ended, or the port cannot be bound.

A file's resume point (:class:`FilePosition`: its inode and the offset after the last
complete line taken) is what the feed stores with its rows, so a restart neither skips
nor repeats a line. A stream (standard input, a socket) has no such point: what it sent
is either in a committed poll or lost with the process, never stored twice.
"""

from __future__ import annotations

import os
import selectors
import socket
from dataclasses import dataclass, field

import numpy as np

_NEWLINE = 10
_RECV = 1 << 20  # bytes asked of a socket at a time
MAX_CONNECTIONS = 256  # sockets held at once (each buffers at most max_line bytes)


@dataclass
class Lines:
    """What one read returned: complete lines, each ending in a newline, and warnings."""

    data: bytes = b""
    #: (kind, count, detail)
    warnings: list[tuple[str, int, str]] = field(default_factory=list)

    def warn(self, kind: str, detail: str, count: int = 1) -> None:
        self.warnings.append((kind, count, detail))


def _may_hold_long_lines(data: bytes, max_line: int) -> bool:
    """Whether some window of ``max_line // 2`` bytes at a multiple of that size holds no
    newline: a line longer than ``max_line`` covers such a window whole. Each ``find``
    stops at the window's first newline, so the common case costs a few thousand calls,
    not a scan of the block."""
    h = max_line // 2
    return any(data.find(b"\n", k, k + h) < 0 for k in range(0, len(data) - h + 1, h))


def drop_long_lines(data: bytes, max_line: int) -> tuple[bytes, int]:
    """``data`` (complete lines) without the lines longer than ``max_line`` bytes, and how
    many were dropped; numpy finds the line ends, so the common case costs one scan."""
    if len(data) <= max_line or not _may_hold_long_lines(data, max_line):
        return data, 0
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
    starts = np.concatenate(([0], ends[:-1] + 1))
    long = np.flatnonzero(ends - starts > max_line)
    if not len(long):
        return data, 0
    keep, at = [], 0
    for i in long:
        keep.append(data[at : starts[i]])
        at = int(ends[i]) + 1
    keep.append(data[at:])
    return b"".join(keep), len(long)


class LineBuffer:
    """Bytes of one stream cut into complete lines; a line over ``max_line`` bytes is
    dropped as it streams by (at most ``max_line`` bytes are ever held)."""

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.partial = b""
        self.skipping = False  # inside a line found too long: drop up to its newline

    def feed(self, chunk: bytes, out: Lines) -> bytes:
        """The complete lines ``chunk`` ends (with the partial line before it)."""
        data = self.partial + chunk
        if self.skipping:
            cut = data.find(b"\n")
            if cut < 0:
                self.partial = b""
                return b""
            data, self.skipping = data[cut + 1 :], False
        last = data.rfind(b"\n")
        done, self.partial = data[: last + 1], data[last + 1 :]
        if len(self.partial) > self.max_line:
            out.warn("too_long", f"a line longer than {self.max_line} bytes")
            self.partial, self.skipping = b"", True
        done, dropped = drop_long_lines(done, self.max_line)
        if dropped:
            out.warn("too_long", f"lines longer than {self.max_line} bytes", dropped)
        return done

    def close(self, out: Lines, what: str) -> None:
        """The stream ended: a partial line is dropped, with a warning."""
        if self.partial:
            out.warn("truncated", f"{what} closed inside a line")
        self.partial, self.skipping = b"", False


@dataclass(frozen=True)
class FilePosition:
    """Where reading a file resumes: its inode, and the offset after the last complete
    line taken (``skipping``: that offset lies inside a line found too long)."""

    inode: int = -1
    offset: int = 0
    skipping: bool = False


class FileLines:
    """A JSON-lines file that an LDMS stream store (or ``ldmsd_stream_subscribe -f``)
    appends to. :meth:`read` does not move the position; :meth:`advance` does, once
    what was read is stored."""

    def __init__(self, path: str | os.PathLike, max_line: int) -> None:
        self.path, self.max_line = os.fspath(path), max_line
        self.position = FilePosition()

    def read(self, limit: int) -> tuple[Lines, FilePosition]:
        """The complete lines after the position (at most ``limit`` bytes), and the
        position after them."""
        out, pos = Lines(), self.position
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                if pos.inode not in (-1, st.st_ino):
                    out.warn("rotated", f"{self.path} is a new file")
                    pos = FilePosition()
                elif st.st_size < pos.offset:
                    out.warn("truncated", f"{self.path} became shorter")
                    pos = FilePosition()
                pos = FilePosition(st.st_ino, pos.offset, pos.skipping)
                f.seek(pos.offset)
                chunk = f.read(max(min(limit, st.st_size - pos.offset), 0))
        except OSError as err:
            out.warn("source_down", f"{self.path}: {err.strerror or err}")
            return out, self.position
        return self._cut(chunk, pos, out)

    def _cut(self, chunk: bytes, pos: FilePosition, out: Lines) -> tuple[Lines, FilePosition]:
        start, skipping = 0, pos.skipping
        if skipping:
            cut = chunk.find(b"\n")
            if cut < 0:
                return out, FilePosition(pos.inode, pos.offset + len(chunk), True)
            start, skipping = cut + 1, False
        last = chunk.rfind(b"\n")
        if last < start:  # no complete line after the start
            if len(chunk) - start > self.max_line:
                out.warn("too_long", f"a line longer than {self.max_line} bytes")
                return out, FilePosition(pos.inode, pos.offset + len(chunk), True)
            return out, FilePosition(pos.inode, pos.offset + start)
        out.data, dropped = drop_long_lines(chunk[start : last + 1], self.max_line)
        if dropped:
            out.warn("too_long", f"lines longer than {self.max_line} bytes", dropped)
        return out, FilePosition(pos.inode, pos.offset + last + 1, skipping)

    def advance(self, position: FilePosition) -> None:
        self.position = position


class StreamLines:
    """Lines of a readable file descriptor (standard input: ``ldmsd_stream_subscribe``
    piped in), read without blocking."""

    def __init__(self, fd: int, max_line: int, name: str = "standard input") -> None:
        self.fd, self.name = fd, name
        self.buffer = LineBuffer(max_line)
        self.ended = False
        os.set_blocking(fd, False)

    def read(self, limit: int) -> Lines:
        out, got = Lines(), []
        if self.ended:
            out.warn("source_down", f"{self.name} has ended")
            return out
        size = 0
        while size < limit:
            try:
                chunk = os.read(self.fd, min(_RECV, limit - size))
            except BlockingIOError:
                break
            except OSError as err:
                chunk = b""
                out.warn("source_down", f"{self.name}: {err.strerror or err}")
            if not chunk:
                self.ended = True
                got.append(self.buffer.feed(b"", out))
                self.buffer.close(out, self.name)
                break
            size += len(chunk)
            got.append(self.buffer.feed(chunk, out))
        out.data = b"".join(got)
        return out


class TcpLines:
    """A TCP port on ``host`` (127.0.0.1 by default: the socket takes no credentials)
    that accepts newline-delimited JSON from any number of connections (at most
    :data:`MAX_CONNECTIONS`), each cut into lines of at most ``max_line`` bytes."""

    def __init__(self, port: int, max_line: int, host: str = "127.0.0.1") -> None:
        self.address, self.max_line = (host, port), max_line
        self.server: socket.socket | None = None
        self.selector = selectors.DefaultSelector()
        self.buffers: dict[socket.socket, LineBuffer] = {}

    def _listen(self, out: Lines) -> bool:
        if self.server is not None:
            return True
        try:
            server = socket.create_server(self.address, backlog=64)
        except OSError as err:
            out.warn("source_down", f"cannot listen on {self._where()}: {err}")
            return False
        server.setblocking(False)
        self.server = server
        self.selector.register(server, selectors.EVENT_READ)
        return True

    def _where(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    @property
    def port(self) -> int:
        """The port listened on (the one the system chose for port 0)."""
        return self.server.getsockname()[1] if self.server else self.address[1]

    def read(self, limit: int) -> Lines:
        out, got, size = Lines(), [], 0
        if not self._listen(out):
            return out
        for key, _ in self.selector.select(timeout=0):
            if key.fileobj is self.server:
                self._accept(out)
            elif size < limit:
                data = self._receive(key.fileobj, limit - size, out)
                size += len(data)
                got.append(data)
        out.data = b"".join(got)
        return out

    def _accept(self, out: Lines) -> None:
        while len(self.buffers) < MAX_CONNECTIONS:
            try:
                conn, _ = self.server.accept()
            except BlockingIOError:
                return
            except OSError as err:  # out of file descriptors: the rest wait in the backlog
                out.warn("source_down", f"cannot accept on {self._where()}: {err}")
                return
            conn.setblocking(False)
            self.buffers[conn] = LineBuffer(self.max_line)
            self.selector.register(conn, selectors.EVENT_READ)

    def _receive(self, conn: socket.socket, limit: int, out: Lines) -> bytes:
        buffer, got, size = self.buffers[conn], [], 0
        while size < limit:
            try:
                chunk = conn.recv(min(_RECV, limit - size))
            except BlockingIOError:
                break
            except OSError:  # reset by the peer, or worse: this connection is over
                chunk = b""
            if not chunk:
                got.append(buffer.feed(b"", out))
                buffer.close(out, "a connection")
                self._drop(conn)
                break
            size += len(chunk)
            got.append(buffer.feed(chunk, out))
        return b"".join(got)

    def _drop(self, conn: socket.socket) -> None:
        self.selector.unregister(conn)
        del self.buffers[conn]
        conn.close()

    def close(self) -> None:
        """Stop listening and close every connection."""
        for conn in list(self.buffers):
            self._drop(conn)
        if self.server is not None:
            self.selector.unregister(self.server)
            self.server.close()
            self.server = None
