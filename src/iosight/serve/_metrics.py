"""``/metrics``: the served warehouse in Prometheus' exposition format.

A custom collector reads the warehouse at each scrape (a few bounded queries, the
answer kept a few seconds), not metrics held in the process: what it exposes is what
the warehouse holds now, whichever process wrote it (follow mode, ``iosight live``'s
feeds). Families (all gauges, bytes and seconds as Prometheus names them):

- ``iosight_rate_bytes_per_second{direction, source}``: the last complete bin's rate,
  from the logs' timeline (``source="logs"``) and from live rates (``"live_rates"``);
  ``iosight_rate_bin_start_seconds{source}`` says which bin;
- ``iosight_burst_probability{direction, lead_minutes, model, information}`` at 5, 30,
  60 and 120 minutes, and ``iosight_forecast_as_of_seconds{direction}``;
- ``iosight_ingest_lag_seconds{table}``: now minus the newest ``known_at`` of each table
  that has one; ``iosight_ingest_backlog_files``: the log directory's files waiting to
  settle, as ``iosight live`` last published it;
- ``iosight_ingest_errors{kind}``: rows of ``ingest_errors`` by kind, and
  ``iosight_source_warnings{source, kind}``: each live source's warnings by kind, as
  ``iosight live`` last published them.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from iosight._errors import IosightError
from iosight.serve._decisions import DIRECTIONS, LIVE_RATES, Decisions, last_logs_bin, live_rates

if TYPE_CHECKING:
    from prometheus_client.core import Metric

    from iosight.serve._readonly import ServedWarehouse

LEAD_MINUTES = (5, 30, 60, 120)
KNOWN_TABLES = ("jobs", "live_io", LIVE_RATES, "sched_jobs")  # tables with known_at
LIVE_STATE = "live"  # the state iosight live publishes (iosight.live.STATUS)
TTL_S = 5.0
# ingest_errors kinds, from the start of the reason the ingest wrote (iosight.parallel)
_ERROR_KINDS = (("timed out", "timeout"), ("cannot read (", "unreadable"),
                ("reader crashed", "crashed"), ("worker process exited", "crashed"))  # fmt: skip


class WarehouseCollector:
    """A ``prometheus_client`` collector over a served warehouse; the families of a
    scrape are kept ``ttl`` seconds, so a burst of scrapes costs one read."""

    def __init__(
        self, decisions: Decisions, ttl: float = TTL_S, clock: Callable[[], float] = time.time
    ) -> None:
        self.decisions = decisions
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._kept: tuple[float, list[Metric]] | None = None

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            now = self.clock()
            if self._kept is None or now - self._kept[0] >= self.ttl:
                self._kept = (now, self._families(now))
            families = self._kept[1]
        yield from families

    def _families(self, now: float) -> list[Metric]:
        wh = self.decisions.wh
        wh.refresh()
        return [*_rates(wh), *_probabilities(self.decisions), _lags(wh, now),
                *_backlog(wh), _ingest_errors(wh), _warnings(wh)]  # fmt: skip


def metrics_text(collector: WarehouseCollector) -> bytes:
    """One scrape of ``collector`` in the text exposition format."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)


def _gauge(name: str, doc: str, labels: list[str]):
    from prometheus_client.core import GaugeMetricFamily

    return GaugeMetricFamily(name, doc, labels=labels)


def _rates(wh: ServedWarehouse) -> list[Metric]:
    """The rates of the last complete bin, of the logs' timeline and of the live rates."""
    rate = _gauge("iosight_rate_bytes_per_second", "System I/O rate in the last complete bin",
                  ["direction", "source"])  # fmt: skip
    when = _gauge("iosight_rate_bin_start_seconds", "Start of the bin the rate is of (epoch s)",
                  ["source"])  # fmt: skip
    for source, row in (("logs", last_logs_bin(wh)), (LIVE_RATES, _last_live_bin(wh))):
        if row is None:
            continue
        start, width, read, write = row
        when.add_metric([source], start)
        for direction, value in (("read", read), ("write", write)):
            if math.isfinite(value):  # a live source may have no sample of one direction
                rate.add_metric([direction, source], value / width)
    return [rate, when]


def _last_live_bin(wh: ServedWarehouse) -> tuple[float, float, float, float] | None:
    """The live rates' last complete bin (their own bins, summed over sources)."""
    if not wh.has_table(LIVE_RATES):
        return None
    width = (
        wh.connect()
        .execute(
            f"select min(d) from (select bin_start - lag(bin_start) over (partition by source "
            f"order by bin_start) d from (select distinct source, bin_start from {LIVE_RATES}))"
            " where d > 0"
        )
        .fetchall()[0][0]
    )
    df, last = live_rates(wh, float(width or 300.0))
    if df is None:
        return None
    row = df[df["bin_start"] == last].iloc[0]
    return last, float(width or 300.0), float(row["read_bytes"]), float(row["write_bytes"])


def _probabilities(decisions: Decisions) -> list[Metric]:
    """The served forecast's burst probability at each of ``LEAD_MINUTES`` per direction."""
    prob = _gauge("iosight_burst_probability", "Forecast probability of a burst bin",
                  ["direction", "lead_minutes", "model", "information"])  # fmt: skip
    as_of = _gauge("iosight_forecast_as_of_seconds", "End of the last bin the forecast used",
                   ["direction"])  # fmt: skip
    for d in DIRECTIONS:
        try:
            served = decisions.forecast(d)
        except IosightError:
            continue  # no forecaster of this direction (or no timeline): nothing to expose
        by_lead = dict(zip(served.bins["lead"], served.bins["probability"], strict=True))
        as_of.add_metric([d], served.as_of)
        for minutes in LEAD_MINUTES:
            lead = minutes * 60 / served.bin_width
            if float(lead).is_integer() and int(lead) in by_lead:
                prob.add_metric([d, str(minutes), served.model, served.information],
                                float(by_lead[int(lead)]))  # fmt: skip
    return [prob, as_of]


def _lags(wh: ServedWarehouse, now: float) -> Metric:
    """Now minus the newest ``known_at`` of each table that records one."""
    from iosight.warehouse import KNOWN_AT

    lag = _gauge("iosight_ingest_lag_seconds", "Seconds since the newest row became known",
                 ["table"])  # fmt: skip
    for table in KNOWN_TABLES:
        if not wh.has_table(table):
            continue
        column = KNOWN_AT if table == "jobs" else "known_at"
        newest = wh.connect().execute(f"select max({column}) from {table}").fetchall()[0][0]
        if newest is not None and math.isfinite(float(newest)):
            lag.add_metric([table], now - float(newest))
    return lag


def _backlog(wh: ServedWarehouse) -> list[Metric]:
    """The log directory's files waiting to settle, where ``iosight live`` published it."""
    logs = ((wh.read_state(LIVE_STATE) or {}).get("sources") or {}).get("logs") or {}
    if logs.get("backlog") is None:
        return []
    backlog = _gauge("iosight_ingest_backlog_files", "Log files waiting to be read", [])
    backlog.add_metric([], float(logs["backlog"]))
    return [backlog]


def _kind_sql() -> str:
    """SQL for an ``ingest_errors`` row's kind: timeout, unreadable (cannot be opened),
    crashed (the reader killed its worker) or invalid (the reader refused the log)."""
    whens = " ".join(f"when starts_with(error, '{start}') then '{kind}'"
                     for start, kind in _ERROR_KINDS)  # fmt: skip
    return f"case {whens} else 'invalid' end"


def _ingest_errors(wh: ServedWarehouse) -> Metric:
    errors = _gauge("iosight_ingest_errors", "Sources that failed to ingest, by kind", ["kind"])
    if wh.has_table("ingest_errors"):
        rows = (
            wh.connect()
            .execute(
                f"select {_kind_sql()} kind, count(*) from ingest_errors group by 1 order by 1"
            )
            .fetchall()
        )
        for kind, n in rows:
            errors.add_metric([kind], float(n))
    return errors


def _warnings(wh: ServedWarehouse) -> Metric:
    """Each live source's warnings by kind, as ``iosight live`` last published them."""
    warned = _gauge("iosight_source_warnings", "Warnings of a live source by kind, since start",
                    ["source", "kind"])  # fmt: skip
    sources = (wh.read_state(LIVE_STATE) or {}).get("sources") or {}
    for source, entry in sorted(sources.items()):
        for kind, n in sorted((entry.get("warnings") or {}).items()):
            warned.add_metric([source, kind], float(n))
    return warned
