"""The warehouse: every analysis reads it, ingest writes it (DESIGN.md)."""

from iosight.warehouse._ingest import (
    DEFAULT_BATCH_SIZE,
    IngestReport,
    check_ingest_args,
    discover,
    ingest,
)
from iosight.warehouse._provenance import data_kind, kind_of, synthetic_flag
from iosight.warehouse._single import log_warehouse
from iosight.warehouse._store import (
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_WAREHOUSE,
    Warehouse,
    default_path,
    is_warehouse_dir,
)
from iosight.warehouse._summary import JobSummary, find_job, job_summary

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_WAREHOUSE",
    "IngestReport",
    "JobSummary",
    "Warehouse",
    "check_ingest_args",
    "data_kind",
    "default_path",
    "discover",
    "find_job",
    "ingest",
    "is_warehouse_dir",
    "job_summary",
    "kind_of",
    "log_warehouse",
    "synthetic_flag",
]
