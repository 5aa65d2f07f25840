"""iosight: HPC I/O telemetry, from Darshan logs to decisions.

The public entry point for notebooks is :class:`iosight.Warehouse`::

    import iosight
    wh = iosight.Warehouse("wh/")
    wh.jobs()                      # one row per ingested log
    wh.table("posix")              # every POSIX counter, Darshan's names
    wh.sql("select count(*) from jobs")
"""

from __future__ import annotations

from iosight._errors import IosightError
from iosight._lazy import lazy_exports

__version__ = "0.1.0"

# lazy: importing iosight must not import pyarrow/duckdb (CLI start-up, workers)
__getattr__, __dir__, _exports = lazy_exports(__name__, {"warehouse": ("Warehouse",)})
__all__ = ["IosightError", "__version__", *_exports]
