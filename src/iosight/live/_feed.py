"""What one poll of a live feed did: the uniform report every feed returns."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

#: the logger of the live feeds: one warning line per kind of bad input per poll
LOG = logging.getLogger("iosight.live")


@dataclass
class FeedReport:
    """One ``poll``: ``rows`` written, ``messages`` taken, warnings counted by kind
    (``malformed``, ``unknown_module``, ``future_clock``, ``source_down``, ...) and
    ``lag``, seconds from the newest datum taken to the poll's clock (None: none)."""

    feed: str  # the feed's name, as its log lines start
    now: float  # the poll's clock, epoch s
    rows: int = 0
    messages: int = 0
    warnings: Counter[str] = field(default_factory=Counter)  # kind -> bad inputs
    lag: float | None = None

    def warn(self, kind: str, count: int, detail: str) -> None:
        """Count ``count`` bad inputs of ``kind`` and log one line for them, ``detail``
        saying which (a name, an example)."""
        if count <= 0:
            return
        self.warnings[kind] += count
        LOG.warning("%s: %d %s: %s", self.feed, count, kind, detail)

    def line(self) -> str:
        """One log line of the poll."""
        lag = "" if self.lag is None else f", lag {self.lag:.1f} s"
        bad = "".join(f", {n} {kind}" for kind, n in sorted(self.warnings.items()))
        return f"{self.feed}: {self.messages} messages, {self.rows} rows{lag}{bad}"
