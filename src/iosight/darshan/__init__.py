"""Reading one Darshan source into Arrow tables of the warehouse contract.

:func:`read_source` sniffs the format; the readers behind it can be called directly.
Exports load on first use (:mod:`iosight._lazy`): a job summary that needs the
access-size bins does not import every reader.
"""

from iosight._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_darshan2": ("read_darshan2",),
        "_darshan3": ("read_darshan3", "read_darshan3_bytes"),
        "_parser_text": ("read_parser_text", "write_parser_text"),
        "_pydarshan": ("read_pydarshan",),
        "_sources": (
            "READERS",
            "SOURCE_SUFFIXES",
            "Reader",
            "check_reader_way",
            "read_source",
            "reader_ways",
        ),
        "_tables": (
            "ACCESS_SIZE_BINS",
            "JOB_COLUMNS",
            "MODULE_TABLES",
            "LogTables",
            "RowBlock",
            "TableChunks",
            "jobs_schema",
            "jobs_table",
            "path_text",
            "table_pieces",
            "warnings_in",
        ),
    },
)
