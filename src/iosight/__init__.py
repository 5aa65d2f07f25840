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

__version__ = "0.1.0"
__all__ = ["IosightError", "Warehouse", "__version__"]


def __getattr__(name: str):
    # lazy: importing iosight must not import pyarrow/duckdb (CLI start-up, workers)
    if name == "Warehouse":
        from iosight.warehouse import Warehouse

        return Warehouse
    raise AttributeError(name)
