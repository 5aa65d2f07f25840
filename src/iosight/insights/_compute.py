"""Evaluate every rule over many jobs and keep the results in the warehouse.

Three derived tables: ``insights`` (one row per finding), ``insights_jobs`` (one row
per evaluated job: the thresholds' digest, counts per level, and the rules its data
could not evaluate) and ``insights_rules`` (one row per rule: its title and what it
needs, so one job's stored results are read without importing the rules). Jobs already
evaluated with the same thresholds are skipped, so running again after an ingest
evaluates only the new jobs.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from iosight._errors import IosightError
from iosight._memory import release_free_memory
from iosight._progress import Progress, ensure_progress
from iosight.insights._names import FINDINGS_TABLE, JOBS_TABLE, RULES_TABLE
from iosight.insights._thresholds import Thresholds
from iosight.warehouse import Warehouse, for_jobs, new_batch_id, stage_tables, staged_writer

#: jobs a batch evaluates at most: each batch costs its queries and a commit whatever
#: its size, so batches are not made smaller than their rows require
BATCH_JOBS = 5000
#: ``posix`` rows a batch's jobs hold at most (a job with more is a batch alone): its
#: frames, a DuckDB query over these rows, are the run's peak, so the rows, not the jobs,
#: bound its memory whatever the warehouse holds (docs/insights.md, "At a million jobs")
BATCH_ROWS = 250_000
# batches whose keys and per-job frame one query each takes: such a query scans the per-job
# tables of the whole warehouse (their files are not sorted by key), so a pass over all
# jobs makes jobs / batch_jobs / KEYS_AHEAD of them; what is held is batch_jobs * KEYS_AHEAD
# keys and their per-job rows (docs/insights.md, "At a million jobs")
KEYS_AHEAD = 10


@dataclass
class InsightsRun:
    """What :func:`compute_insights` did.

    ``seconds``: how long it took.
    """

    jobs: int  # jobs in scope
    evaluated: int  # jobs evaluated now (new, or stored with other thresholds)
    findings: int  # findings written now
    seconds: float

    def summary(self) -> str:
        """One line: jobs evaluated now, findings, time and rate, jobs already stored."""
        rate = self.evaluated / self.seconds if self.seconds > 0 else float("inf")
        return (
            f"{self.jobs} jobs: {self.evaluated} evaluated now ({self.findings} findings, "
            f"{self.seconds:.1f} s, {rate:.0f} jobs/s), {self.jobs - self.evaluated} already stored"
        )


def compute_insights(
    warehouse: Warehouse,
    *,
    where: str | None = None,
    thresholds: Thresholds | None = None,
    batch_jobs: int = BATCH_JOBS,
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> InsightsRun:
    """Evaluate the rules for the jobs (matching ``where``) not yet stored with these thresholds.

    Work goes in batches of at most ``batch_jobs`` jobs and ``batch_rows`` ``posix``
    rows (at least one job), each one SQL pass per frame, committed a window of
    up to :data:`KEYS_AHEAD` batches at a time (one atomic commit), so memory stays bounded
    and an interrupted run keeps the windows it committed.

    ``warehouse``: the warehouse read; the findings are stored there; ``thresholds``: the rules'
    thresholds (default: Drishti's); ``progress``: told of each batch (default: silent).
    """
    t = thresholds or Thresholds()
    if batch_jobs < 1 or batch_rows < 1:
        raise IosightError(f"a batch needs at least one job and one row, not {batch_jobs} "
                           f"jobs and {batch_rows} rows")  # fmt: skip
    warehouse.require("jobs")
    start = time.perf_counter()
    scope, todo = _scope(warehouse, where, t)
    if where and not scope:
        raise IosightError(f"no job matches the filter {where!r}")
    if todo or not warehouse.has_table(RULES_TABLE):
        # the rules and numpy: only where there is work (nothing new: neither is imported)
        from iosight.insights._evaluate import arrow, evaluate_jobs, rules_table
        from iosight.insights._frame import jobs_frame, posix_rows

        warehouse.write_table(RULES_TABLE, rules_table())
    prog = ensure_progress(progress)
    prog.start(todo, "insights")
    n_found, left, stored = 0, todo, None
    try:
        for source in _sources(warehouse, todo, batch_jobs):
            last, ahead = "", []
            while left > 0:
                if not ahead:  # several batches' keys and per-job frame: each read scans all jobs
                    ahead = _next_keys(warehouse, where, t, last, batch_jobs * KEYS_AHEAD, source)
                    if not ahead:
                        break
                    window = [key for key, _ in ahead]
                    jobs = jobs_frame(warehouse, window)
                    rows = posix_rows(for_jobs(warehouse, window, always=True), window)
                    stored = _Window(warehouse)
                n = _batch_size(rows, batch_jobs, batch_rows)
                batch, ahead, rows = ahead[:n], ahead[n:], rows[n:]
                keys = [key for key, _ in batch]
                # its per-record tables read only the files holding its jobs (the key index)
                reader = for_jobs(warehouse, keys, always=True)
                found, per_job = evaluate_jobs(reader, keys, t, jobs)
                # only jobs stored under other thresholds have rows to replace
                stored.add(arrow(found), arrow(per_job), [key for key, old in batch if old])
                if not ahead or len(keys) >= left:  # the window's end, or the run's
                    stored.commit()
                n_found += len(found)
                del found, per_job, reader
                release_free_memory()  # what the batch freed, before the next one takes more
                last, left = keys[-1], left - len(keys)
                prog.advance(len(keys))
    finally:
        if stored is not None:
            stored.close()  # a window cut short: its staging is left to recovery
        prog.finish()
    return InsightsRun(scope, todo, n_found, time.perf_counter() - start)


class _Window:
    """The results of one window's batches (:data:`KEYS_AHEAD`), committed as one batch:
    each batch's findings written to the window's one staged file as it comes (a row
    group a batch; some 4.4 MiB of Arrow a batch at a million jobs, so not held), its
    per-job rows (some 0.4 MiB) held and staged at the end. So ``insights_jobs``, which
    the next window's query of stored jobs lists file by file, gains a file a window,
    not a batch: DuckDB held some 20-45 KB for each file listed, and a run of 3,077
    batches drifted up to 657 MiB (docs/insights.md, "Ten million's count of
    batches"); ``insights``, read by the facility view after the run, gains one too.
    Holds the warehouse's write lock meanwhile, so no reader's recovery takes the staged
    files for a killed writer's; a run cut short (:meth:`close` before :meth:`commit`)
    stores nothing of the window, whose staging the next recovery removes
    (:meth:`Warehouse.recover`, as for a killed ingest; not here, where a commit whose
    record was written must be finished from it), and the next run evaluates it again."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse, self.batch = warehouse, new_batch_id()
        self.per_job: list = []
        self.stale: list[str] = []
        self.findings = None  # the staged file's writer, from the first finding on
        self.lock = ExitStack()
        self.lock.enter_context(warehouse.writer_lock())

    def add(self, found, per_job, stale: list[str]) -> None:
        """Write one batch's findings, hold its per-job rows and its stale keys."""
        if found.num_rows:
            if self.findings is None:
                writer = staged_writer(self._staging, FINDINGS_TABLE, found.schema)
                self.findings = self.lock.enter_context(writer)
            self.findings.write_table(found)
        self.per_job.append(per_job)
        self.stale += stale

    def commit(self) -> None:
        """Store the window's batches in one commit (their old rows replaced)."""
        with self.lock:  # the findings' file closed first, the lock let go last
            tables = stage_tables(self._staging, {JOBS_TABLE: self.per_job})
            if self.findings is not None:
                self.findings.close()
                tables.append(FINDINGS_TABLE)
            self.warehouse.commit_staged(
                self.batch, sorted(tables),
                delete_keys={FINDINGS_TABLE: self.stale, JOBS_TABLE: self.stale},
            )  # fmt: skip
            self.per_job = []  # let the rows go before the next window's frames

    def close(self) -> None:
        """Let the lock go (and close the findings' file) where :meth:`commit` did not."""
        self.lock.close()

    @property
    def _staging(self) -> Path:
        return self.warehouse.staging_dir(self.batch)


def _sources(warehouse: Warehouse, todo: int, batch_jobs: int) -> list[Path | None]:
    """The passes of a run of ``todo`` jobs: the jobs of each ``posix`` file in turn, then
    every job left (``None``: those without records, or in files that came meanwhile);
    only the last where the run has fewer jobs than a batch per file (the jobs of an
    ingest, a narrow ``where``), since each file's pass reads that file's keys.

    Every file spans the whole key range (a job key is a content hash), so a batch of
    keys in key order reads a row group of every file, and DuckDB holds about 1 KB for
    each column chunk of every file a scan lists: 98 MB of ``posix``'s at a million jobs
    (measured), by the same count some ten times that at ten million (not measured). A
    batch of one file's jobs, read through the key index
    (:func:`~iosight.warehouse.for_jobs`), lists that file and any other holding one of
    its jobs, so what it holds is bounded by the file, not the warehouse; the jobs left
    list the files that hold them, none where they have no records (docs/insights.md,
    "One file at a time")."""
    files: list[Path | None] = []
    if warehouse.has_table("posix"):
        files = list(warehouse.table_files("posix"))
    return [*files, None] if todo >= len(files) * batch_jobs else [None]


def _batch_size(rows: list[int], batch_jobs: int, batch_rows: int) -> int:
    """How many of the next jobs (``rows``: each one's ``posix`` rows) make a batch: at
    most ``batch_jobs``, as many as hold ``batch_rows`` rows together, one at least."""
    return max(1, bisect_right(list(accumulate(rows[:batch_jobs])), batch_rows))


def _todo_sql(
    warehouse: Warehouse,
    where: str | None,
    t: Thresholds,
    after: str | None = None,
    source: Path | None = None,
) -> tuple[str, list]:
    """The jobs in scope (``s``) left-joined with the stored ones (``d``: ``current``
    when stored under ``t``), and the query's parameters; ``after``: only keys after it,
    on both sides, so a batch's query reads the stored jobs' key-sorted files from its
    first key on rather than grouping them all again; ``source``: only the jobs with
    rows in that ``posix`` file."""
    later = "job_key > ?" if after is not None else ""
    conds = ([f"({where})"] if where else []) + ([later] if later else [])
    params: list = [after] if later else []
    if source is not None:  # its keys after ``after`` (the file is sorted by key), each once
        inside = "select distinct job_key from read_parquet(?)"
        conds.append(f"job_key in ({inside}{' where job_key > ?' if later else ''})")
        params += [str(source), *params]
    scope = "select job_key from jobs" + (f" where {' and '.join(conds)}" if conds else "")
    if warehouse.has_table(JOBS_TABLE):
        stored = (
            f"select job_key, bool_or(thresholds = ?) as current from {JOBS_TABLE}"
            + (f" where {later}" if later else "")
            + " group by job_key"
        )
        params += [t.digest()] + ([after] if later else [])
    else:
        stored = "select null::varchar as job_key, false as current"
    return f"({scope}) s left join ({stored}) d using (job_key)", params


def _scope(warehouse: Warehouse, where: str | None, t: Thresholds) -> tuple[int, int]:
    """How many jobs are in scope, and how many of them are not stored under ``t``."""
    todo = "count(*) filter (where d.current is not true)"
    rows, params = _todo_sql(warehouse, where, t)
    scope, todo = warehouse.rows(f"select count(*), {todo} from {rows}", params).values[0]
    return int(scope), int(todo)


def _next_keys(
    warehouse: Warehouse,
    where: str | None,
    t: Thresholds,
    after: str,
    n: int,
    source: Path | None = None,
) -> list[tuple[str, bool]]:
    """The next ``n`` jobs in key order after ``after`` not stored under ``t`` (of those
    with rows in the ``posix`` file ``source``, where given), each with whether it is
    stored under other thresholds: one batch at a time, so no list of every job is ever
    held (memory bounded by the batch)."""
    rows, params = _todo_sql(warehouse, where, t, after, source)
    query = (
        f"select s.job_key, d.job_key is not null from {rows} "
        "where d.current is not true order by s.job_key limit ?"
    )
    return [(key, stored) for key, stored in warehouse.rows(query, [*params, n]).values]
