"""What follows a batch of new jobs: the tables derived from them brought up to date.

Follow mode (``iosight ingest --follow``) and ``iosight live`` both run this after each
committed batch, so the insights, the stored timeline and the forecasts always cover the
logs that have landed, and cost what the new jobs cost (issue #27, items 2 and 3).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iosight.bursts import FollowForecasts
    from iosight.warehouse import Warehouse


def _utc(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class Refresh:
    """The derived tables of ``warehouse``: insights of new jobs, the stored timeline's
    bins they touch (only where the warehouse has a timeline: a follow does not start one
    unasked), and the forecasts of the saved ``logs`` forecasters ``forecasters`` at every
    bin boundary passed. Each method returns the lines worth logging."""

    def __init__(self, warehouse: Warehouse, forecasters: list[str] | tuple[str, ...] = ()):
        self.warehouse = warehouse
        self.forecasts: FollowForecasts | None = None
        if forecasters:
            from iosight.bursts import FollowForecasts

            self.forecasts = FollowForecasts(warehouse, list(forecasters))

    def forecast(self) -> list[str]:
        """Forecast at the bin boundaries passed since the last forecast (a restart
        catches up here)."""
        if self.forecasts is None:
            return []
        passed = self.forecasts.update()
        if not passed:
            return []
        return [f"forecasts at {passed} bin boundaries, the last {_utc(self.forecasts.as_of)}"]

    def after_batch(self) -> list[str]:
        """After a committed batch with new jobs."""
        from iosight.insights import compute_insights

        compute_insights(self.warehouse)
        return self.update_timeline() + self.forecast()

    def update_timeline(self) -> list[str]:
        """The new jobs added to the stored timeline, only the bins they touch (a full
        rebuild, saying why, when an update cannot equal one)."""
        if not self.warehouse.has_table("timeline"):
            return []
        from iosight.timeline import update_timeline

        done = update_timeline(self.warehouse)
        return [done.line()] if done.rebuilt else []
