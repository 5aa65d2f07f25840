"""Which reader reads a source: sniffed from its first bytes and its name.

Readers register in :data:`READERS`, one :class:`Reader` per format and way of
reading it; :func:`read_source` picks the format whose native reader's ``sniff``
accepts the source, then that format's reader of the chosen way. Adding a format or
a way touches only its module and one ``_register`` call here; the choices and error
messages are built from the registry.
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
    """One way to read one source format.

    ``format``: what ingest records as a source's format; ``what``: the format in words,
    for error messages; ``sniff(head, path)``: whether a source whose first bytes are
    ``head`` is of the format; ``read(path, chunked)``: its tables (``chunked``: a
    reader that can may give big DXT tables as :class:`~iosight.darshan.TableChunks`);
    ``way``: how it reads, the choice of ``--reader`` (``native``: iosight's own
    parser; ``libdarshan``: through libdarshan-util, as PyDarshan does).
    """

    format: str
    what: str
    sniff: Callable[[bytes, Path], bool]
    read: Callable[[Path, bool], LogTables]
    way: str = "native"

    @property
    def name(self) -> str:
        """The registry name: the format, with its way when that is not native."""
        return self.format if self.way == "native" else f"{self.format}-{self.way}"


READERS: Registry[Reader] = Registry("reader")


def _register(reader: Reader) -> None:
    READERS.register(reader.name)(reader)


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


def _read_darshan3(path: Path, chunked: bool) -> LogTables:
    from iosight.darshan._darshan3 import read_darshan3

    return read_darshan3(path, chunked=chunked)


def _read_darshan3_libdarshan(path: Path, chunked: bool) -> LogTables:
    """``chunked`` is ignored: libdarshan-util gives whole tables."""
    from iosight.darshan._pydarshan import read_pydarshan

    return read_pydarshan(path)


def _read_darshan2(path: Path, chunked: bool) -> LogTables:
    from iosight.darshan._darshan2 import read_darshan2

    return read_darshan2(path)


def _read_parser_text(path: Path, chunked: bool) -> LogTables:
    from iosight.darshan._parser_text import read_parser_text

    return read_parser_text(path)


def _read_job_totals(path: Path, chunked: bool) -> LogTables:
    from iosight.darshan._jobtotals import read_job_totals

    return read_job_totals(path)


_register(Reader("darshan3", "Darshan log", _darshan3, _read_darshan3))
_register(Reader("darshan3", "Darshan log", _darshan3, _read_darshan3_libdarshan, "libdarshan"))
_register(Reader("darshan2", "Darshan log", _darshan2, _read_darshan2))
_register(Reader("parser-text", "parser text dump", _parser_text, _read_parser_text))
_register(Reader("job-totals", "job-total table", _job_totals, _read_job_totals))


def reader_ways() -> list[str]:
    """The ways a source can be read (``--reader``): every registered reader's."""
    return sorted({r.way for _, r in READERS.items()})


def check_reader_way(way: str) -> None:
    """Raise :class:`UnknownNameError` naming the registered ways unless ``way`` is one."""
    if way not in reader_ways():
        raise UnknownNameError("3.x reader", way, reader_ways())


def sniff(path: Path, way: str = "native") -> Reader:
    """The reader for ``path`` (read ``way`` when its format can be, else natively), or
    :class:`CorruptLogError` saying what it looks like."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError as err:
        raise CorruptLogError(f"{path}: cannot open ({err.strerror})") from None
    if not head:
        raise CorruptLogError(f"{path}: empty file")
    for _, reader in READERS.items():
        if reader.way == "native" and reader.sniff(head, path):
            alt = f"{reader.format}-{way}"
            return READERS.get(alt) if alt in READERS.names() else reader
    raise CorruptLogError(f"{path}: not a {_formats_in_words()}")


def _formats_in_words() -> str:
    """``a, b or c``: what every format is, each said once, in registry order."""
    whats = list(dict.fromkeys(r.what for _, r in READERS.items()))
    return whats[0] if len(whats) == 1 else f"{', '.join(whats[:-1])} or {whats[-1]}"


def read_source(
    path: str | Path, *, reader: str = "native", chunked: bool = False
) -> tuple[str, LogTables]:
    """Read one source with the reader that fits; return (format name, tables).

    ``reader`` picks how a format that has several readers is read (:func:`reader_ways`):
    ``"native"`` parses the file format itself, ``"libdarshan"`` reads Darshan 3.x logs
    through libdarshan-util as PyDarshan does (the oracle the native reader is tested
    against). ``chunked``: the native 3.x reader may give DXT tables as
    :class:`~iosight.darshan.TableChunks` (iterate them with
    :func:`~iosight.darshan.table_pieces`).

    ``path``: the source (a log, a parser dump, a job-total table).
    """
    path = Path(path)
    check_reader_way(reader)
    chosen = sniff(path, reader)
    return chosen.format, chosen.read(path, chunked)
