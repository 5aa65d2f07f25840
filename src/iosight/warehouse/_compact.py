"""Compaction: a table's many small Parquet files become a few large, sorted ones.

Every commit adds one file per table, and a reader opens (and reads the footer of)
every file of a table it scans, so a warehouse grown by thousands of ingests answers
ever more slowly. Compaction merges the small files, group by group: files each sorted
by job key (ingest's, earlier outputs) as sorted runs within a budget of decoded rows
(:mod:`iosight.warehouse._merge`; a group stops where its readers would pass that
module's reader budget), others by DuckDB under a memory limit (its sort spills to
disk), so its memory does not grow with the warehouse. Groups aim at
:data:`TARGET_BYTES`, and only files under half of
it count as small, so ``iosight compact`` by hand never merges an output of a full
group (a little under or over the target, as its compression goes) again; the
automatic compaction merges such runs of a table sorted by job key in tiers of their
own (:func:`due_groups`).

The automatic compaction after each ingest or follow batch merges small files of like
size only (size tiers): like Bigtable's merging compactions, which read a few SSTables
rather than all of them (Chang et al., 2006, "Bigtable", section 5.4), it waits for
:data:`AUTO_SMALL_FILES` files in one tier (tier 0 under :data:`TIER_BYTES`, each next
one :data:`TIER_FACTOR` times larger) and merges those, so its own earlier outputs
are left alone until enough of their size accumulate. A table that stays below the
target (Summit's 2021 job totals, 481 columns, are 11 MB) is then not read and sorted
whole again at every compaction: what one reads is bounded by its tier, each row is
rewritten once per tier, and the files stay bounded (fewer than
:data:`AUTO_SMALL_FILES` small files per tier, three tiers below the target). Past
the target, a per-job table's runs go on in tiers, each merged whole, so a table
keeps fewer than :data:`AUTO_SMALL_FILES` runs a tier at any size (every run spans
the key range, and a reader of one key range opens a file or two of each).
``iosight compact`` by hand merges every small file.

Rows are sorted by job start time and job key (``jobs``), by job key (the per-job
tables), or by job key and segment start time (the DXT tables, :data:`TABLE_SORT_COLUMNS`,
as ingest stages them: a time window of one job's segments then reads only the row
groups it overlaps), in row groups of :data:`ROW_GROUP_ROWS`:
Parquet's per-row-group min/max statistics then let a scan skip the row groups a
``start_time`` range, one job's key or a window of its segments cannot match (the zone
maps of Moerkotte, 1998, "Small Materialized Aggregates", section 2).

An output sorted by job key (every per-job table's) is cut into files of about
:data:`PART_BYTES`, each of whole jobs: a run of files of narrow, disjoint key ranges,
tiered and merged as one (:func:`run_of`). Every commit spans the whole key range (a job
key is a content hash), so one output file would too, and a reader of one key range
(a ``timeline build`` chunk, an ``insights`` batch) would list, and hold the footer of,
every file of the table (docs/warehouse.md, "Files of narrow key ranges"); it lists a
file or two of each run instead (:mod:`iosight.warehouse._keyrange`).
``iosight compact`` by hand also cuts the full outputs of compactions before runs
(:func:`wide_files`).

The outputs become visible in one atomic step (see :mod:`iosight.warehouse._store`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from iosight.warehouse._store import (
    COMPACT_PREFIX,
    SEQUENCE_TABLES,
    _sql_text,
    new_batch_id,
    parquet_rows,
    run_of,
)

if TYPE_CHECKING:
    import duckdb

    from iosight.warehouse._merge import SortedGroup
    from iosight.warehouse._store import Warehouse

#: the size a group of small files aims at; a file of half of it or more is left alone
TARGET_BYTES = 64 << 20
#: at most this many files merged into one output (their footers are held meanwhile)
GROUP_FILES = 256
#: a table with this many small files in one size tier has them merged after an
#: ingest or follow batch
AUTO_SMALL_FILES = 16
#: the size tiers of the automatic compaction: tier 0 holds the files under this many
#: bytes, tier k those under ``TIER_BYTES * TIER_FACTOR**k`` (and not in tier k - 1)
TIER_BYTES = 256 << 10
#: each tier's files are up to this many times larger than the tier below's
TIER_FACTOR = 16
#: rows per row group of an output: the unit a scan skips
ROW_GROUP_ROWS = 65_536
#: a merge's output sorted by job key is cut into files of about this many bytes (whole
#: jobs each), a run of files of narrow, disjoint key ranges: a reader of a key range
#: lists the few that overlap it, and holds their footers only (docs/warehouse.md,
#: "Files of narrow key ranges")
PART_BYTES = 8 << 20
#: DuckDB's memory limit while merging; beyond it the sort spills to disk
MEMORY_LIMIT = "512MB"
#: tables whose files their writer names (never merged)
OWN_FILES = frozenset({"timeline"})
#: sort columns, in order, where a table has them
SORT_COLUMNS = ("start_time", "job_key")
#: the tables sorted otherwise: a job's DXT segments by their start time
TABLE_SORT_COLUMNS = {"dxt_posix": ("job_key", "start"), "dxt_mpiio": ("job_key", "start")}


@dataclass
class CompactReport:
    """What a compaction did: files per table before and after, and how long it took.

    ``files_before``: Parquet files per table before the compaction; ``files_after``: the same
    after it; ``seconds``: how long it took; ``peak_mb``: the process's peak resident MB
    while each table merged (sampled every 20 ms; empty without ``/proc``), so a run
    shows which table sets compaction's memory.
    """

    files_before: dict[str, int] = field(default_factory=dict)
    files_after: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    peak_mb: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        """One line for the command line and follow's log."""
        if not self.files_before:
            return "compaction: no table has small files to merge"
        before, after = sum(self.files_before.values()), sum(self.files_after.values())
        peak = ""
        if self.peak_mb:
            top = max(self.peak_mb, key=self.peak_mb.__getitem__)
            peak = f", peak {self.peak_mb[top]:,.0f} MB ({top})"
        return (
            f"compacted {len(self.files_before)} tables: {before:,} files -> {after:,} "
            f"in {self.seconds:.1f} s{peak}"
        )


def table_runs(warehouse: Warehouse, name: str) -> list[list[Path]]:
    """Table ``name``'s files as runs (:func:`run_of`), oldest first."""
    runs: dict[str, list[Path]] = {}
    for f in warehouse.table_files(name):
        runs.setdefault(run_of(f), []).append(f)
    return list(runs.values())


def run_bytes(run: list[Path]) -> int:
    """The bytes of a run's files together."""
    return sum(f.stat().st_size for f in run)


def small_runs(warehouse: Warehouse, name: str) -> list[list[Path]]:
    """Table ``name``'s runs below half of :data:`TARGET_BYTES`, oldest first."""
    return [r for r in table_runs(warehouse, name) if run_bytes(r) < TARGET_BYTES // 2]


def wide_files(warehouse: Warehouse, name: str) -> list[list[Path]]:
    """Table ``name``'s full outputs of compactions before :data:`PART_BYTES` (a whole
    key range in one file, of up to :data:`TARGET_BYTES`) where its rows are sorted by
    job key: each a group of its own, which ``iosight compact`` cuts into a run of
    files of narrow key ranges."""
    wide = [
        r
        for r in table_runs(warehouse, name)
        if len(r) == 1
        and run_of(r[0]) == r[0].name
        and r[0].name.startswith(COMPACT_PREFIX)
        and r[0].stat().st_size >= TARGET_BYTES // 2
    ]
    return wide if wide and keyed(name, wide[0][0]) else []


def keyed(name: str, path: Path) -> bool:
    """Whether table ``name``'s rows (as file ``path`` has its columns) are sorted by
    job key first: every per-job table's, not ``jobs``' (by start time)."""
    import pyarrow.parquet as pq

    names = set(pq.read_schema(path).names)
    return [c for c in TABLE_SORT_COLUMNS.get(name, SORT_COLUMNS) if c in names][:1] == ["job_key"]


def merge_groups(runs: Iterable[list[Path]], whole: bool = False) -> list[list[Path]]:
    """The files of ``runs`` in groups of whole runs, of at most :data:`GROUP_FILES`
    files, about :data:`TARGET_BYTES` (``whole``: of any size), and readers that hold
    at most the merge's reader budget (:func:`iosight.warehouse._merge.reader_bytes`, a
    run's largest file's: the merge reads its files one after another); a lone run is no group
    (merging it changes nothing). Bounding the readers keeps a group of sorted files in
    the merge of sorted runs: past the budget, DuckDB sorted it, and held its memory
    limit and more (a tier-0 group of ``posix``, the 69 files of a 10,000-log ingest:
    779 MB)."""
    from iosight.warehouse._merge import READER_BUDGET, reader_bytes

    groups: list[list[list[Path]]] = [[]]
    size = readers = files = 0
    for run in runs:
        held = max(reader_bytes(f) for f in run)
        full = not whole and size >= TARGET_BYTES
        if groups[-1] and (
            files + len(run) > GROUP_FILES or full or readers + held > READER_BUDGET
        ):
            groups.append([])
            size = readers = files = 0
        groups[-1].append(run)
        size += run_bytes(run)
        readers += held
        files += len(run)
    return [[f for run in g for f in run] for g in groups if len(g) > 1]


def compactable(warehouse: Warehouse) -> list[str]:
    """The tables compaction may merge: all but those whose writer names its files
    (the timeline's files are its runs of bins, rewritten one by one by an update)."""
    return [t for t in warehouse.tables() if t not in OWN_FILES]


def size_tier(size: int) -> int:
    """The tier of a file of ``size`` bytes: 0 under :data:`TIER_BYTES`, one more for
    each further factor of :data:`TIER_FACTOR`."""
    tier, bound = 0, TIER_BYTES
    while size >= bound:
        tier, bound = tier + 1, bound * TIER_FACTOR
    return tier


def due_groups(warehouse: Warehouse, name: str) -> list[list[Path]]:
    """The groups the automatic compaction merges in table ``name``: the runs of each
    size tier holding at least :data:`AUTO_SMALL_FILES` of them, oldest first.

    Runs under half the target merge in groups of about the target. In a table sorted
    by job key, runs past it are tiered too, and a tier from the target's up merges
    whole: a key range's reader lists a file or two of every run (each run spans
    the key range), so runs never merged again would grow in number with the
    warehouse, and with them what a ``timeline build`` chunk or ``insights`` batch
    holds (docs/warehouse.md, "Runs merged in tiers"); tiered, a table keeps fewer than
    :data:`AUTO_SMALL_FILES` runs a tier, and each row is rewritten once a tier."""
    runs = table_runs(warehouse, name)
    by_key = bool(runs) and keyed(name, runs[0][0])
    tiers: dict[int, list[list[Path]]] = {}
    for run in runs:
        size = run_bytes(run)
        if size < TARGET_BYTES // 2 or by_key:
            tiers.setdefault(size_tier(size), []).append(run)
    top = size_tier(TARGET_BYTES)  # the tier of a full output, and those above
    return [
        group
        for tier, runs in tiers.items()
        if len(runs) >= AUTO_SMALL_FILES
        for group in merge_groups(runs, whole=by_key and tier >= top)
    ]


def auto_compact(warehouse: Warehouse) -> CompactReport | None:
    """Merge what :func:`due_groups` names in each table (after an ingest); ``None``
    when nothing is due. Files replaced over the grace period ago are deleted from every
    table meanwhile, so they do not wait for that table's next compaction.

    ``warehouse``: the warehouse just written.
    """
    with warehouse.writer_lock():
        for name in warehouse.tables():
            warehouse.purge_superseded(name)
        plans = {t: g for t in compactable(warehouse) if (g := due_groups(warehouse, t))}
        return _compact_plans(warehouse, plans) if plans else None


def compact(warehouse: Warehouse, tables: Iterable[str] | None = None) -> CompactReport:
    """Merge the small files of ``tables`` (default: all; never the timeline's, see
    :data:`OWN_FILES`), one atomic commit per table, and cut each full output of a
    compaction before :data:`PART_BYTES` into files of narrow key ranges
    (:func:`wide_files`).

    Also deletes the files an earlier compaction hid once no query can still be
    reading them (:meth:`Warehouse.purge_superseded`).

    ``warehouse``: the warehouse whose tables are compacted.
    """
    with warehouse.writer_lock():
        names = compactable(warehouse) if tables is None else tables
        plans = {}
        for name in (n for n in names if n not in OWN_FILES):
            warehouse.purge_superseded(name)
            if groups := merge_groups(small_runs(warehouse, name)) + wide_files(warehouse, name):
                plans[name] = groups
        return _compact_plans(warehouse, plans)


def _compact_plans(warehouse: Warehouse, plans: dict[str, list[list[Path]]]) -> CompactReport:
    """Merge each table's groups of files (under the writer lock), one commit a table."""
    report = CompactReport()
    t0 = time.monotonic()
    with _PeakRss() as rss:
        for name, groups in plans.items():
            report.files_before[name] = len(warehouse.table_files(name))
            rss.reset()
            _compact_table(warehouse, name, groups)
            if (peak := rss.reset()) is not None:
                report.peak_mb[name] = peak
            report.files_after[name] = len(warehouse.table_files(name))
    report.seconds = time.monotonic() - t0
    return report


class _PeakRss:
    """The process's peak resident memory, sampled every 20 ms from ``/proc/self/status``
    on a thread (the kernel's own high-water mark cannot be reset per table without
    resetting what ``getrusage`` reports to the process's parent)."""

    def __init__(self) -> None:
        self.peak: float | None = _rss_mb()
        self.stop, self.lock = threading.Event(), threading.Lock()
        self.thread = threading.Thread(target=self._sample, daemon=True, name="iosight-rss")

    def reset(self) -> float | None:
        """The peak MB since the last reset (``None`` without ``/proc``); start anew."""
        now = _rss_mb()
        with self.lock:
            peak, self.peak = self.peak, now
        return None if peak is None or self.peak is None else max(peak, self.peak)

    def _sample(self) -> None:
        while not self.stop.wait(0.02):
            now = _rss_mb()
            with self.lock:
                if now is not None and self.peak is not None:
                    self.peak = max(self.peak, now)

    def __enter__(self) -> _PeakRss:
        if self.peak is not None:
            self.thread.start()
        return self

    def __exit__(self, *error: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()


def _rss_mb() -> float | None:
    """The process's resident MB now, or ``None`` where there is no ``/proc``."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024
    except (OSError, StopIteration, ValueError):
        return None


def _compact_table(warehouse: Warehouse, name: str, groups: list[list[Path]]) -> None:
    """Write the sorted outputs of each group into staging, then commit them as one batch."""
    batch = new_batch_id()
    staging = warehouse.staging_dir(batch)
    staged = staging / "compact" / name
    staged.mkdir(parents=True)
    outputs = []
    merger = Merger(staging / "spill")
    try:
        for i, group in enumerate(groups):
            out = staged / f"{COMPACT_PREFIX}{batch}-{i}.parquet"
            sort = TABLE_SORT_COLUMNS.get(name, SORT_COLUMNS)
            written = merge_files(merger, group, out, sort, sequence=name in SEQUENCE_TABLES)
            outputs += [f.name for f in written]
    finally:
        merger.close()
    replaced = [f.name for g in groups for f in g]
    warehouse.commit_staged(
        batch, [], compaction={name: {"outputs": outputs, "replaces": replaced}}
    )


class Merger:
    """The DuckDB connection that sorts what the merge of sorted runs cannot take, in
    bounded memory, spilling to ``spill``: made on first use, as most groups are merged
    without it (a connection costs some 15 ms of CPU: once per table at every automatic
    compaction, it was a tenth of a small table's merge)."""

    def __init__(self, spill: Path) -> None:
        self.spill = spill
        self._con: duckdb.DuckDBPyConnection | None = None

    @property
    def opened(self) -> bool:
        """Whether a merge needed DuckDB (the connection exists)."""
        return self._con is not None

    def connection(self) -> duckdb.DuckDBPyConnection:
        """The connection, made now if no merge needed it before."""
        if self._con is None:
            import duckdb

            self._con = duckdb.connect()
            self._con.execute("set enable_progress_bar = false")  # iosight reports its own
            self._con.execute(f"set memory_limit = '{MEMORY_LIMIT}'")
            self._con.execute(f"set temp_directory = {_sql_text(self.spill)}")
            self._con.execute("set preserve_insertion_order = false")
        return self._con

    def close(self) -> None:
        """Close the connection, if one was made."""
        if self._con is not None:
            self._con.close()
            self._con = None


def merge_files(
    merger: Merger,
    files: list[Path],
    out: Path,
    sort: tuple[str, ...] = SORT_COLUMNS,
    *,
    sequence: bool = False,
) -> list[Path]:
    """Write the rows of ``files`` (columns unified by name) sorted by the ``sort``
    columns they have, keeping the first file's key-value metadata, as one run named
    after ``out`` (``<stem>-<j>.parquet``, :func:`run_of`); returns its files. Files each
    already sorted by job key first (ingest's, earlier outputs) are merged without a
    sort (:mod:`iosight.warehouse._merge`, which encodes a ``sequence`` table's numbers
    as ingest does) into files of about :data:`PART_BYTES`; others are sorted by
    ``merger``'s DuckDB into one file."""
    import pyarrow.parquet as pq

    from iosight.warehouse._merge import Unmergeable, merge_runs, sorted_group

    columns = {name for f in files for name in pq.read_schema(f).names}
    by = [c for c in sort if c in columns]
    if by and (group := sorted_group(files, by)) is not None:
        try:
            return merge_runs(  # jobs moved, no sort
                group, out, ROW_GROUP_ROWS, sequence=sequence, part_rows=part_rows(group)
            )
        except Unmergeable:
            pass  # rows out of the merge's order: sorted below
    only = out.with_name(f"{out.stem}-0{out.suffix}")
    rows = parquet_rows(files)
    order = [f'"{c}"' for c in by]
    query = f"select * from {rows}" + (f" order by {', '.join(order)}" if order else "")
    options = f"format parquet, compression zstd, row_group_size {ROW_GROUP_ROWS}"
    metadata = _key_values(files[0])
    if metadata:
        options += f", kv_metadata {metadata}"
    merger.connection().execute(f"copy ({query}) to {_sql_text(only)} ({options})")
    return [only]


def part_rows(group: SortedGroup) -> int:
    """Rows of an output file of about :data:`PART_BYTES`, as ``group``'s files hold rows
    a byte (their row counts as :func:`~iosight.warehouse._merge.sorted_group` read them),
    in whole row groups of :data:`ROW_GROUP_ROWS`."""
    size = max(1, sum(f.stat().st_size for f in group.files))
    groups = -(-PART_BYTES * sum(group.rows) // size // ROW_GROUP_ROWS)
    return max(1, groups) * ROW_GROUP_ROWS


def _key_values(path: Path) -> str:
    """The file's own key-value metadata (a timeline's build options) as a DuckDB struct
    literal; Arrow's and pandas' stored schemas are left out (DuckDB writes its own types)."""
    import pyarrow.parquet as pq

    meta = pq.read_metadata(path).metadata or {}
    pairs = [
        f"{_sql_text(k.decode())}: {_sql_text(v.decode())}"
        for k, v in meta.items()
        if k not in (b"ARROW:schema", b"pandas")
    ]
    return "{" + ", ".join(pairs) + "}" if pairs else ""
