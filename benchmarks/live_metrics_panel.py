"""docs/img/live-metrics-panel.png: a Grafana-style panel of ``iosight live``'s ``/metrics``
as a real Prometheus scraped it (issue #28).

All data are SYNTHETIC: two days of facility jobs before today (``generate_facility``),
their timeline and a ``live`` write forecaster trained on it; two hours of file-system
rates (5-minute bins with a few bursts) replayed up to the present by the replay
exporter at ``--speed``; LDMS messages of a few jobs appended to the stream file while
it runs. Debian's ``prometheus`` scrapes the exporter and ``iosight live``'s server
every second; the service's ``prometheus`` feed reads the rates back from it into
``live_rates``, its ``ldms`` feed the messages into ``live_io``. When the replay has
reached the present (the feed takes a bin once, after it ended by the wall clock: a
replay still catching up would be behind it), the service runs for ``--seconds``,
then the script asks Prometheus (``query_range``) for iosight's rate
of the last complete bin, its burst probability at 30 minutes and the lag of its
``live_io`` rows over the run, and plots them.

    PYTHONPATH=src:tests python benchmarks/live_metrics_panel.py
"""

from __future__ import annotations

import argparse
import json
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
WIDTH, BINS = 300.0, 24  # two hours of 5-minute bins replayed


def recording():
    """SYNTHETIC: two hours of rates, lognormal with a burst bin about every half hour."""
    from iosight.live import Recording

    rng = np.random.default_rng(11)
    read = np.round(10 ** rng.normal(9.0, 0.3, BINS))
    write = np.round(10 ** rng.normal(9.5, 0.3, BINS))
    write[rng.choice(BINS, 4, replace=False)] *= 30.0
    return Recording.from_bins(WIDTH * np.arange(BINS), read, write, WIDTH)


def append_messages(path: Path, stop: threading.Event) -> None:
    """SYNTHETIC: a job's LDMS messages appended every 2 s until ``stop``."""
    from iosight.live import LdmsJob, synthetic_ldms_stream

    seed = 0
    while not stop.wait(2.0):
        job = LdmsJob(4_000_000 + seed, 1000, "/apps/ckpt", time.time() - 10.0)
        with open(path, "a") as f:
            f.writelines(m + "\n" for m in synthetic_ldms_stream(job, 200, duration=8.0,
                                                                  seed=seed))  # fmt: skip
        seed += 1


def query_range(url: str, query: str, start: float, end: float) -> list[dict]:
    args = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": "1s"})
    with urllib.request.urlopen(f"{url}/api/v1/query_range?{args}", timeout=30) as r:
        return json.loads(r.read())["data"]["result"]


def run(args: argparse.Namespace, root: Path) -> tuple[str, float, float]:
    """The service fed while Prometheus scrapes it; Prometheus's URL and the run's span."""
    from prometheus_server import start_prometheus

    from iosight.live import LiveConfig, LiveService, ReplayExporter
    from tests_support import free_port, recent_facility

    wh, port, source = recent_facility(root, WIDTH), free_port(), root / "darshan.jsonl"
    source.write_text("")
    exporter = ReplayExporter(recording(), speed=args.speed, resolution=60, port=free_port())
    targets = [f"127.0.0.1:{exporter.port}", f"127.0.0.1:{port}"]
    with exporter, start_prometheus(root / "prometheus", targets, "1s") as url:
        config = LiveConfig.from_mapping({
            "warehouse": str(wh), "interval": 1.0, "serve": {"port": port},
            "feeds": {"ldms": {"source": str(source)},
                      "prometheus": {"url": url, "delay": "0s", "backfill": "3h"}},
        })  # fmt: skip
        service, stop = LiveService(config), threading.Event()
        threads = [threading.Thread(target=service.run, args=(stop,)),
                   threading.Thread(target=append_messages, args=(source, stop))]  # fmt: skip
        time.sleep(BINS * WIDTH / args.speed + 5.0)  # the replay reaches the present
        start = time.time()
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join()
        end = time.time()
        series = {q: query_range(url, q, start, end) for q in QUERIES}
    return series, start, end


QUERIES = ('iosight_rate_bytes_per_second{source="live_rates"}',
           'iosight_burst_probability{lead_minutes="30",direction="write"}',
           'iosight_ingest_lag_seconds{table="live_io"}')  # fmt: skip


def plot(series: dict, start: float, end: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    for ax, query, unit in zip(axes, QUERIES, ("bytes/s", "probability", "s"), strict=True):
        for s in series[query]:
            t, v = np.array(s["values"], dtype=float).T
            label = " ".join(s["metric"].get(k, "") for k in ("direction", "model", "table"))
            ax.plot(t - start, v, drawstyle="steps-post", label=label.strip())
        ax.set_title(query, fontsize=9, loc="left")
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    axes[0].set_yscale("log")
    axes[1].set_ylim(0, 1)
    axes[-1].set_xlabel(f"seconds of the run ({end - start:.0f} s; Prometheus scraping every 1 s)")
    fig.suptitle("iosight live /metrics as Prometheus scraped them - SYNTHETIC data "
                 "(facility, replayed rates, LDMS messages)", fontsize=10)  # fmt: skip
    fig.tight_layout()
    fig.savefig(OUT, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=120.0, help="replay seconds per second")
    parser.add_argument("--seconds", type=float, default=40.0, help="the service's run")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        series, start, end = run(args, Path(tmp))
    for query in QUERIES:
        for s in series[query]:
            v = np.array(s["values"], dtype=float)[:, 1]
            print(f"{query} {s['metric'].get('direction', '')}: {len(v)} points, "
                  f"min {v.min():.3g}, max {v.max():.3g}, last {v[-1]:.3g}")
    plot(series, start, end)
    print(f"wrote {OUT.relative_to(ROOT)}; load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
