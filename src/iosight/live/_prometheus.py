"""The file system's server-side read and write rates, read from Prometheus.

A facility that exports its file servers' byte counters to Prometheus (the Lustre
exporter's per-OST ``lustre_read_bytes_total`` / ``lustre_write_bytes_total``, its
jobstats' ``lustre_job_*``, the node exporter's NFS or disk counters) knows the system's
read/write rate up to now: the ``live`` information regime of the burst forecasts, whose
features assume it (Saeedizade et al. (2023), §V). Each :meth:`PrometheusFeed.poll` asks
Prometheus' ``/api/v1/query_range`` for the 5-minute bins that ended since the last poll
and appends them to table ``live_rates``, in the timeline's units (bytes in the bin).

How a rate becomes a bin. A range query evaluates its PromQL at ``start``, ``start +
step``, ... With ``step`` the bin width ``w`` and ``start`` a multiple of ``w``, each
evaluation time ``t`` is the end of a timeline bin, and ``rate(counter[w])`` at ``t`` is
the counter's increase over ``[t - w, t]`` divided by ``w``: the sample at ``t`` is the
bin ``[t - w, t)``, whose ``bin_start`` is ``t - w`` and whose bytes are ``rate * w``.
Consecutive windows tile time, so no byte is counted twice or left out (a range window
other than ``w`` would sample the bin's rate instead: the default queries write it as
``$window``, which the feed replaces by ``w`` in seconds). A bin Prometheus has no sample
for gets no row (unknown is not zero).

Bounded. One poll fetches at most ``max_points`` bins (a feed that is behind catches up
over several polls, the report's ``lag`` says how far behind it is), reads at most
``max_bytes`` of each answer and gives up on one not read within ``timeout`` seconds.
What goes wrong is counted by kind, with one warning line: a server that cannot be
reached, answers HTTP 5xx or closes the connection mid-answer is ``source_down``, one
not read in time ``slow``, a query refused (HTTP 4xx) ``bad_query``, an answer over
``max_bytes`` ``too_large``, one that cannot be read ``malformed``. Nothing is written
then, and the same bins are asked again at the next poll. The resume point (the end of
the last bin fetched) is table ``live_rates_resume``, one row per source, committed
with the rows.
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from iosight._errors import IosightError, check_param, is_integer
from iosight.live._feed import LOG, FeedReport

if TYPE_CHECKING:
    import pyarrow as pa

    from iosight.warehouse import Warehouse

LIVE_RATES = "live_rates"
RESUME = "live_rates_resume"
BIN_WIDTH = 300.0  # the timeline's bins (seconds)
MAX_POINTS = 11_000  # Prometheus refuses a range query of more points per series

#: PromQL per exporter: (read bytes/s, write bytes/s) of the whole file system; ``$window``
#: is the bin width. The Lustre exporter labels a server's counters ``component="ost"``
#: (its clients' own ``lustre_*_bytes_total`` carry ``component="client"``: the same bytes
#: seen from the other end, so they are left out).
PRESETS: dict[str, tuple[str, str]] = {
    "lustre": (
        'sum(rate(lustre_read_bytes_total{component="ost"}[$window]))',
        'sum(rate(lustre_write_bytes_total{component="ost"}[$window]))',
    ),
    "lustre-jobstats": (
        'sum(rate(lustre_job_read_bytes_total{component="ost"}[$window]))',
        'sum(rate(lustre_job_write_bytes_total{component="ost"}[$window]))',
    ),
    "node-nfs": (
        "sum(rate(node_mountstats_nfs_read_bytes_total[$window]))",
        "sum(rate(node_mountstats_nfs_write_bytes_total[$window]))",
    ),
    "node-disk": (
        "sum(rate(node_disk_read_bytes_total[$window]))",
        "sum(rate(node_disk_written_bytes_total[$window]))",
    ),
}


@dataclass(frozen=True)
class PrometheusOptions:
    """Where the rates come from and how much one poll may fetch.

    ``url``: Prometheus' base URL (``http://host:9090``). ``preset`` names the default
    queries (:data:`PRESETS`); ``read_query`` / ``write_query`` override them (PromQL
    giving bytes per second; several series in an answer are summed). ``source``: the
    name the rows carry (default: the preset's). ``bin_width``: seconds per bin and the
    query's step. ``delay``: a bin is fetched this many seconds after it ends (at least
    the scrape interval, so its last samples are in). ``backfill``: how far back the
    first poll of a new warehouse starts. ``max_points``: bins per poll; ``max_bytes``:
    the largest answer read; ``timeout``: seconds to wait for one.
    """

    url: str
    preset: str = "lustre"
    read_query: str | None = None
    write_query: str | None = None
    source: str | None = None
    bin_width: float = BIN_WIDTH
    delay: float = 60.0
    backfill: float = 86400.0
    max_points: int = 1000
    max_bytes: int = 8 << 20
    timeout: float = 10.0

    def __post_init__(self) -> None:
        scheme = urllib.parse.urlsplit(self.url).scheme
        check_param("url", self.url, scheme in ("http", "https"), "an http:// or https:// URL")
        if self.preset not in PRESETS:
            raise IosightError(
                f"unknown Prometheus preset {self.preset!r}; choose one of: {', '.join(PRESETS)}"
            )
        for name in ("bin_width", "timeout"):
            value = getattr(self, name)
            check_param(name, value, _positive(value), "a number of seconds > 0")
        for name in ("delay", "backfill"):
            value = getattr(self, name)
            check_param(name, value, _positive(value, zero=True), "a number of seconds >= 0")
        ok = is_integer(self.max_points) and 1 <= self.max_points <= MAX_POINTS
        check_param("max_points", self.max_points, ok, f"an integer in 1..{MAX_POINTS}")
        ok = is_integer(self.max_bytes) and self.max_bytes >= 1
        check_param("max_bytes", self.max_bytes, ok, "an integer >= 1")

    @property
    def name(self) -> str:
        """The ``source`` the rows carry."""
        return self.source or self.preset

    def queries(self) -> dict[str, str]:
        """The PromQL per direction, ``$window`` replaced by the bin width."""
        read, write = PRESETS[self.preset]
        given = {"read": self.read_query or read, "write": self.write_query or write}
        window = f"{self.bin_width:g}s"
        return {d: Template(q).safe_substitute(window=window) for d, q in given.items()}


def _positive(value: object, zero: bool = False) -> bool:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return ok and (value >= 0 if zero else value > 0)


class SourceFailure(Exception):
    """One query that brought no usable answer: ``kind`` is the report's warning kind."""

    def __init__(self, kind: str, line: str) -> None:
        super().__init__(line)
        self.kind = kind


@dataclass(frozen=True)
class BinRange:
    """The bins one poll asks for: evaluation times ``first_end``, ``first_end + width``,
    ... ``last_end`` (bin ends), ``bins`` of them."""

    first_end: float
    last_end: float
    width: float

    @property
    def bins(self) -> int:
        return int(round((self.last_end - self.first_end) / self.width)) + 1


def plan_range(
    until: float, now: float, *, width: float, delay: float, max_points: int
) -> BinRange | None:
    """The bins after the resume point ``until`` (a bin end) that have ended ``delay``
    seconds before ``now``, at most ``max_points`` of them; ``None`` when there are none."""
    last = math.floor((now - delay) / width) * width
    first = until + width
    if last < first:
        return None
    last = min(last, first + (max_points - 1) * width)
    return BinRange(first, last, width)


def rates_from_response(body: bytes, span: BinRange, report: FeedReport) -> dict[float, float]:
    """Bytes per bin (``bin_start`` -> bytes) from one ``query_range`` answer: the series
    of the matrix summed, each sample at ``t`` the bin ``[t - width, t)`` holding ``rate *
    width`` bytes; the samples read are counted as the report's ``messages``. An answer
    that cannot be read raises :class:`SourceFailure`; a sample that is off the query's
    grid, not a number or negative is left out and counted (one warning line per answer)."""
    out: dict[float, float] = {}
    bad: list[str] = []
    for series in _matrix(body):
        points = _values(series)
        report.messages += len(points)
        for point in points:
            value = _sample(point, span)
            if isinstance(value, str):
                bad.append(value)
                continue
            start = value[0] - span.width
            out[start] = out.get(start, 0.0) + value[1] * span.width
    if bad:
        report.warn("malformed", len(bad), f"samples left out, the first: {bad[0]}")
    return out


def _matrix(body: bytes) -> list:
    """The series of a successful ``matrix`` answer."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SourceFailure("malformed", f"the answer is not JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else None
        raise SourceFailure("malformed", f"the answer is not a success: {error or doc!r:.200}")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, dict) else data
        raise SourceFailure("malformed", f"the answer is no range (matrix) result: {kind!r:.80}")
    result = data.get("result")
    if not isinstance(result, list):
        raise SourceFailure("malformed", "the answer's result is not a list of series")
    return result


def _values(series: object) -> list:
    values = series.get("values") if isinstance(series, dict) else None
    if not isinstance(values, list):
        raise SourceFailure("malformed", "a series of the answer has no list of values")
    return values


def _sample(point: object, span: BinRange) -> tuple[float, float] | str:
    """``(t, rate)`` of one ``[t, "value"]`` pair, or why it is left out."""
    try:
        t, rate = float(point[0]), float(point[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return f"no [time, value] pair: {point!r:.80}"
    k = (t - span.first_end) / span.width
    if not (0 <= k <= span.bins - 1 and abs(k - round(k)) < 1e-6):
        return f"a sample at {t} is off the query's grid"
    if not math.isfinite(rate) or rate < 0:
        return f"a rate of {point[1]!r} at {t} is no byte rate"
    return span.first_end + round(k) * span.width, rate


def prometheus_feed(settings: Mapping, base: Path | None = None) -> PrometheusFeed:
    """The feed of ``iosight live``'s ``feeds: {prometheus: {...}}`` section, whose keys
    are :class:`PrometheusOptions`' fields (``url`` at least); ``bin_width``, ``delay``,
    ``backfill`` and ``timeout`` are durations (``5min``, ``60s``, ``1d``); it reads no
    file (``base`` is unused)."""
    from iosight.live._config import feed_options

    durations = ("bin_width", "delay", "backfill", "timeout")
    if "url" not in settings:
        raise IosightError("live config: feeds.prometheus needs 'url' (Prometheus' base URL)")
    return PrometheusFeed(
        PrometheusOptions(**feed_options("prometheus", settings, PrometheusOptions, durations))
    )


class PrometheusFeed:
    """Server-side rates from Prometheus into ``live_rates``, one bounded step per
    :meth:`poll` (no thread of its own: a service calls it on a schedule). ``options``:
    the server, queries and bins (:class:`PrometheusOptions`)."""

    def __init__(self, options: PrometheusOptions) -> None:
        self.options = options
        self._failing: str | None = None  # the kind of the last poll's failure

    def poll(self, warehouse: Warehouse, now: float | None = None) -> FeedReport:
        """Fetch the bins ended by ``now`` (epoch s; default the clock) since the resume
        point (at most ``max_points``) and commit them to ``warehouse`` with the new
        resume point; a failed query writes nothing."""
        now = time.time() if now is None else float(now)
        o = self.options
        report = FeedReport(f"prometheus {o.name}", now)
        until = resume_point(warehouse, o.name)
        if until is None:
            until = math.floor((now - o.delay - o.backfill) / o.bin_width) * o.bin_width
        span = plan_range(until, now, width=o.bin_width, delay=o.delay, max_points=o.max_points)
        if span is None:
            report.lag = now - until
            return report
        try:
            bins = {d: self._fetch(q, span, report) for d, q in o.queries().items()}
        except SourceFailure as failure:
            self._failed(failure, report)
            return report
        self._recovered()
        table = _rows(bins, o.name, now)
        _commit(warehouse, table, o.name, span.last_end, now)
        report.rows, report.lag = table.num_rows, now - span.last_end
        return report

    def _fetch(self, query: str, span: BinRange, report: FeedReport) -> dict[float, float]:
        body = query_range(self.options, query, span)
        return rates_from_response(body, span, report)

    def _failed(self, failure: SourceFailure, report: FeedReport) -> None:
        """Count the failure; its warning line only when the last poll did not fail the
        same way (a Prometheus down for an hour is one line, not one per poll)."""
        if self._failing == failure.kind:
            report.warnings[failure.kind] += 1
        else:
            report.warn(failure.kind, 1, f"Prometheus at {self.options.url}: {failure}")
        self._failing = failure.kind

    def _recovered(self) -> None:
        if self._failing is not None:
            LOG.info("Prometheus at %s answers again", self.options.url)
        self._failing = None


def query_range(options: PrometheusOptions, query: str, span: BinRange) -> bytes:
    """The body of Prometheus' answer to one range query (at most ``max_bytes``)."""
    params = {
        "query": query,
        "start": f"{span.first_end:.3f}",
        "end": f"{span.last_end:.3f}",
        "step": f"{span.width:g}",
        "timeout": f"{options.timeout:g}s",
    }
    url = f"{options.url.rstrip('/')}/api/v1/query_range?{urllib.parse.urlencode(params)}"
    deadline = time.monotonic() + options.timeout
    try:
        with urllib.request.urlopen(url, timeout=options.timeout) as answer:
            body = _read(answer, options.max_bytes + 1, deadline)
    except urllib.error.HTTPError as err:
        raise _http_failure(err) from None
    except TimeoutError:
        raise SourceFailure("slow", f"no answer within {options.timeout:g} s") from None
    except http.client.HTTPException as err:  # a chunked answer cut short, a bad status line
        raise SourceFailure("source_down", f"a broken answer ({type(err).__name__})") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        if isinstance(reason, TimeoutError):
            raise SourceFailure("slow", f"no answer within {options.timeout:g} s") from None
        raise SourceFailure("source_down", f"cannot reach it: {reason}") from None
    if len(body) > options.max_bytes:
        raise SourceFailure(
            "too_large",
            f"an answer over {options.max_bytes} bytes (sum the series in the query, or "
            "lower max_points)",
        )
    return body


def _read(answer, limit: int, deadline: float) -> bytes:
    """At most ``limit`` bytes of ``answer``, read by ``deadline`` (monotonic): a server
    that trickles its answer is as slow as one that never answers (each read waits at
    most ``timeout``, so a poll waits at most about twice it)."""
    chunks, size = [], 0
    while size < limit:
        if time.monotonic() > deadline:
            raise TimeoutError
        chunk = answer.read1(min(64 << 10, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size < limit and answer.length:  # fewer bytes than the answer's Content-Length
        raise SourceFailure("source_down", "the connection closed in the middle of an answer")
    return b"".join(chunks)


def _http_failure(err: urllib.error.HTTPError) -> SourceFailure:
    """A 4xx is a query Prometheus refused (its error says why); a 5xx a server down."""
    try:
        detail = json.loads(err.read(64 << 10)).get("error", "")
    except (ValueError, AttributeError, OSError):
        detail = ""
    line = f"HTTP {err.code}" + (f": {detail}" if detail else "")
    return SourceFailure("bad_query" if 400 <= err.code < 500 else "source_down", line)


def _rows(bins: dict[str, dict[float, float]], source: str, now: float) -> pa.Table:
    """One row per bin either direction has, the other direction NaN where it has none."""
    import pyarrow as pa

    starts = sorted(set().union(*bins.values()))
    nan = float("nan")
    return pa.table(
        {
            "bin_start": pa.array(starts, pa.float64()),
            "read_bytes": pa.array([bins["read"].get(s, nan) for s in starts], pa.float64()),
            "write_bytes": pa.array([bins["write"].get(s, nan) for s in starts], pa.float64()),
            "source": pa.array([source] * len(starts), pa.string()),
            "known_at": pa.array([now] * len(starts), pa.float64()),
        }
    )


def _commit(warehouse: Warehouse, rows: pa.Table, source: str, until: float, now: float) -> None:
    """The bins and the source's new resume point, as one atomic batch (the old resume
    row of the source is deleted by the same commit)."""
    import pyarrow as pa

    resume = pa.table(
        {"source": [source], "until": [float(until)], "known_at": [float(now)]},
        schema=pa.schema(
            [("source", pa.string()), ("until", pa.float64()), ("known_at", pa.float64())]
        ),
    )
    batch = {RESUME: [resume], LIVE_RATES: [rows]}
    warehouse.commit(batch, delete_keys={RESUME: {"source": [source]}})


def resume_point(warehouse: Warehouse, source: str) -> float | None:
    """The end of the last bin fetched for ``source``, or ``None`` before its first poll."""
    if not warehouse.has_table(RESUME):
        return None
    rows = warehouse.rows(f"select max(until) from {RESUME} where source = ?", [source])
    value = rows.values[0][0]
    return None if value is None else float(value)
