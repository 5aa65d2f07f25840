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
#: jobs a key range holds (:class:`_Todo`): the search of a million jobs, all stored, held
#: 14 MiB in ranges of 200,000, 153 MiB in one join (docs/insights.md, "The stored jobs,
#: a key range at a time")
RANGE_JOBS = 200_000
_KEY_SAMPLE = 20_000  # keys sampled for the ranges' bounds (400 a range at ten million's 50)


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
    pending = _Todo(warehouse, where, t)
    scope, todo = pending.count()
    if where and not scope:
        raise IosightError(f"no job matches the filter {where!r}")
    if todo or not warehouse.has_table(RULES_TABLE):
        # the rules and numpy: only where there is work (nothing new: neither is imported)
        from iosight.insights._evaluate import arrow, evaluate_jobs, rules_table
        from iosight.insights._frame import jobs_frame, posix_rows

        warehouse.write_table(RULES_TABLE, rules_table())
    prog = ensure_progress(progress)
    prog.start(todo, "insights")
    n_found, left, results = 0, todo, None
    try:
        for source in _sources(warehouse, todo, batch_jobs):
            last, ahead = "", []
            while left > 0:
                if not ahead:  # several batches' keys and per-job frame: each read scans all jobs
                    ahead = pending.next_keys(last, batch_jobs * KEYS_AHEAD, source)
                    if not ahead:
                        break
                    window = [key for key, _ in ahead]
                    jobs = jobs_frame(warehouse, window)
                    rows = posix_rows(for_jobs(warehouse, window, always=True), window)
                    results = _Window(warehouse)
                n = _batch_size(rows, batch_jobs, batch_rows)
                batch, ahead, rows = ahead[:n], ahead[n:], rows[n:]
                keys = [key for key, _ in batch]
                # its per-record tables read only the files holding its jobs (the key index)
                reader = for_jobs(warehouse, keys, always=True)
                found, per_job = evaluate_jobs(reader, keys, t, jobs)
                # only jobs stored under other thresholds have rows to replace
                results.add(arrow(found), arrow(per_job), [key for key, old in batch if old])
                if not ahead or len(keys) >= left:  # the window's end, or the run's
                    results.commit()
                n_found += len(found)
                del found, per_job, reader
                release_free_memory()  # what the batch freed, before the next one takes more
                last, left = keys[-1], left - len(keys)
                prog.advance(len(keys))
    finally:
        if results is not None:
            results.close()  # a window cut short: its staging is left to recovery
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
            self.findings.write_table(found.cast(self.findings.schema))  # as the first batch's
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


class _Todo:
    """The jobs in scope (matching ``where``) and which of them are to evaluate (not
    stored under ``t``), asked a key range at a time: each query joins a range's jobs
    (or, in a ``posix`` file's pass, the file's) with their stored results, so what
    DuckDB holds is bounded by the range or the file, not the warehouse (one join of
    every job with every stored one held 153 MiB at a million jobs, 7 at 100,000;
    docs/insights.md, "The stored jobs, a key range at a time"). The ranges hold some
    :data:`RANGE_JOBS` jobs in scope each, their bounds drawn from a sample of the keys
    (a Darshan job's key is a content hash, an imported job's need not be); each range
    costs a scan of the ``jobs`` keys (not sorted by key)."""

    def __init__(self, warehouse: Warehouse, where: str | None, t: Thresholds) -> None:
        self.warehouse, self.where, self.digest = warehouse, where, t.digest()
        self.bounds = _key_bounds(warehouse, where)  # the ranges' upper bounds, None: no end

    def count(self) -> tuple[int, int]:
        """How many jobs are in scope, and how many of them are to evaluate."""
        scope = todo = 0
        for lo, hi in zip([None, *self.bounds], self.bounds, strict=False):
            sql, params = self._sql(lo, hi)
            query = f"{sql} select count(*), count(*) filter (where d.current is not true) {_JOIN}"
            n, m = self.warehouse.rows(query, params).values[0]
            scope, todo = scope + int(n), todo + int(m)
        return scope, todo

    def next_keys(self, after: str, n: int, source: Path | None = None) -> list[tuple[str, bool]]:
        """The next ``n`` jobs to evaluate in key order after ``after`` (of those with rows
        in the ``posix`` file ``source``, where given: one query, bounded by the file),
        each with whether it is stored under other thresholds: a window at a time, so no
        list of every job is ever held."""
        found: list = []
        for hi in [None] if source is not None else self.bounds:
            if hi is not None and hi <= after:
                continue
            sql, params = self._sql(after, hi, source)
            query = (
                f"{sql} select s.job_key, d.job_key is not null {_JOIN} "
                "where d.current is not true order by s.job_key limit ?"
            )
            found += self.warehouse.rows(query, [*params, n - len(found)]).values
            if len(found) >= n or hi is None:
                break
            after = hi  # the next range's jobs
        return [(key, stored) for key, stored in found]

    def _sql(
        self, after: str | None, upto: str | None, source: Path | None = None
    ) -> tuple[str, list]:
        """The ``with`` clause of the jobs in scope with keys in ``(after, upto]`` (``s``;
        ``source``: only those with rows in that ``posix`` file) and of those of them
        stored (``d``: ``current`` when under these thresholds), and its parameters; the
        stored side reads only the keys of ``s`` (a semi-join: held, the scope alone)."""
        keys, params = [], []
        if after is not None:
            keys.append("job_key > ?")
            params.append(after)
        if upto is not None:
            keys.append("job_key <= ?")
            params.append(upto)
        conds = ([f"({self.where})"] if self.where else []) + keys
        scope_params = list(params)
        if source is not None:  # its keys in the range (the file is sorted by key), each once
            inside = "select distinct job_key from read_parquet(?)"
            conds.append(f"job_key in ({inside}{' where ' + ' and '.join(keys) if keys else ''})")
            scope_params += [str(source), *params]
        scope = "select job_key from jobs" + (f" where {' and '.join(conds)}" if conds else "")
        if self.warehouse.has_table(JOBS_TABLE):  # key-sorted: the bounds prune row groups
            inside = " and ".join([*keys, "job_key in (select job_key from s)"])
            stored = (f"select job_key, bool_or(thresholds = ?) as current from {JOBS_TABLE} "
                      f"where {inside} group by job_key")  # fmt: skip
            stored_params = [self.digest, *params]
        else:
            stored, stored_params = "select null::varchar as job_key, false as current", []
        sql = f"with s as materialized ({scope}), d as ({stored})"
        return sql, [*scope_params, *stored_params]


#: the join of the jobs in scope with the stored ones (:meth:`_Todo._sql`'s ``s`` and ``d``)
_JOIN = "from s left join d using (job_key)"


def _key_bounds(warehouse: Warehouse, where: str | None = None) -> list[str | None]:
    """Upper bounds of key ranges of some :data:`RANGE_JOBS` jobs in scope (matching
    ``where``) each, the last None (no bound; the only one where the scope is smaller):
    quantiles of a sample of their keys (a reservoir: held, the sample alone)."""
    conds = " and ".join(["job_key is not null", *([f"({where})"] if where else [])])
    scope = f"select job_key from jobs where {conds}"
    jobs = int(warehouse.rows(f"select count(*) from ({scope})").values[0][0])
    ranges = -(-jobs // RANGE_JOBS)
    if ranges <= 1:
        return [None]
    sample = f"select * from ({scope}) using sample reservoir({_KEY_SAMPLE} rows) repeatable (7)"
    keys = sorted(key for (key,) in warehouse.rows(sample).values)
    cuts = sorted({keys[len(keys) * i // ranges - 1] for i in range(1, ranges)})
    return [*cuts, None]
