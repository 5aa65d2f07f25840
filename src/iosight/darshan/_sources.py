"""Which reader reads a source: sniffed from its first bytes and its name.

Readers register by name in :data:`READERS`; :func:`read_source` picks the
first whose ``sniff`` accepts the source. Adding a format touches only its module
and one ``register`` call here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from iosight._errors import CorruptLogError, UnknownNameError
from iosight._registry import Registry
from iosight.darshan._tables import LogTables

# files picked up when a directory is walked (named files are always tried)
SOURCE_SUFFIXES = (
    ".darshan",
    ".darshan.gz",
    ".darshan.bz2",
    ".darshan.txt",
    ".darshan.txt.gz",
    ".csv",
    ".csv.gz",
    ".parquet",
)


@dataclass(frozen=True)
class Reader:
    """A format: ``sniff(head, path)`` says whether ``read(path)`` applies."""

    name: str
    sniff: Callable[[bytes, Path], bool]
    read: Callable[[Path], LogTables]


READERS: Registry[Reader] = Registry("reader")


def _register(name: str, sniff, read) -> None:
    READERS.register(name)(Reader(name, sniff, read))


def _darshan3(head: bytes, path: Path) -> bool:
    # header starts with the version string, e.g. b"3.41\0"
    return head[:2] == b"3." and head[2:3].isdigit()


def _inner_head(head: bytes, path: Path) -> bytes:
    """The first bytes of the file's content, decompressed when it is gzip or bzip2."""
    if head[:2] == b"\x1f\x8b":
        import gzip as opener
    elif head[:3] == b"BZh":
        import bz2 as opener
    else:
        return head
    try:
        with opener.open(path, "rb") as fh:
            return fh.read(64)
    except (OSError, EOFError):
        return b""


def _darshan2(head: bytes, path: Path) -> bool:
    # Darshan 1.x/2.x logs are a whole-file gzip/bzip2 stream starting "2.06\0" etc.
    inner = _inner_head(head, path) if head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" else b""
    return inner[:1] in (b"1", b"2") and inner[1:2] == b"." and inner[2:3].isdigit()


def _parser_text(head: bytes, path: Path) -> bool:
    return _inner_head(head, path).lstrip().startswith(b"# darshan log version")


def _job_totals(head: bytes, path: Path) -> bool:
    from iosight.darshan._jobtotals import is_job_totals_table

    return is_job_totals_table(path)


def _read_darshan3(path: Path, job_totals_row: bool = False, chunked: bool = False) -> LogTables:
    from iosight.darshan._darshan3 import read_darshan3

    return read_darshan3(path, job_totals_row=job_totals_row, chunked=chunked)


def _read_darshan3_libdarshan(
    path: Path, job_totals_row: bool = False, chunked: bool = False
) -> LogTables:
    """``job_totals_row`` and ``chunked`` are ignored: libdarshan-util gives whole tables."""
    from iosight.darshan._pydarshan import read_pydarshan

    return read_pydarshan(path)


# how 3.x logs are read: natively (default) or through libdarshan-util (PyDarshan's cffi)
DARSHAN3_READERS = {"native": _read_darshan3, "libdarshan": _read_darshan3_libdarshan}


def _read_darshan2(path: Path) -> LogTables:
    from iosight.darshan._darshan2 import read_darshan2

    return read_darshan2(path)


def _read_parser_text(path: Path) -> LogTables:
    from iosight.darshan._parser_text import read_parser_text

    return read_parser_text(path)


def _read_job_totals(path: Path) -> LogTables:
    from iosight.darshan._jobtotals import read_job_totals

    return read_job_totals(path)


_register("darshan3", _darshan3, _read_darshan3)
_register("darshan2", _darshan2, _read_darshan2)
_register("parser-text", _parser_text, _read_parser_text)
_register("job-totals", _job_totals, _read_job_totals)


def sniff(path: Path) -> Reader:
    """The reader for ``path``, or :class:`CorruptLogError` saying what it looks like."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError as err:
        raise CorruptLogError(f"{path}: cannot open ({err.strerror})") from None
    if not head:
        raise CorruptLogError(f"{path}: empty file")
    for _, reader in READERS.items():
        if reader.sniff(head, path):
            return reader
    raise CorruptLogError(f"{path}: not a Darshan log, parser text dump or job-total table")


def read_source(
    path: str | Path,
    *,
    darshan3: str = "native",
    job_totals_row: bool = False,
    chunked: bool = False,
) -> tuple[str, LogTables]:
    """Read one source with the reader that fits; return (format name, tables).

    ``darshan3`` picks how Darshan 3.x logs are read (:data:`DARSHAN3_READERS`):
    ``"native"`` parses the file format itself, ``"libdarshan"`` goes through
    libdarshan-util as PyDarshan does (the oracle the native reader is tested against).
    ``job_totals_row``: the native reader gives a log's ``job_totals`` as its row (a
    dict, see :func:`~iosight.darshan.read_darshan3`); every other reader, a table.
    ``chunked``: the native reader may give DXT tables as
    :class:`~iosight.darshan.TableChunks` (iterate them with
    :func:`~iosight.darshan.table_pieces`).
    """
    path = Path(path)
    if darshan3 not in DARSHAN3_READERS:
        raise UnknownNameError("3.x reader", darshan3, list(DARSHAN3_READERS))
    reader = sniff(path)
    if reader.name == "darshan3":
        read = DARSHAN3_READERS[darshan3]
        return reader.name, read(path, job_totals_row=job_totals_row, chunked=chunked)
    return reader.name, reader.read(path)
