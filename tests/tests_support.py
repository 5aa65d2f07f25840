"""Helpers importable by test modules (pytest puts tests/ on sys.path via rootdir conftest)."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("IOSIGHT_SHARED", Path(__file__).resolve().parents[2] / "shared"))
