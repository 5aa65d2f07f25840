"""The scheduler's view through Slurm: running and pending jobs, polled into the warehouse.

Each :meth:`SlurmFeed.poll` takes one snapshot of the queue (``squeue --json``: every job
slurmctld holds, with Slurm's expected start of each pending one), adds the jobs that
ended since the last snapshot (``sacct --json --starttime=<last snapshot>``, where the
site runs accounting) and appends it to table ``sched_jobs`` (one row per job per
snapshot), with one row in ``sched_snapshots`` saying when it was taken: the snapshot
with no job is stored too, so "nothing ran at t" is known, and the last row is the
resume point, committed with the jobs.

Slurm's JSON changed shape between releases: 22.05 (Debian 12) writes numbers and times as
plain integers and a job's state as a string; 23.02 nests counts as
``{"set": true, "infinite": false, "number": N}``; 23.11 and later nest times too and
give the state as a list (``["RUNNING"]``, flags after the base state). ``sacct`` keeps
its times under ``time`` and the state under ``state.current``. All are read here.

The frame :func:`slurm_running_jobs` returns has the columns of
:func:`iosight.bursts.load_jobs`, so the jobs the scheduler runs at t join the ended
runs in the job state of feature set 4 (``iosight.bursts``): the application a running
job belongs to is its Slurm job name (``exe``), its size its tasks (``ntasks``: squeue's
count, the tasks the job asked for; sacct has no such count, so a job known only from
accounting has the most tasks one of its steps launched: srun's, or 1 for a job that ran
no srun, its batch script alone, as tested against a real slurmdbd).
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from iosight._errors import IosightError, check_param
from iosight.bursts import SCHED_COLUMNS, SCHED_JOBS, SCHED_SNAPSHOTS, last_snapshot
from iosight.bursts import SchedulerView as SchedulerView  # re-exported by iosight.live
from iosight.bursts import sched_snapshot as sched_snapshot
from iosight.bursts import scheduler_view as scheduler_view
from iosight.bursts import slurm_running_jobs as slurm_running_jobs
from iosight.live._feed import FeedReport
from iosight.live._refresh import _utc

if TYPE_CHECKING:
    import pyarrow as pa

    from iosight.warehouse import Warehouse

# Slurm's job states after which a job holds no resources (squeue's and sacct's names)
ENDED = frozenset(
    {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
     "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"}
)  # fmt: skip


@dataclass(frozen=True)
class SlurmFeedOptions:
    """Where the scheduler's view comes from.

    ``squeue``: the command printing the queue as JSON. ``sacct``: the accounting command
    printing jobs as JSON (``--starttime`` is added: the last snapshot, or ``lookback``
    seconds before the first); ``None`` where the site runs no accounting (slurmdbd).
    ``timeout``: seconds each command may take; ``max_output``: bytes of JSON read at
    most. ``recorded``: instead of running commands, a recorded JSON file (read on every
    poll) or a directory of them (``*.json``, one taken per poll in name order).
    """

    squeue: tuple[str, ...] = ("squeue", "--json")
    sacct: tuple[str, ...] | None = ("sacct", "--json", "--allusers")
    timeout: float = 30.0
    max_output: int = 256 << 20
    lookback: float = 86400.0
    recorded: Path | None = None

    def __post_init__(self) -> None:
        check_param("timeout", self.timeout, self.timeout > 0, "a positive number of seconds")
        check_param("max_output", self.max_output, self.max_output > 0, "a positive byte count")
        check_param("lookback", self.lookback, self.lookback >= 0, "seconds, 0 or more")
        check_param("squeue", self.squeue, bool(self.squeue), "a command (program and options)")


def slurm_feed(settings: Mapping, base: Path = Path(".")) -> SlurmFeed:
    """The feed of ``iosight live``'s ``feeds: {slurm: {...}}`` section, whose keys are
    :class:`SlurmFeedOptions`' fields: a command is a list or one string (split as a
    shell would), ``sacct: null`` where the site runs no accounting, ``timeout`` and
    ``lookback`` durations (``30s``, ``1d``)."""
    from iosight.live._config import feed_options

    opts = feed_options("slurm", settings, SlurmFeedOptions, ("timeout", "lookback"))
    for name in ("squeue", "sacct"):
        if isinstance(opts.get(name), str):
            opts[name] = tuple(shlex.split(opts[name]))
        elif opts.get(name) is not None:
            opts[name] = tuple(str(a) for a in opts[name])
    if opts.get("recorded") is not None:
        opts["recorded"] = base / opts["recorded"]
    return SlurmFeed(SlurmFeedOptions(**opts))


class _Problem(Exception):
    """A source that could not be read this poll: its warning kind and one line."""

    def __init__(self, kind: str, line: str) -> None:
        super().__init__(line)
        self.kind = kind


@dataclass
class _Snapshot:
    """The documents one poll read and the name of where they came from."""

    docs: list[dict] = field(default_factory=list)
    source: str = "squeue"


class SlurmFeed:
    """Polls Slurm into ``sched_jobs``; no thread of its own (a service calls :meth:`poll`).
    ``options``: the source and its limits (default: :class:`SlurmFeedOptions`'s)."""

    def __init__(self, options: SlurmFeedOptions | None = None) -> None:
        self.options = options or SlurmFeedOptions()

    def poll(self, warehouse: Warehouse, now: float | None = None) -> FeedReport:
        """Take one snapshot at ``now`` (epoch s; default the clock) and commit it to
        ``warehouse``.

        A source that fails is a ``source_down`` (or ``slow``, ``malformed``) warning and
        no snapshot; a clock not after the last snapshot is ``future_clock`` and nothing.
        ``lag``: seconds the source took to answer.
        """
        now = time.time() if now is None else float(now)
        report = FeedReport("slurm", now)
        last = last_snapshot(warehouse)
        if last is not None and now <= last[0]:
            report.warn("future_clock", 1, f"the last Slurm snapshot ({_utc(last[0])}) is not "
                        f"before this poll ({_utc(now)}); nothing taken")  # fmt: skip
            return report
        began = time.monotonic()
        snap = self._read(last, now, report)
        if snap is None:
            return report
        report.lag = time.monotonic() - began
        jobs = _merge(snap.docs, report)
        _commit(warehouse, jobs, now, snap.source)
        report.rows = len(jobs)
        return report

    def _read(
        self, last: tuple[float, str] | None, now: float, report: FeedReport
    ) -> _Snapshot | None:
        """This poll's documents, or ``None`` (and the warning) when there are none."""
        try:
            if self.options.recorded is not None:
                return _recorded(Path(self.options.recorded), last, self.options.max_output)
            since = now - self.options.lookback if last is None else last[0]
            return self._commands(since, report)
        except _Problem as problem:
            report.warn(problem.kind, 1, str(problem))
            return None

    def _commands(self, since: float, report: FeedReport) -> _Snapshot:
        """squeue's queue, then sacct's jobs since ``since`` (its failure only warned)."""
        opt = self.options
        snap = _Snapshot([_run_json(opt.squeue, opt.timeout, opt.max_output)], "squeue")
        if opt.sacct:
            argv = (*opt.sacct, f"--starttime={_local(since)}")
            try:
                snap.docs.append(_run_json(argv, opt.timeout, opt.max_output))
                snap.source = "squeue+sacct"
            except _Problem as problem:
                report.warn(problem.kind, 1, str(problem))
        return snap


def _local(t: float) -> str:
    """``t`` as Slurm reads a time on the command line: local time, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(math.floor(t)))


def _run_json(argv: tuple[str, ...], timeout: float, limit: int) -> dict:
    """Run ``argv`` and parse its standard output as one JSON object (at most ``limit``
    bytes, within ``timeout`` seconds)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.run(argv, stdout=out, stderr=err, timeout=timeout, check=False)
        except FileNotFoundError:
            raise _Problem("source_down", f"{argv[0]}: command not found") from None
        except subprocess.TimeoutExpired:
            raise _Problem("slow", f"{argv[0]} took over {timeout:g} s; killed") from None
        if proc.returncode != 0:
            raise _Problem("source_down", f"{argv[0]} exited {proc.returncode}: {_tail(err)}")
        return _load(out, argv[0], limit)


def _tail(stream: IO[bytes]) -> str:
    """The last line of a command's error output."""
    stream.seek(max(stream.tell() - 4096, 0))
    lines = stream.read().decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no message"


def _load(stream: IO[bytes], what: str, limit: int) -> dict:
    """One JSON object with a ``jobs`` list from ``stream`` (positioned at its end)."""
    size = stream.seek(0, 2)
    if size > limit:
        raise _Problem("malformed", f"{what}: {size} bytes of JSON, over the {limit} read")
    stream.seek(0)
    try:
        doc = json.load(stream)
    except ValueError as err:
        raise _Problem("malformed", f"{what}: not JSON ({err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise _Problem("malformed", f"{what}: no 'jobs' list in the JSON")
    return doc


def _recorded(path: Path, last: tuple[float, str] | None, limit: int) -> _Snapshot | None:
    """A recorded file, or the next file of a recorded directory after the last read
    (``None`` once all were read)."""
    if path.is_dir():
        done = last[1] if last is not None else ""
        files = sorted(p for p in path.glob("*.json") if p.name > done)
        if not files:
            return None
        path = files[0]
    try:
        with path.open("rb") as stream:
            stream.seek(0, 2)
            return _Snapshot([_load(stream, path.name, limit)], path.name)
    except OSError as err:
        raise _Problem("source_down", f"{path}: {err.strerror}") from None


def _number(value: object) -> float | None:
    """A Slurm number: plain (22.05) or ``{"set", "infinite", "number"}`` (23.02 on);
    ``inf`` when infinite, ``None`` when not set."""
    if isinstance(value, dict):
        if value.get("infinite"):
            return math.inf
        return float(value["number"]) if value.get("set") else None
    if isinstance(value, bool) or value is None:
        return None
    return float(value)


def _time(value: object) -> float | None:
    """A Slurm time (epoch s); 0, unset or infinite is unknown."""
    t = _number(value)
    return t if t is not None and 0 < t < math.inf else None


def _state(value: object) -> str:
    """The base state: a string (22.05), the first of a list (23.11 on), or sacct's
    ``{"current": ...}``."""
    if isinstance(value, dict):
        return _state(value["current"])
    if isinstance(value, list):
        return _state(value[0])
    if not isinstance(value, str) or not value:
        raise ValueError(f"job state {value!r}")
    return value.upper()


def _count(value: object) -> int | None:
    n = _number(value)
    return int(n) if n is not None and 0 <= n < math.inf else None


def _limit(minutes: object) -> float | None:
    n = _number(minutes)
    return None if n is None else n * 60.0


def parse_job(job: dict) -> dict:
    """One ``sched_jobs`` row (less ``known_at``) from a job of ``squeue --json`` or
    ``sacct --json`` of any Slurm from 22.05 on (sacct's tasks: its steps' most)."""
    if isinstance(job.get("time"), dict):  # sacct
        times = job["time"]
        steps = [_count(s.get("tasks", {}).get("count")) for s in job.get("steps") or []]
        row = {
            "user": job.get("user") or (job.get("association") or {}).get("user", ""),
            "nodes": _count(job.get("allocation_nodes")),
            "ntasks": max((s for s in steps if s), default=None),
            "state": _state(job["state"]),
            "submit_time": _time(times.get("submission")),
            "start_time": _time(times.get("start")),
            "end_time": _time(times.get("end")),
            "time_limit_s": _limit(times.get("limit")),
        }
    else:  # squeue
        row = {
            "user": job.get("user_name") or str(job.get("user_id", "")),
            "nodes": _count(job.get("node_count")),
            "ntasks": _count(job.get("tasks")),
            "state": _state(job["job_state"]),
            "submit_time": _time(job.get("submit_time")),
            "start_time": _time(job.get("start_time")),
            "end_time": _time(job.get("end_time")),
            "time_limit_s": _limit(job.get("time_limit")),
        }
    if row["state"] not in ENDED:
        row["end_time"] = None  # squeue's end of a live job is its limit, not an end
    row.update(jobid=int(job["job_id"]), name=str(job.get("name") or ""),
               partition=str(job.get("partition") or ""))  # fmt: skip
    return row


def _merge(docs: list[dict], report: FeedReport) -> list[dict]:
    """Rows of every job of ``docs``, the first document's record of a job winning (the
    queue over accounting); a job that cannot be read is one ``malformed`` warning."""
    rows: dict[int, dict] = {}
    for doc in docs:
        for job in doc["jobs"]:
            try:
                row = parse_job(job)
            except (KeyError, TypeError, ValueError, AttributeError) as err:
                jobid = job.get("job_id", "?") if isinstance(job, dict) else "?"
                report.warn("malformed", 1, f"Slurm job {jobid}: unreadable ({err!r})")
                continue
            rows.setdefault(row["jobid"], row)
    return list(rows.values())


def _table(rows: list[dict], now: float) -> pa.Table:
    import pyarrow as pa

    schema = pa.schema(
        [("jobid", pa.int64()), ("name", pa.string()), ("user", pa.string()),
         ("partition", pa.string()), ("nodes", pa.int64()), ("ntasks", pa.int64()),
         ("state", pa.string()), ("submit_time", pa.float64()), ("start_time", pa.float64()),
         ("end_time", pa.float64()), ("time_limit_s", pa.float64()),
         ("known_at", pa.float64())]
    )  # fmt: skip
    cols = {c: [r[c] for r in rows] for c in SCHED_COLUMNS}
    cols["known_at"] = [now] * len(rows)
    return pa.table(cols, schema=schema)


def _commit(warehouse: Warehouse, rows: list[dict], now: float, source: str) -> None:
    """The snapshot's jobs and its ``sched_snapshots`` row, as one atomic batch."""
    import pyarrow as pa

    snap = pa.table(
        {"known_at": [now], "jobs": [len(rows)], "source": [source]},
        schema=pa.schema([("known_at", pa.float64()), ("jobs", pa.int64()),
                          ("source", pa.string())]),
    )  # fmt: skip
    batch = {SCHED_SNAPSHOTS: [snap]}
    if rows:
        batch[SCHED_JOBS] = [_table(rows, now)]
    warehouse.commit(batch)


def begin_option(epoch: float) -> str:
    """``sbatch``'s ``--begin`` for a start at ``epoch``: local time (the time zone of
    the process, which ``sbatch`` run beside it reads the same way), rounded up to the
    second so the job never starts before the chosen time."""
    if not math.isfinite(epoch):
        raise IosightError(f"no start time to give sbatch: {epoch!r}")
    return f"--begin={_local(math.ceil(epoch))}"
