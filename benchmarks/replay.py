"""Follow mode driven by a replayed year: Summit 2021's job totals through ``ingest --follow``.

A recorded warehouse (default: the Summit 2021 job totals of ../shared, batch-ingested
here into a temporary warehouse; or ``--warehouse WH``) is replayed by ``iosight replay``
(its own process, as a facility's log directory fills) into a log directory, while
follow mode (``iosight.warehouse.follow``, in this process) ingests it and, after each
batch, evaluates the new jobs' insights as ``ingest --follow`` does. Job-total rows land
in one table per poll of recorded time (``--interval`` x ``--speed``).

With ``--forecast``, a small burst forecaster (regime ``logs``: write, logistic
regression, leads 1-6, trained on the recorded warehouse's timeline) forecasts after
each batch at every bin boundary passed, as ``ingest --follow --forecast`` does, and the
timeline is kept up to date as the command keeps it (``iosight.timeline.update_timeline``).

Printed: sources and jobs per second through follow (wall time of the follow, which
includes the waits for the replay), the busy share (time in batches over wall time),
lag from a table landing (its modification time) to the commit of its jobs (p50, p95,
max), and this process's resident memory (peak over the first and over the last quarter
of the batches: "flat over the year" means the two are alike; and Arrow's memory pool
in the batches: follow's system allocator, or ``ARROW_DEFAULT_MEMORY_POOL``'s; and, sampled
every 20 ms, the run's highest RSS placed in its batch and phase), the followed
warehouse's files after the last batch and the most after any, the automatic
compactions' count and time; with ``--forecast``, the
boundaries forecast per second of forecasting, and the lag from a table landing to the
forecasts that follow its commit (p50, p95). The load average is
printed before and after: on a shared machine the rates are only comparable within a run.

    python benchmarks/replay.py                 # the year at 86400x (a day a second: 6 min)
    python benchmarks/replay.py --quick         # its first 7 days at 10080x (1 min)
    python benchmarks/replay.py --warehouse WH --days 60   # another recorded warehouse
    python benchmarks/replay.py --warehouse WH --forecast  # and forecasts (WH: a copy with
                                                           # a timeline; it trains there)
    ARROW_DEFAULT_MEMORY_POOL=mimalloc python benchmarks/replay.py ...  # Arrow's default
                                              # pool kept, as follow did before (it grew)
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# as `iosight ingest --follow` sets it, before pyarrow's import: Arrow's C++ default pool
# is the system allocator (docs/follow.md, "Memory over the year")
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

import numpy as np  # noqa: E402
import psutil  # noqa: E402
import pyarrow as pa  # noqa: E402

SUMMIT = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "summit_darshan_total_2021"


def recorded(path: str | None, tmp: Path):
    """The warehouse to replay: ``path``, or Summit 2021's tables batch-ingested."""
    from iosight.warehouse import Warehouse, ingest

    if path:
        return Warehouse(path, create=False)
    wh = Warehouse(tmp / "recorded", create=True)
    t = time.perf_counter()
    report = ingest([SUMMIT / "darshan_total"], wh, workers=1)
    print(f"recorded: {report.jobs} Summit jobs ingested in {time.perf_counter() - t:.0f} s")
    return wh


def start_replay(wh, out: Path, args) -> subprocess.Popen:
    """``iosight replay`` of the window, in a process of its own."""
    from iosight.warehouse import KNOWN_AT

    first = wh.sql(f"select min({KNOWN_AT}) t from jobs")["t"][0]
    since = first if args.since is None else args.since
    until = since + args.days * 86400
    n = wh.sql(f"select count(*) n from jobs where {KNOWN_AT} >= {since} and {KNOWN_AT} < {until}")[
        "n"
    ][0]
    print(
        f"replaying {n} jobs known in {args.days:g} days from "
        f"{time.strftime('%Y-%m-%d', time.gmtime(since))} at {args.speed:g}x "
        f"(about {args.days * 86400 / args.speed:.0f} s), tables of {args.interval * args.speed:g} "
        f"recorded s; follow polls every {args.interval:g} s"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "iosight", "replay", str(wh.path), "--to", str(out)]
    cmd += ["--speed", str(args.speed), "--since", str(since), "--until", str(until)]
    cmd += ["--group", str(args.interval * args.speed)]
    return subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )


def forecaster(source, wh) -> object:
    """A small ``logs`` forecaster trained on ``source``'s timeline, saved in ``wh``;
    the follow forecasts of ``wh`` with it."""
    from iosight.bursts import FollowForecasts, load_known, train_forecaster
    from iosight.timeline import build_timeline, load_timeline

    t = time.perf_counter()
    if not source.has_table("timeline"):
        build_timeline(source)
    known = load_known(source)
    fc = train_forecaster(load_timeline(source), direction="write", model="logreg", max_lead=6,
                          information="logs", known=known, name="bench-write")  # fmt: skip
    fc.save(wh)
    print(f"forecaster: {fc.describe()}, trained in {time.perf_counter() - t:.0f} s")
    return FollowForecasts(wh, [fc.name])


class AfterBatch(threading.Event):
    """Follow's ``stop`` event, which it asks whether to stop right after each batch,
    once it gave the batch's freed memory back: this process's RSS then (what it keeps
    between batches; ``on_batch`` sees it before), and ``where()`` at the batches
    ``at`` (counted from 1) when given."""

    def __init__(self, where=None, *at: int) -> None:
        super().__init__()
        self.where, self.at, self.pending, self.rss, self.maps = where, at, None, [], {}

    def is_set(self) -> bool:
        if self.pending == threading.get_ident():  # follow's thread, after on_batch
            self.pending = None
            self.rss.append(psutil.Process().memory_info().rss / 2**20)
            if len(self.rss) in self.at:
                self.maps[len(self.rss) - 1] = self.where()
        return super().is_set()


class Phases:
    """This process's RSS sampled by a thread every ``every`` s, and the phase each sample
    fell in (marks: start time, phase, batch): the run's peak placed in its batch and
    phase (ingest, compaction, insights, timeline, forecasts, or the setup before follow).
    Ingest and compaction are placed from the batch's reported times, which end where
    ``on_batch`` starts."""

    def __init__(self, every: float = 0.02) -> None:
        self.every, self.samples, self.marks = every, [], [(time.monotonic(), "setup", 0)]
        self.done = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self.done.wait(self.every):
            self.samples.append((time.monotonic(), me.memory_info().rss / 2**20))

    def mark(self, phase: str, batch: int, at: float | None = None) -> None:
        """Phase ``phase`` of batch ``batch`` starts now (or at monotonic ``at``)."""
        self.marks.append((time.monotonic() if at is None else at, phase, batch))

    def batch(self, batch, n: int) -> None:
        """At ``on_batch``'s start: batch ``n``'s ingest and compaction, from its report."""
        now = time.monotonic()
        took = batch.report.compaction.seconds if batch.report.compaction else 0.0
        self.mark("ingest", n, now - took - batch.report.seconds)
        if took:
            self.mark("compaction", n, now - took)

    def line(self, top: int = 5) -> str:
        """The highest samples' batch and phase, and each phase's highest sample."""
        self.done.set()
        marks = sorted(self.marks)
        starts = [m[0] for m in marks]
        placed = [(rss, marks[max(0, np.searchsorted(starts, t, "right") - 1)][1:])
                  for t, rss in self.samples]  # fmt: skip
        best: dict[str, tuple[float, int]] = {}
        for rss, (phase, n) in placed:
            if rss > best.get(phase, (0.0, 0))[0]:
                best[phase] = (rss, n)
        peaks = sorted(placed, key=lambda x: -x[0])[:top]
        return (
            f"RSS sampled every {self.every * 1000:.0f} ms ({len(self.samples)} samples): "
            f"highest {'; '.join(f'{r:.0f} MB in batch {n} {p}' for r, (p, n) in peaks)}; "
            f"per phase: {'; '.join(f'{p} {r:.0f} MB (batch {n})' for p, (r, n) in best.items())}"
        )


class Forecasting:
    """After each batch: the timeline updated and the forecasts made, timed; the lag from
    each table landing to the forecasts after its commit."""

    def __init__(self, forecasts) -> None:
        self.forecasts, self.boundaries, self.seconds = forecasts, 0, 0.0
        self.timeline_s, self.lags = 0.0, []

    def after(self, wh, batch, phases: Phases, n: int) -> None:
        from iosight.timeline import update_timeline

        t = time.perf_counter()
        phases.mark("timeline", n)
        if wh.has_table("timeline"):
            update_timeline(wh)
        t1 = time.perf_counter()
        phases.mark("forecasts", n)
        self.boundaries += self.forecasts.update()
        self.timeline_s += t1 - t
        self.seconds += time.perf_counter() - t1
        done = time.time()
        self.lags += [lag + done - batch.committed_at for lag in batch.lags]

    def report(self, wh) -> None:
        n = wh.sql("select count(*) n from forecasts")["n"][0] if wh.has_table("forecasts") else 0
        lags = np.array(self.lags)
        print(
            f"forecasts: {self.boundaries} bin boundaries ({n} rows) in {self.seconds:.1f} s: "
            f"{self.boundaries / max(self.seconds, 1e-9):.0f} boundaries per second of "
            f"forecasting; timeline updates {self.timeline_s:.1f} s; lag landing -> "
            f"forecast: p50 {np.percentile(lags, 50):.2f} s, p95 {np.percentile(lags, 95):.2f} s, "
            f"max {lags.max():.2f} s"
        )


def run(args) -> None:
    from iosight.insights import compute_insights
    from iosight.warehouse import Warehouse, follow

    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    phases = Phases()
    with tempfile.TemporaryDirectory(prefix="iosight-replay-") as tmp:
        tmp = Path(tmp)
        source = recorded(args.warehouse, tmp)
        out = tmp / "logs"
        out.mkdir()
        replayer = start_replay(source, out, args)
        wh = Warehouse(tmp / "followed", create=True)
        fc = Forecasting(forecaster(source, wh)) if args.forecast else None
        me = psutil.Process()
        batches, rss, files, busy, stop = [], [], [], [0.0], AfterBatch()
        pools = set()  # Arrow's default pool in the batches (follow's, or the person's)

        def after(batch) -> None:
            t = time.perf_counter()
            phases.batch(batch, len(batches) + 1)
            phases.mark("insights", len(batches) + 1)
            if batch.report.ingested and not args.no_insights:
                compute_insights(wh)
            if batch.report.ingested and fc is not None:
                fc.after(wh, batch, phases, len(batches) + 1)
            phases.mark("between batches", len(batches) + 1)
            busy[0] += batch.report.seconds + time.perf_counter() - t
            batches.append(batch)
            rss.append(me.memory_info().rss)
            stop.pending = threading.get_ident()  # this thread's next is_set
            pools.add(pa.default_memory_pool().backend_name)
            files.append({t: len(wh.table_files(t)) for t in wh.tables()})
            if replayer.poll() is not None and _all_in(out, batches):
                stop.set()

        def watch() -> None:  # the last landing may come in a poll with nothing new
            replayer.wait()
            while not _all_in(out, batches) and not stop.is_set():
                time.sleep(args.interval)
            stop.set()

        threading.Thread(target=watch, daemon=True).start()
        print(f"before follow: RSS {me.memory_info().rss / 2**20:.0f} MB, peak so far "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")  # fmt: skip
        phases.mark("between batches", 0)
        t = time.perf_counter()
        report = follow(
            out,
            wh,
            interval=args.interval,
            settle=args.settle,
            workers=1,
            on_batch=after,
            stop=stop,
            compact=not args.no_compact,
        )
        wall = time.perf_counter() - t
        print(replayer.stdout.read().strip())
        jobs = wh.sql("select count(*) n from jobs")["n"][0]
        lags = np.array(report.lags)
        quarter = max(1, len(rss) // 4)
        print(
            f"follow: {report.ingested} tables, {jobs} jobs in {report.batches} batches, "
            f"{report.polls} polls, {wall:.1f} s: {report.ingested / wall:.2f} sources/s, "
            f"{jobs / wall:.1f} jobs/s; busy {busy[0] / wall:.0%} of the time "
            f"({jobs / max(busy[0], 1e-9):.1f} jobs per busy second)"
        )
        print(
            f"lag landing -> committed: p50 {np.percentile(lags, 50):.2f} s, "
            f"p95 {np.percentile(lags, 95):.2f} s, max {lags.max():.2f} s "
            f"(polls every {args.interval:g} s, settle {args.settle})"
        )
        if fc is not None:
            fc.report(wh)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        mid = rss[len(rss) // 2 - quarter // 2 : len(rss) // 2 + quarter // 2 + 1]
        print(
            f"memory (RSS of this process after each batch): first quarter peak "
            f"{max(rss[:quarter]) / 2**20:.0f} MB, middle quarter peak {max(mid) / 2**20:.0f} "
            f"MB, last quarter peak {max(rss[-quarter:]) / 2**20:.0f} MB; peak over the run "
            f"{peak:.0f} MB; Arrow's pool: {', '.join(sorted(pools))}"
        )
        kept = stop.rss
        print(
            f"memory kept between batches (RSS right after follow gave a batch's freed memory "
            f"back): first / middle / last quarter peak {max(kept[:quarter]):.0f} / "
            f"{max(kept[len(kept) // 2 - quarter // 2 : len(kept) // 2 + quarter // 2 + 1]):.0f}"
            f" / {max(kept[-quarter:]):.0f} MB"
        )
        print(phases.line())
        print(_files_line(files))
        print(_compactions_line(batches))
    print(f"load average after: {os.getloadavg()[0]:.1f} (a shared machine: compare within a run)")


def _files_line(files: list[dict[str, int]]) -> str:
    """The followed warehouse's files after the last batch and the most after any, in
    all and in the table with the most: bounded over the year when compaction keeps up."""
    fullest = max(files[-1], key=files[-1].get)
    return (
        f"files (after each batch): {sum(files[-1].values())} at the end in "
        f"{len(files[-1])} tables (most {max(sum(f.values()) for f in files)}); {fullest}: "
        f"{files[-1][fullest]} (most {max(f.get(fullest, 0) for f in files)})"
    )


def _compactions_line(batches: list) -> str:
    """How many automatic compactions ran after the batches, and their time."""
    took = [b.report.compaction.seconds for b in batches if b.report.compaction]
    if not took:
        return "compactions: none"
    return f"compactions: {len(took)}, {sum(took):.1f} s in all, the longest {max(took):.1f} s"


def _all_in(out: Path, batches: list) -> bool:
    """Whether follow has seen every table the replay wrote."""
    return sum(b.report.sources for b in batches) >= sum(1 for _ in out.rglob("*.parquet"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", help="recorded warehouse (default: Summit 2021, ingested)")
    p.add_argument("--days", type=float, default=366.0, help="recorded days to replay")
    p.add_argument("--since", type=float, help="epoch s to start at (default: the first job)")
    p.add_argument("--speed", type=float, default=86400.0, help="recorded s per second")
    p.add_argument("--interval", type=float, default=1.0, help="follow's poll interval, s")
    p.add_argument("--settle", type=int, default=2, help="follow's polls before reading")
    p.add_argument("--no-insights", action="store_true", help="skip insights per batch")
    p.add_argument("--no-compact", action="store_true", help="no compaction after batches")
    p.add_argument("--forecast", action="store_true", help="forecast at every bin boundary")
    p.add_argument("--quick", action="store_true", help="7 days at 10080x (a week a minute)")
    args = p.parse_args()
    if args.quick:
        args.days, args.speed = 7.0, 10080.0
    run(args)


if __name__ == "__main__":
    main()
