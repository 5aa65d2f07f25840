"""The warehouse: every analysis reads it, ingest writes it.

Exports load on first use (:mod:`iosight._lazy`): opening a warehouse to read it does
not import the readers, pandas or pyarrow that ingest needs.
"""

from iosight._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_compact": (
            "AUTO_SMALL_FILES",
            "MEMORY_LIMIT",
            "CompactReport",
            "Merger",
            "auto_compact",
            "compact",
            "merge_files",
        ),
        "_follow": (
            "DEFAULT_INTERVAL",
            "DEFAULT_SETTLE",
            "FollowBatch",
            "Follower",
            "FollowReport",
            "check_follow_args",
            "follow",
            "stopped_by_signals",
        ),
        "_ingest": (
            "DEFAULT_BATCH_SIZE",
            "IngestReport",
            "check_ingest_args",
            "ingest",
        ),
        "_io_totals": ("IO_TOTALS", "IO_TOTAL_COLUMNS", "io_totals"),
        "_jobfiles": ("for_job", "for_jobs"),
        "_keyrange": ("for_key_range", "table_columns"),
        "_known": ("KNOWN_AT", "known_at_sql"),
        "_provenance": ("data_kind", "kind_of", "synthetic_flag"),
        "_replay": ("ReplayReport", "replay"),
        "_rows": ("Rows", "records_of"),
        "_single": ("log_warehouse",),
        "_store": (
            "DEFAULT_LOCK_TIMEOUT",
            "JOIN_MEMORY",
            "Warehouse",
            "default_path",
            "is_warehouse_dir",
            "new_batch_id",
            "parquet_rows",
            "stage_tables",
            "staged_writer",
        ),
        "_summary": ("JobSummary", "find_job", "job_summary"),
    },
)
