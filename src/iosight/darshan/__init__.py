"""Reading one Darshan source into Arrow tables of the warehouse contract.

:func:`read_source` sniffs the format; the readers behind it can be called directly.
"""

from iosight.darshan._darshan2 import read_darshan2
from iosight.darshan._darshan3 import read_darshan3, read_darshan3_bytes
from iosight.darshan._jobtotals import read_job_totals
from iosight.darshan._parser_text import read_parser_text
from iosight.darshan._parser_text_write import write_parser_text
from iosight.darshan._pydarshan import read_pydarshan
from iosight.darshan._sources import DARSHAN3_READERS, READERS, SOURCE_SUFFIXES, read_source
from iosight.darshan._tables import (
    ACCESS_SIZE_BINS,
    JOB_COLUMNS,
    MODULE_TABLES,
    LogTables,
    TableChunks,
    jobs_schema,
    table_for_module,
    table_pieces,
    warnings_in,
)

__all__ = [
    "ACCESS_SIZE_BINS",
    "DARSHAN3_READERS",
    "JOB_COLUMNS",
    "MODULE_TABLES",
    "READERS",
    "SOURCE_SUFFIXES",
    "LogTables",
    "TableChunks",
    "jobs_schema",
    "read_darshan2",
    "read_darshan3",
    "read_darshan3_bytes",
    "read_job_totals",
    "read_parser_text",
    "read_pydarshan",
    "read_source",
    "table_for_module",
    "table_pieces",
    "warnings_in",
    "write_parser_text",
]
