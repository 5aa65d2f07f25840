"""docs/img/live-metrics-panel.png: a Grafana-style panel of ``iosight live``'s ``/metrics``
as a real Prometheus scraped it (issue #28).

All data are SYNTHETIC: two days of facility jobs before today (``generate_facility``),
their timeline in 30-second bins and a ``live`` write forecaster trained on it (leads of
30 s to 12 min); a slice of that timeline whose largest burst starts in the middle of
the run, replayed as file-system rates by the replay exporter (its first 20 minutes
caught up at ``--speed``, the rest in real time while the service runs ``--seconds``,
so several bins end during the run); LDMS messages of a few jobs appended to the stream
file at irregular intervals. Debian's ``prometheus`` scrapes the exporter and ``iosight
live``'s server every second; the service's ``prometheus`` feed reads the rates back
from it into ``live_rates`` (30-second bins), its ``ldms`` feed the messages into
``live_io``. Afterwards the script asks Prometheus (``query_range``) for iosight's rate
of the last complete bin, its burst probability at 5 minutes, the lag of its ``live_io``
rows and whether each scrape of the server succeeded (``up``), and plots them.

    PYTHONPATH=src:tests python benchmarks/live_metrics_panel.py
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "live")]  # the test helpers
OUT = ROOT / "docs" / "img" / "live-metrics-panel.png"
WIDTH = 30.0  # seconds per bin: the facility's timeline, the forecaster's, the feed's
CATCH_UP = 40  # bins replayed at --speed before the run reaches the present


def recording(wh, bins: int):
    """SYNTHETIC: bins of the facility's timeline, the burst run holding its largest write
    bin starting at the ``CATCH_UP + bins // 2``-th (the middle of the run; its first bin
    over the forecaster's threshold), and 4 bins more than the run takes."""
    from iosight.bursts import load_forecaster
    from iosight.live import Recording
    from iosight.timeline import load_timeline

    x = load_timeline(wh)["write_bytes"].to_numpy()
    over = x > load_forecaster(wh, "bursts-write").metadata["thresholds"]["threshold"]
    top = int(np.argmax(x))
    while top > 0 and over[top - 1]:
        top -= 1
    first = float(load_timeline(wh)["bin_start"].iloc[top]) - (CATCH_UP + bins // 2) * WIDTH
    return Recording.from_timeline(wh, first, first + (CATCH_UP + bins + 4) * WIDTH)


def append_messages(path: Path, stop: threading.Event) -> None:
    """SYNTHETIC: a job's LDMS messages appended every 1 to 3 s (uniform) until ``stop``."""
    from iosight.live import LdmsJob, synthetic_ldms_stream

    rng, seed = np.random.default_rng(7), 0
    while not stop.wait(rng.uniform(1.0, 3.0)):
        job = LdmsJob(4_000_000 + seed, 1000, "/apps/ckpt", time.time() - 10.0)
        with open(path, "a") as f:
            f.writelines(m + "\n" for m in synthetic_ldms_stream(job, 200, duration=8.0,
                                                                  seed=seed))  # fmt: skip
        seed += 1


def query_range(url: str, query: str, start: float, end: float) -> list[dict]:
    args = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": "1s"})
    with urllib.request.urlopen(f"{url}/api/v1/query_range?{args}", timeout=30) as r:
        return json.loads(r.read())["data"]["result"]


def run(args: argparse.Namespace, root: Path) -> tuple[dict, float, float]:
    """The service fed while Prometheus scrapes it; Prometheus' answers and the run's span."""
    from prometheus_server import start_prometheus

    from iosight.live import LiveConfig, LiveService, ReplayExporter
    from iosight.warehouse import Warehouse
    from tests_support import free_port, recent_facility

    wh, port, source = recent_facility(root, WIDTH), free_port(), root / "darshan.jsonl"
    source.write_text("")
    bins = math.ceil(args.seconds / WIDTH)
    clock = (math.floor(time.time() / WIDTH) - CATCH_UP) * WIDTH  # replays bin 0 then
    exporter = ReplayExporter(recording(Warehouse(wh), bins), speed=args.speed,
                              clock_start=clock, resolution=5, port=free_port())  # fmt: skip
    targets = [f"127.0.0.1:{exporter.port}", f"127.0.0.1:{port}"]
    with exporter, start_prometheus(root / "prometheus", targets, "1s") as url:
        config = LiveConfig.from_mapping({
            "warehouse": str(wh), "interval": 1.0, "serve": {"port": port},
            "feeds": {"ldms": {"source": str(source)},
                      "prometheus": {"url": url, "delay": "0s", "backfill": "1h",
                                     "bin_width": f"{WIDTH:g}s"}},
        })  # fmt: skip
        service, stop = LiveService(config), threading.Event()
        threads = [threading.Thread(target=service.run, args=(stop,)),
                   threading.Thread(target=append_messages, args=(source, stop))]  # fmt: skip
        while not exporter.started or exporter.stamp() < time.time() - exporter.resolution:
            time.sleep(0.5)  # the replay reaches the present
        start = time.time()
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join()
        end = time.time()
        series = {q: query_range(url, q, start, end) for q in QUERIES}
        series["up"] = query_range(url, f'up{{instance="127.0.0.1:{port}"}}', start, end)
    rates = Warehouse(wh).sql("select * from live_rates order by bin_start")
    print(
        f"live_rates: {len(rates)} bins, the last {len(rates[rates['known_at'] >= start])} "
        "taken during the run"
    )
    print(rates.tail(12).to_string())
    return series, start, end


QUERIES = ('iosight_rate_bytes_per_second{source="live_rates"}',
           'iosight_burst_probability{lead_minutes="5",direction="write"}',
           'iosight_ingest_lag_seconds{table="live_io"}')  # fmt: skip


def plot(series: dict, start: float, end: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(9, 7.5), sharex=True)
    edges = np.arange(math.ceil(start / WIDTH), math.floor(end / WIDTH) + 1) * WIDTH - start
    for ax, query, unit in zip(axes, QUERIES, ("bytes/s", "probability", "s"), strict=True):
        for s in series[query]:
            t, v = np.array(s["values"], dtype=float).T
            label = " ".join(s["metric"].get(k, "") for k in ("direction", "model", "table"))
            ax.plot(t - start, v, drawstyle="steps-post", label=label.strip())
        for x in edges:
            ax.axvline(x, color="0.85", lw=0.8, zorder=0)
        ax.set_title(query, fontsize=9, loc="left")
        ax.set_ylabel(unit)
        ax.legend(fontsize=8, loc="upper left")
    axes[0].set_yscale("log")
    axes[1].set_ylim(-0.02, 1.02)
    axes[-1].set_xlabel(f"seconds of the run ({end - start:.0f} s; Prometheus scraping every "
                        f"1 s; grey lines: the {WIDTH:g}-second bins' ends)")  # fmt: skip
    fig.suptitle("iosight live /metrics as Prometheus scraped them - SYNTHETIC data "
                 "(facility, replayed rates, LDMS messages)", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(OUT, dpi=100)


def summary(series: dict) -> None:
    """Per series: points, distinct values, range; for the lag, how often it changed;
    for the server's scrapes, how many failed."""
    for query in QUERIES:
        for s in series[query]:
            t, v = np.array(s["values"], dtype=float).T
            gaps = np.diff(t[np.flatnonzero(np.diff(v)) + 1])  # between changes of value
            every = f"{np.median(gaps):g}" if len(gaps) else "-"
            print(
                f"{query} {s['metric'].get('direction', '')}: {len(v)} points, "
                f"{np.unique(v).size} values, min {v.min():.3g}, max {v.max():.3g}; "
                f"the value changed every {every} s (median)"
            )
    up = np.concatenate([np.array(s["values"], dtype=float)[:, 1] for s in series["up"]])
    print(f"scrapes of iosight's server: {up.size}, failed {int((up == 0).sum())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=60.0, help="catch-up: replay s per s")
    parser.add_argument("--seconds", type=float, default=300.0, help="the service's run")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    cpu = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        series, start, end = run(args, Path(tmp))
    summary(series)
    plot(series, start, end)
    print(
        f"wrote {OUT.relative_to(ROOT)}; this process's CPU {time.process_time() - cpu:.0f} s; "
        f"load average after: {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
