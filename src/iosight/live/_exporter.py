"""A replay exporter: recorded per-bin bytes served as file-server counters, for tests and
demos of the Prometheus feed (:mod:`iosight.live._prometheus`) with a real Prometheus.

It serves ``/metrics`` on 127.0.0.1 with the counters the Lustre exporter publishes for
an OST, ``lustre_read_bytes_total`` and ``lustre_write_bytes_total`` (labels
``component="ost"``, ``target="replay-OST0000"``), so the feed's default ``lustre``
queries read them. The counters advance along a recording (a CSV of per-bin bytes or a
slice of a warehouse's stored timeline) at ``speed`` recorded seconds per second:
within a bin at the bin's constant rate, so ``rate()`` over a bin gives its bytes back.

Each sample carries its own timestamp, the replay clock (Prometheus keeps a target's
timestamps: ``honor_timestamps`` is on by default), so a replay faster than real time
still shows Prometheus the recorded rates per recorded second. Timestamps are put on a
grid of ``resolution`` seconds that divides the bin width, and each value is the
counter at its timestamp: every bin boundary is a sample Prometheus can hold, and
``rate(counter[w])`` at a bin end reads both ends of the bin exactly. The replay clock
starts at the first scrape and is never ahead of the wall clock (Prometheus drops
samples from the future): by default it starts early enough, ``duration * (1 -
1/speed)`` before the first scrape, to end at about the present. Prometheus also drops
samples older than about an hour before its newest ones, so a fast replay into a fresh
Prometheus should span less than an hour.
"""

from __future__ import annotations

import argparse
import csv
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iosight._errors import IosightError, check_param

if TYPE_CHECKING:
    from collections.abc import Iterator

    from iosight.warehouse import Warehouse

LABELS = {"component": "ost", "target": "replay-OST0000"}
DEFAULT_PORT = 9469


@dataclass(frozen=True)
class Recording:
    """Bytes read and written per bin on a regular grid: bin ``k`` starts at
    ``start + k * width`` (bins a source left out hold zero)."""

    start: float  # the first bin's start, epoch s
    width: float  # the bin width, s
    read_bytes: np.ndarray  # bytes read in each bin
    write_bytes: np.ndarray  # bytes written in each bin

    @property
    def duration(self) -> float:
        """Seconds of recording: bins times the bin width."""
        return self.width * len(self.read_bytes)

    @classmethod
    def from_bins(cls, bin_start, read_bytes, write_bytes, width: float) -> Recording:
        """From bins in any order, with gaps: ``bin_start`` (epoch s) and the bin's
        ``read_bytes`` and ``write_bytes``; bin starts must lie on one grid of ``width``
        (s)."""
        starts = np.asarray(bin_start, dtype=np.float64)
        check_param("width", width, math.isfinite(width) and width > 0, "seconds > 0")
        if starts.size == 0:
            raise IosightError("the recording holds no bins")
        k = (starts - starts.min()) / width
        if not np.allclose(k, np.round(k), rtol=0, atol=1e-6):
            raise IosightError(f"the recording's bin starts are not on one {width:g} s grid")
        k = np.round(k).astype(np.int64)
        if np.unique(k).size != k.size:
            raise IosightError("the recording holds a bin twice")
        read, write = (np.zeros(k.max() + 1) for _ in range(2))
        read[k], write[k] = _bytes(read_bytes), _bytes(write_bytes)
        return cls(float(starts.min()), float(width), read, write)

    @classmethod
    def from_csv(cls, path: str | Path, width: float = 300.0) -> Recording:
        """From the CSV file ``path`` with columns ``bin_start`` (epoch s), ``read_bytes``,
        ``write_bytes``, of bins ``width`` seconds wide."""
        try:
            with open(path, newline="") as fh:
                rows = list(csv.DictReader(fh))
            cols = {c: [float(r[c]) for r in rows] for c in ("bin_start", "read_bytes",
                                                            "write_bytes")}  # fmt: skip
        except OSError as err:
            raise IosightError(f"cannot read {path}: {err.strerror or err}") from None
        except (KeyError, TypeError, ValueError) as err:
            raise IosightError(
                f"{path}: a CSV with numeric columns bin_start, read_bytes, write_bytes "
                f"is needed ({type(err).__name__}: {err})"
            ) from None
        return cls.from_bins(cols["bin_start"], cols["read_bytes"], cols["write_bytes"], width)

    @classmethod
    def from_timeline(
        cls, warehouse: Warehouse, start: float | None = None, end: float | None = None
    ) -> Recording:
        """The bins of ``warehouse``'s timeline that start from ``start`` until ``end``
        (epoch s, ``end`` excluded; None: no bound)."""
        warehouse.require("timeline")
        lo = -math.inf if start is None else float(start)
        hi = math.inf if end is None else float(end)
        t = warehouse.arrow(
            "select bin_start, bin_width, read_bytes, write_bytes from timeline "
            "where bin_start >= ? and bin_start < ? order by bin_start",
            [lo, hi],
        )
        if t.num_rows == 0:
            raise IosightError("the timeline has no bins in that range")
        widths = np.unique(t["bin_width"].to_numpy())
        if widths.size != 1:
            raise IosightError("the timeline slice has several bin widths")
        cols = {c: t[c].to_numpy() for c in ("bin_start", "read_bytes", "write_bytes")}
        return cls.from_bins(**cols, width=float(widths[0]))

    def totals(self, t: float) -> tuple[float, float]:
        """The counters (bytes read, bytes written) at recorded time ``t``: the bins before
        ``t`` and the part of ``t``'s bin already passed, at the bin's constant rate."""
        x = min(max((t - self.start) / self.width, 0.0), float(len(self.read_bytes)))
        k = min(int(math.floor(x)), len(self.read_bytes) - 1)
        frac = x - k
        return tuple(  # type: ignore[return-value]
            float(b[:k].sum() + frac * b[k]) for b in (self.read_bytes, self.write_bytes)
        )


def _bytes(values) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(out)) or (out < 0).any():
        raise IosightError("the recording's bytes must be finite and >= 0")
    return out


class ReplayExporter:
    """Serve ``recording`` as Lustre OST counters on ``host`` (the address to bind) and
    ``port`` (0: a free port).

    ``speed``: recorded seconds per second. ``clock_start``: the epoch second at which the
    replay clock starts, where the first recorded bin is replayed (a multiple of the bin
    width; default: early enough that the replay ends at about the present). The clock
    starts at the first scrape.
    ``resolution``: the grid of sample timestamps, whole seconds dividing the bin width
    (default a tenth of it).
    """

    def __init__(
        self,
        recording: Recording,
        *,
        speed: float = 1.0,
        clock_start: float | None = None,
        resolution: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        check_param("speed", speed, math.isfinite(speed) and speed > 0, "a number > 0")
        width = recording.width
        res = resolution if resolution is not None else max(1, int(width // 10))
        ok = isinstance(res, int) and res >= 1 and width % res == 0
        check_param("resolution", res, ok, f"whole seconds >= 1 that divide {width:g}")
        self.recording, self.speed, self.resolution = recording, float(speed), res
        self.host, self.port = host, port
        self.clock_start = clock_start
        self._wall0: float | None = None
        self._lock = threading.Lock()
        self._server = self._thread = None

    def start(self) -> ReplayExporter:
        """Serve ``/metrics`` (in a thread of its own); the replay clock starts at the
        first scrape, so no bin is replayed before Prometheus looks."""
        from prometheus_client import start_http_server
        from prometheus_client.registry import CollectorRegistry

        # no describe at registration: it would collect, and so start the clock
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self))
        try:
            self._server, self._thread = start_http_server(self.port, self.host, registry)
        except OSError as err:
            raise IosightError(f"cannot serve on {self.host}:{self.port}: {err.strerror}") from None
        self.port = self._server.server_address[1]
        return self

    def stop(self) -> None:
        """Stop serving and wait for the server's thread (nothing if not started)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = self._thread = None

    def __enter__(self) -> ReplayExporter:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The address Prometheus scrapes: ``http://host:port/metrics``."""
        return f"http://{self.host}:{self.port}/metrics"

    def _start_clock(self, wall: float) -> None:
        """Start the replay clock at ``wall`` unless it runs already."""
        with self._lock:
            if self._wall0 is not None:
                return
            if self.clock_start is None:
                ahead = self.recording.duration * (1.0 - 1.0 / self.speed)
                width = self.recording.width
                self.clock_start = math.floor((wall - ahead) / width) * width
            self._wall0 = wall

    @property
    def started(self) -> bool:
        """Whether the replay clock runs (since the first scrape)."""
        return self._wall0 is not None

    def stamp(self, wall: float | None = None) -> float:
        """The timestamp of the samples served at ``wall`` (default now): the replay clock,
        never ahead of the wall clock, down to the grid. The first call starts the clock."""
        wall = time.time() if wall is None else wall
        self._start_clock(wall)
        clock = self.clock_start + self.speed * (wall - self._wall0)
        return math.floor(min(clock, wall) / self.resolution) * self.resolution

    def totals_at(self, stamp: float) -> tuple[float, float]:
        """The counters served with timestamp ``stamp`` (replay time)."""
        return self.recording.totals(stamp - self.clock_start + self.recording.start)


class _Collector:
    """Collects the two counters at the replay clock's current stamp."""

    def __init__(self, exporter: ReplayExporter) -> None:
        self.exporter = exporter

    def collect(self) -> Iterator:
        from prometheus_client.core import CounterMetricFamily

        stamp = self.exporter.stamp()
        read, write = self.exporter.totals_at(stamp)
        for direction, value in (("read", read), ("write", write)):
            family = CounterMetricFamily(
                f"lustre_{direction}_bytes",
                f"Bytes {direction} by the replayed file system (a recording, replayed).",
                labels=list(LABELS),
            )
            family.add_metric(list(LABELS.values()), value, timestamp=stamp)
            yield family


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="iosight-replay-exporter",
        description="Serve recorded per-bin bytes as Lustre OST counters for Prometheus.",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--csv", help="bins: columns bin_start, read_bytes, write_bytes")
    src.add_argument("--warehouse", help="replay this warehouse's stored timeline")
    p.add_argument("--from", dest="start", help="first bin (with --warehouse)")
    p.add_argument("--to", dest="end", help="end of the last bin (with --warehouse)")
    p.add_argument("--width", type=float, default=300.0, help="bin width of --csv (s)")
    p.add_argument("--speed", type=float, default=1.0, help="recorded seconds per second")
    p.add_argument("--resolution", type=int, default=None, help="timestamp grid (s)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    return p


def _recording(args: argparse.Namespace) -> Recording:
    if args.csv:
        return Recording.from_csv(args.csv, width=args.width)
    from iosight.timeline import parse_time
    from iosight.warehouse import Warehouse

    start = parse_time(args.start) if args.start else None
    end = parse_time(args.end) if args.end else None
    return Recording.from_timeline(Warehouse(args.warehouse), start, end)


def _clock_line(exporter: ReplayExporter) -> str:
    rec, t0 = exporter.recording, exporter.clock_start
    utc = "%Y-%m-%d %H:%M UTC"
    return (
        f"first scrape: the bin recorded at {time.strftime(utc, time.gmtime(rec.start))} is "
        f"replayed at {t0:.0f} ({time.strftime(utc, time.gmtime(t0))}); the replay ends at "
        f"{t0 + rec.duration:.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the replay exporter until interrupted; bad input is one line and exit 2."""
    args = _parser().parse_args(argv)
    try:
        rec = _recording(args)
        exporter = ReplayExporter(rec, speed=args.speed, resolution=args.resolution,
                                  host=args.host, port=args.port).start()  # fmt: skip
    except IosightError as err:
        print(f"error: {err}")
        return 2
    print(
        f"serving {len(rec.read_bytes)} bins of {rec.width:g} s at {exporter.url}, "
        f"speed {exporter.speed:g}, from the first scrape on",
        flush=True,
    )
    try:
        while not exporter.started:
            time.sleep(0.1)
        print(_clock_line(exporter), flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        exporter.stop()


if __name__ == "__main__":
    raise SystemExit(main())
