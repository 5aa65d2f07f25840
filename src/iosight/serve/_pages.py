"""What each page shows, as queries over the warehouse (no web code here).

Every query pages, filters and aggregates inside DuckDB and returns at most one
page of rows (or a few thousand plotted points), so a page costs the same on the
53,546-job Summit warehouse as on a million jobs.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from iosight._errors import IosightError, check_param
from iosight.serve._readonly import ServedWarehouse, check_where, deadline
from iosight.warehouse import for_job, for_jobs

if TYPE_CHECKING:
    import pandas as pd

    from iosight.report.dxt import DxtView, DxtWindow
    from iosight.schedule import Recommendation
    from iosight.serve._decisions import Decisions, ServedForecast

# sortable column -> SQL expression (``bytes`` comes from job_totals)
SORTS = {
    "jobid": "j.jobid",
    "uid": "j.uid",
    "exe": "j.exe",
    "nprocs": "j.nprocs",
    "start_time": "j.start_time",
    "run_time": "j.run_time",
    "bytes": "t.bytes",
}
JOB_COLUMNS = ("job_key", "jobid", "uid", "exe", "nprocs", "start_time", "run_time", "synthetic")
# bytes of a job: POSIX and STDIO, read and written (the layers the timeline sums, §IV)
_BYTES_COUNTERS = (
    "total_POSIX_BYTES_READ",
    "total_POSIX_BYTES_WRITTEN",
    "total_STDIO_BYTES_READ",
    "total_STDIO_BYTES_WRITTEN",
)
MAX_PAGE_SIZE = 500
# re-binning ladder of the Facility figure (seconds), from the base 5-minute bins up
_LADDER = (300, 900, 3600, 3 * 3600, 6 * 3600, 86400, 7 * 86400)


@dataclass(frozen=True)
class JobFilter:
    """The Jobs page's question: filters, one sort column, one page.

    Times are epoch seconds (UTC); ``exe`` matches a substring, case-insensitively;
    ``user`` is the uid as stored; ``where`` is a SQL condition on ``jobs`` columns
    (checked by :func:`~iosight.serve.check_where`).

    ``start_from``: jobs starting at or after this time; ``start_to``: jobs starting before this
    time; ``nprocs_min``: at least this many processes; ``nprocs_max``: at most this many
    processes; ``bytes_min``: at least this many bytes read and written; ``bytes_max``: at most
    this many; ``sort``: the column sorted on; ``descending``: sort from the largest; ``page``:
    the page shown, from 1; ``page_size``: jobs per page.
    """

    start_from: float | None = None
    start_to: float | None = None
    exe: str | None = None
    user: str | None = None
    nprocs_min: int | None = None
    nprocs_max: int | None = None
    bytes_min: float | None = None
    bytes_max: float | None = None
    where: str | None = None
    sort: str = "start_time"
    descending: bool = True
    page: int = 1
    page_size: int = 50


@dataclass
class JobsPage:
    """One page of jobs: ``rows`` (at most ``page_size``), ``total`` matching jobs.

    ``page``: its number, from 1.
    """

    rows: pd.DataFrame
    total: int
    page: int
    page_size: int

    @property
    def pages(self) -> int:
        """Pages of ``page_size`` rows (at least one, even for no rows)."""
        return max(1, math.ceil(self.total / self.page_size))


def _bytes_expr(wh: ServedWarehouse) -> str | None:
    def compute() -> str | None:
        if not wh.has_table("job_totals"):
            return None
        cols = set(wh.column_names("job_totals"))
        have = [c for c in _BYTES_COUNTERS if c in cols]
        return " + ".join(f'coalesce("{c}", 0)' for c in have) if have else None

    return wh.memo("bytes_expr", compute)


def jobs_page(wh: ServedWarehouse, f: JobFilter) -> JobsPage:
    """One page of the ``jobs`` table, filtered and sorted inside DuckDB.

    ``wh``: the served warehouse; ``f``: the filters, sort and page.
    """
    wh.require("jobs")
    check_param("sort", f.sort, f.sort in SORTS, f"one of {', '.join(SORTS)}")
    check_param("page", f.page, f.page >= 1, "a page number from 1")
    check_param("page_size", f.page_size, 1 <= f.page_size <= MAX_PAGE_SIZE,
                f"between 1 and {MAX_PAGE_SIZE}")  # fmt: skip
    bytes_sql = _bytes_expr(wh)
    need_bytes = f.sort == "bytes" or f.bytes_min is not None or f.bytes_max is not None
    if need_bytes and bytes_sql is None:
        raise IosightError("this warehouse has no job_totals table: no bytes per job to use")
    cursor = wh.connect()
    source = f"(select * from jobs where {check_where(f.where, con=cursor)})" if f.where else "jobs"
    frm = plain = f"from {source} j"
    if need_bytes:
        frm += (
            f" left join (select job_key, {bytes_sql} as bytes from job_totals) t using (job_key)"
        )
    conds, params = _conditions(f)
    key, way = SORTS[f.sort], "desc" if f.descending else "asc"
    offset = (f.page - 1) * f.page_size
    cols = ", ".join(f"j.{c}" for c in JOB_COLUMNS) + (", t.bytes" if need_bytes else "")
    import duckdb

    try:
        with deadline(cursor, wh.query_timeout):
            where = (" where " + " and ".join(conds)) if conds else ""
            # a left join adds no rows: count without it unless a bytes filter needs it
            counted = frm if f.bytes_min is not None or f.bytes_max is not None else plain
            total = int(wh.sql(f"select count(*) n {counted}{where}", params)["n"].iloc[0])
            # The page's last sort value, found without the job_key tie-break (cheap); then
            # only rows up to it are sorted with the tie-break (top-N over strings is what
            # costs on a million jobs). Pages stay disjoint: ties are all kept. Not worth
            # it when the bytes join dominates.
            edge = (
                not need_bytes
                and cursor.execute(
                    f"select {key} v {frm} where {' and '.join([*conds, f'{key} is not null'])} "
                    f"order by v {way} limit 1 offset ?",
                    [*params, offset + f.page_size - 1],
                ).fetchall()
            )
            if edge:
                conds = [*conds, f"{key} {'>=' if f.descending else '<='} ?"]
                params = [*params, edge[0][0]]
            where = (" where " + " and ".join(conds)) if conds else ""
            rows = wh.sql(
                f"select {cols} {frm}{where} order by {key} {way} nulls last, j.job_key "
                "limit ? offset ?",
                [*params, f.page_size, offset],
            )
    except duckdb.Error as err:  # permission, conversion, ... errors of user SQL
        raise IosightError(str(err).splitlines()[0]) from None
    if not need_bytes:
        rows["bytes"] = _bytes_of(wh, bytes_sql, rows["job_key"].tolist())
    return JobsPage(rows=rows, total=total, page=f.page, page_size=f.page_size)


def _conditions(f: JobFilter) -> tuple[list[str], list]:
    conds: list[str] = []
    params: list = []
    for sql, value in (
        ("j.start_time >= ?", f.start_from),
        ("j.start_time < ?", f.start_to),
        ("j.nprocs >= ?", f.nprocs_min),
        ("j.nprocs <= ?", f.nprocs_max),
        ("t.bytes >= ?", f.bytes_min),
        ("t.bytes <= ?", f.bytes_max),
    ):
        if value is not None:
            conds.append(sql)
            params.append(value)
    if f.exe:
        conds.append("j.exe ilike ? escape '\\'")
        params.append("%" + _like_escape(f.exe) + "%")
    if f.user:
        conds.append("cast(j.uid as varchar) = ?")
        params.append(f.user.strip())
    return conds, params


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _bytes_of(wh: ServedWarehouse, bytes_sql: str | None, keys: list[str]) -> list:
    """The bytes of the jobs ``keys`` (a page's), read from the ``job_totals`` files that
    hold them (:func:`~iosight.warehouse.for_jobs`): the newest jobs, the default page,
    are in the newest files, where a scan of every file's keys grows with the jobs."""
    if bytes_sql is None or not keys:
        return [None] * len(keys)
    df = for_jobs(wh, keys).sql(
        f"select job_key, {bytes_sql} as bytes from job_totals where job_key in (select unnest(?))",
        [keys],
    )
    found = dict(zip(df["job_key"], df["bytes"], strict=True))
    return [found.get(k) for k in keys]


def errors_page(wh: ServedWarehouse, page: int = 1, page_size: int = 100) -> JobsPage:
    """One page of ``ingest_errors``: source path and reason.

    ``wh``: the served warehouse; ``page``: the page shown, from 1; ``page_size``: rows per
    page.
    """
    check_param("page", page, page >= 1, "a page number from 1")
    if not wh.has_table("ingest_errors"):
        import pandas as pd

        return JobsPage(pd.DataFrame(columns=["source_path", "error"]), 0, 1, page_size)
    total = int(wh.sql("select count(*) n from ingest_errors")["n"].iloc[0])
    rows = wh.sql(
        "select source_path, error from ingest_errors order by source_path limit ? offset ?",
        [page_size, (page - 1) * page_size],
    )
    return JobsPage(rows=rows, total=total, page=page, page_size=page_size)


# ---------------------------------------------------------------------------- job page
def job_timeline(wh: ServedWarehouse, key: str):
    """``("dxt", view)`` (:func:`job_dxt` of the whole job), ``("heatmap", bins)`` or
    ``("", None)``: what the job's time axis can show."""
    wh = for_job(wh, key)
    tables = set(wh.tables())
    if "dxt_posix" in tables and wh.may_hold("dxt_posix"):
        view = job_dxt(wh, key)
        if view.total:
            return "dxt", view
    if "heatmap" in tables and wh.may_hold("heatmap"):
        from iosight.report.heatmap import job_heatmap

        hm = job_heatmap(wh, key)
        if len(hm):
            return "heatmap", hm
    return "", None


def job_dxt(wh: ServedWarehouse, key: str, window: DxtWindow | None = None) -> DxtView:
    """The job's DXT segments in ``window``, at most
    :data:`~iosight.report.dxt.MAX_DXT_POINTS` segments or cells
    (:func:`~iosight.report.dxt.dxt_view`), within the query deadline."""
    from iosight.report.dxt import dxt_view

    wh = for_job(wh, key)
    with deadline(wh.connect(["dxt_posix", "dxt_bins", "jobs"]), wh.query_timeout):
        return dxt_view(wh, key, window)


def job_insights_table(wh: ServedWarehouse, key: str) -> tuple[pd.DataFrame | None, str]:
    """The job's insights (:func:`iosight.insights.job_insights`); None and why when they
    cannot be evaluated.

    ``wh``: the served warehouse; ``key``: the job's key.
    """
    from iosight.insights import job_insights

    try:
        return job_insights(for_job(wh, key), key).table(), ""
    except IosightError as err:
        return None, str(err)


def cli_command(wh: ServedWarehouse, args: str) -> str:
    """The command line ``iosight ARGS`` on this warehouse, ready to paste (for hints)."""
    return f"iosight {args} -w {shlex.quote(str(wh.path))}"


def similar_jobs(wh: ServedWarehouse, key: str, top: int = 10) -> tuple[pd.DataFrame | None, str]:
    """Jobs like this one from the similarity codings, where they were built.

    ``wh``: the served warehouse; ``key``: the job's key; ``top``: how many jobs.
    """
    if not wh.has_table("sim_codings"):
        build = cli_command(wh, "similarity series --from darshan")
        return None, f"no similarity codings; build them with: {build}"
    try:
        from iosight.similarity import find_similar

        df = find_similar(wh, key, top=top)
    except IosightError as err:
        return None, str(err)
    return df[["rank", "job_key", "jobid", "similarity"]], ""


# ---------------------------------------------------------------------------- facility
@dataclass(frozen=True)
class Thresholds:
    """Burst thresholds (bytes per base bin) of each direction, ``mean + k * std`` (§IV).

    ``bin_width``: the base bin's width (s); ``read``: the read threshold (None: see
    ``why_none``); ``write``: the write threshold.
    """

    bin_width: float
    read: float | None
    write: float | None
    why_none: tuple[str, ...] = ()  # why a direction has no threshold


def burst_thresholds(wh: ServedWarehouse) -> Thresholds:
    """Thresholds of the whole timeline at the paper's 1% of bins (§IV); a direction
    without one (constant, too short, mostly empty) says why in ``why_none``.

    ``wh``: the served warehouse.
    """
    from iosight.bursts import label_bursts
    from iosight.timeline import bin_width_of, load_timeline

    df = load_timeline(wh)
    width = bin_width_of(df)
    found, why = {}, []
    for d in ("read", "write"):
        try:
            name = f"{d} bytes per bin"
            found[d] = label_bursts(df[f"{d}_bytes"].to_numpy(float), name=name).threshold
        except IosightError as err:
            found[d] = None
            why.append(str(err))
    return Thresholds(width, found["read"], found["write"], tuple(why))


def timeline_span(wh: ServedWarehouse) -> tuple[float, float, float]:
    """First bin start, end of the last bin, and the base bin width."""
    wh.require("timeline")
    r = wh.sql("select min(bin_start) a, max(bin_start + bin_width) b, min(bin_width) w "
               "from timeline").iloc[0]  # fmt: skip
    return float(r["a"]), float(r["b"]), float(r["w"])


def timeline_window(
    wh: ServedWarehouse,
    thresholds: Thresholds,
    start: float | None = None,
    end: float | None = None,
    max_points: int = 1500,
) -> pd.DataFrame:
    """The timeline between ``start`` and ``end``, re-binned to at most ``max_points`` bins.

    Bins come from a ladder (5 min, 15 min, 1 h, 3 h, 6 h, 1 day, 1 week). Per shown bin:
    mean and peak base-bin rate (bytes/s) per direction, and how many base bins in it
    are bursts (above the threshold), so a burst stays visible at every zoom.

    ``wh``: the served warehouse; ``thresholds``: the burst thresholds marking bursts.
    """
    lo, hi, base = timeline_span(wh)
    start = lo if start is None else max(lo, float(start))
    end = hi if end is None else min(hi, float(end))
    if end <= start:
        raise IosightError("the time window is empty")
    width = next((w for w in _LADDER if w >= base and (end - start) / w <= max_points), _LADDER[-1])
    width = max(width, base)
    parts, params = [], [width, width]
    for d in ("read", "write"):
        thr = getattr(thresholds, d)
        parts.append(
            f"sum({d}_bytes) / ? as {d}_mean, max({d}_bytes) / {base!r} as {d}_peak, "
            f"count(*) filter (where {d}_bytes > ?) as {d}_bursts"
        )
        params += [width, thr if thr is not None else float("inf")]
    df = wh.sql(
        f"select floor(bin_start / ?) * ? as bin_start, {', '.join(parts)} "
        "from timeline where bin_start >= ? and bin_start < ? group by 1 order by 1",
        [*params, start, end],
    )
    df.attrs["bin_width"] = width
    return df


MAX_NOW_BINS = 288  # the Facility page's "now": at most a day of 5-minute bins


def now_window(wh: ServedWarehouse, max_bins: int = MAX_NOW_BINS) -> pd.DataFrame:
    """The live part of the timeline: the bins after the logs' latest complete bin
    (:func:`~iosight.serve._decisions.last_logs_bin`), at most ``max_bins`` of the latest,
    from each live source present: ``live_rates`` (the file system's rate) and ``live_io``
    (the jobs' streamed I/O, the timeline's layers, as streamed: the live timeline,
    :func:`iosight.live.live_timeline`, also drops the rows of jobs whose log landed,
    which here can only be in the logs' last, partial bin). Columns ``source``, ``bin_start``,
    ``read_bytes``, ``write_bytes`` (bytes in the bin), ``complete`` (false: the bin has
    not ended by its source's newest row, a partial count); ``attrs``: ``logs_end`` (epoch
    s, None without logs) and ``bin_width``."""
    import pandas as pd

    from iosight.serve._decisions import LIVE_RATES, last_logs_bin, live_rates
    from iosight.timeline import LAYERS

    logs = last_logs_bin(wh)
    width = logs[1] if logs else 300.0
    after = logs[0] + logs[1] if logs else -math.inf
    parts = []
    if wh.has_table(LIVE_RATES):
        rates, complete = live_rates(wh, width)
        if rates is not None:
            parts.append(rates.assign(source=LIVE_RATES, complete=rates["bin_start"] <= complete))
    if wh.has_table("live_io"):
        layers = ", ".join(f"'{m}'" for m in LAYERS)
        io = wh.sql(
            "select b bin_start, sum(read_bytes)::double read_bytes, "
            "sum(write_bytes)::double write_bytes, b + ? <= any_value(newest) complete "
            "from (select floor(bin_start / ?) * ? b, *, max(known_at) over () newest "
            f"from live_io where module in ({layers}) and bin_start >= ?) group by b order by b",
            [width, width, width, after],
        )
        parts.append(io.assign(source="live_io"))
    cols = ["source", "bin_start", "read_bytes", "write_bytes", "complete"]
    df = pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)
    df = df[df["bin_start"] >= after]
    if len(df):
        df = df[df["bin_start"] > df["bin_start"].max() - max_bins * width]
    df = df.sort_values(["source", "bin_start"]).reset_index(drop=True)
    df.attrs.update(logs_end=None if logs is None else after, bin_width=width)
    return df


def forecast_start(
    decisions: Decisions, model: str, min_time: float, max_time: float, policy: str = "W3"
) -> tuple[ServedForecast, Recommendation]:
    """The served forecast of the saved forecaster ``model`` and Algorithm 1's start on it
    (§V-B) for one application, as ``/api/start`` answers: the forecast is the one the
    server computed in the background (:class:`Decisions`), never computed here;
    :class:`~iosight.serve.ForecastNotReady` until it exists."""
    from iosight.schedule import start_on_forecast

    served = decisions.forecast(None, model)
    return served, start_on_forecast(served.bins, min_time, max_time, policy=policy)


def list_models(wh: ServedWarehouse) -> list[str]:
    """Saved burst forecasters (empty when none was trained)."""
    from iosight.bursts import list_forecasters

    return list_forecasters(wh)
