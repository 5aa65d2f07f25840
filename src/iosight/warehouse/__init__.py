"""The warehouse: every analysis reads it, ingest writes it (DESIGN.md)."""

from iosight.warehouse._store import DEFAULT_WAREHOUSE, Warehouse, default_path

__all__ = ["DEFAULT_WAREHOUSE", "Warehouse", "default_path"]
