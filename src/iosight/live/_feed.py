"""What one ``poll`` of a live feed did: the uniform report every feed returns."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

LOG = logging.getLogger("iosight.live")


@dataclass
class FeedReport:
    """One bounded step of a feed.

    ``rows``: rows written to the warehouse; ``warnings``: counts by kind
    (``malformed``, ``source_down``, ``slow``, ``future_clock``, ...); ``lag``: seconds
    from the newest data read to the poll's clock (``None`` when nothing was read).
    """

    rows: int = 0
    warnings: Counter = field(default_factory=Counter)
    lag: float | None = None

    def warn(self, kind: str, line: str) -> None:
        """Count a warning of ``kind`` and log its one line on ``iosight.live``."""
        self.warnings[kind] += 1
        LOG.warning("%s: %s", kind, line)
