"""The warehouse: every analysis reads it, ingest writes it (DESIGN.md)."""

from iosight.warehouse._ingest import IngestReport, discover, ingest
from iosight.warehouse._store import DEFAULT_WAREHOUSE, Warehouse, default_path

__all__ = ["DEFAULT_WAREHOUSE", "IngestReport", "Warehouse", "default_path", "discover", "ingest"]
