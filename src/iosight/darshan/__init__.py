"""Reading one Darshan source into Arrow tables of the warehouse contract."""

from iosight.darshan._tables import (
    JOB_COLUMNS,
    MODULE_TABLES,
    LogTables,
    jobs_schema,
    table_for_module,
)

__all__ = ["JOB_COLUMNS", "MODULE_TABLES", "LogTables", "jobs_schema", "table_for_module"]
