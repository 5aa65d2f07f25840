"""The warehouse: every analysis reads it, ingest writes it (DESIGN.md)."""

from iosight.warehouse._compact import AUTO_SMALL_FILES, CompactReport, auto_compact, compact
from iosight.warehouse._follow import (
    DEFAULT_INTERVAL,
    DEFAULT_SETTLE,
    FollowBatch,
    FollowReport,
    check_follow_args,
    follow,
)
from iosight.warehouse._ingest import (
    DEFAULT_BATCH_SIZE,
    IngestReport,
    check_ingest_args,
    discover,
    ingest,
)
from iosight.warehouse._known import KNOWN_AT, known_at_sql
from iosight.warehouse._provenance import data_kind, kind_of, synthetic_flag
from iosight.warehouse._replay import DEFAULT_GROUP, ReplayReport, check_replay_args, replay
from iosight.warehouse._single import log_warehouse
from iosight.warehouse._store import (
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_WAREHOUSE,
    Warehouse,
    default_path,
    is_warehouse_dir,
    new_batch_id,
    stage_tables,
)
from iosight.warehouse._summary import JobSummary, find_job, job_summary

__all__ = [
    "AUTO_SMALL_FILES",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_GROUP",
    "DEFAULT_INTERVAL",
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_SETTLE",
    "DEFAULT_WAREHOUSE",
    "KNOWN_AT",
    "CompactReport",
    "FollowBatch",
    "FollowReport",
    "IngestReport",
    "JobSummary",
    "ReplayReport",
    "Warehouse",
    "auto_compact",
    "check_follow_args",
    "check_ingest_args",
    "check_replay_args",
    "compact",
    "data_kind",
    "default_path",
    "discover",
    "find_job",
    "follow",
    "ingest",
    "is_warehouse_dir",
    "job_summary",
    "kind_of",
    "known_at_sql",
    "log_warehouse",
    "new_batch_id",
    "replay",
    "stage_tables",
    "synthetic_flag",
]
