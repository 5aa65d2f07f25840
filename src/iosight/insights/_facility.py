"""The facility view: across many jobs, which rules fire, what is at stake, where, and when.

Everything is SQL over the stored ``insights`` and ``insights_jobs`` tables joined with
``jobs``, fetched as plain :class:`~iosight.warehouse.Rows` (``iosight insights`` prints
them without importing pandas) or, for the callers that draw them, DataFrames. Time at
stake is in rank-seconds (Darshan sums I/O time over ranks), shown as core-hours (one
core per rank); jobs' own core-hours are ``nprocs x run_time``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from iosight.insights._job import frame_of, rule_texts
from iosight.insights._names import FINDINGS_TABLE, JOBS_TABLE, LEVELS
from iosight.warehouse import JOIN_MEMORY, Rows, Warehouse, kind_of, records_of, synthetic_flag

Table = Any  # pd.DataFrame | Rows

# the application of a job: the executable's base name (first word of the command line);
# a SYNTHETIC job's application is listed apart, so it is never taken for a real one
APP_SQL = (
    "coalesce(nullif(regexp_extract(split_part(coalesce(j.exe, ''), ' ', 1), '[^/]*$'), ''), "
    "'uid ' || cast(j.uid as varchar))"
)


@dataclass
class FacilityView:
    """Per rule (``rules``), per rule that could not run (``not_evaluated``: code, jobs,
    title, what it needs), per month; ``data`` says whether the jobs are real, SYNTHETIC
    or mixed (:func:`iosight.warehouse.kind_of`). The tables are DataFrames, or
    :class:`Rows` where :func:`facility_view` was asked for them."""

    jobs: int  # evaluated jobs in scope
    rules: Table
    not_evaluated: Table
    trend: Table  # month, code, jobs, share, stake_core_hours
    data: str = "real"

    def summary_table(self) -> Table:
        """The per-rule table rounded for reading: percent of jobs, core-hours, and the
        bytes at stake (raw: tables show them in human units)."""
        if self.rules.empty:
            return self.rules
        values = [
            (r["code"], r["level"], r["title"], r["jobs"], _round(100 * r["share_of_jobs"], 1),
             _round(r["job_core_hours"], 0), _round(r["stake_core_hours"], 1), r["stake_bytes"],
             r["worst_apps"])
            for r in records_of(self.rules)
        ]  # fmt: skip
        columns = ["code", "level", "title", "jobs", "% jobs", "job core-h", "core-h at stake"]
        columns += ["bytes at stake", "worst applications"]
        types = ["VARCHAR"] * 3 + ["BIGINT"] + ["DOUBLE"] * 4 + ["VARCHAR"]
        return self._like(Rows(columns, types, values))

    def top_codes(self, n: int = 6) -> list[str]:
        """The high/warn rules with the most time at stake (then the most jobs).

        ``n``: how many rules.
        """
        bad = [r for r in records_of(self.rules) if r["level"] in ("high", "warn")]
        bad.sort(key=lambda r: (-r["stake_core_hours"], -r["jobs"]))  # stable: ties keep order
        return list(dict.fromkeys(r["code"] for r in bad))[:n]

    def trend_table(self, n: int = 6) -> Table:
        """Months x the top ``n`` rules: percent of that month's jobs each fires on."""
        codes = self.top_codes(n)
        share: dict[tuple[str, str], float] = {}
        for r in records_of(self.trend) if codes else []:
            if r["code"] in codes:
                key = (r["month"], r["code"])
                share[key] = share.get(key, 0.0) + r["share"]
        if not share:
            return self._like(Rows([], [], []))
        months = sorted({month for month, _ in share})
        values = [(m, *(_round(100 * share.get((m, c), 0.0), 1) for c in codes)) for m in months]
        return self._like(Rows(["month", *codes], ["VARCHAR"] + ["DOUBLE"] * len(codes), values))

    def _like(self, rows: Rows) -> Table:
        """``rows`` as this view's tables are: Rows, or a DataFrame."""
        return rows if isinstance(self.rules, Rows) else frame_of(rows)


def _round(x: float, decimals: int) -> float:
    """``x`` rounded as numpy (and a DataFrame's ``round``) rounds: half to even, of
    ``x`` scaled by the power of ten."""
    scale = 10.0**decimals
    return float(round(x * scale)) / scale if decimals else float(round(x))


def facility_view(
    warehouse: Warehouse, *, where: str | None = None, apps: int = 3, rows: bool = False
) -> FacilityView:
    """Summarise the stored insights of the jobs matching ``where`` (SQL on ``jobs``).

    ``warehouse``: the warehouse holding the stored insights; ``apps``: worst applications shown
    per rule; ``rows``: plain :class:`Rows` (no pandas import), else DataFrames.
    """
    warehouse.require(JOBS_TABLE, "run 'iosight insights' (or compute_insights) first")
    with warehouse.duckdb_settings(memory_limit=f"'{JOIN_MEMORY}'"):
        return _view(warehouse, where, apps, rows)


def _view(warehouse: Warehouse, where: str | None, apps: int, rows: bool) -> FacilityView:
    """:func:`facility_view`'s queries (under DuckDB's memory limit)."""
    cond = f"where {where}" if where else ""
    scope = f"(select j.* from jobs j join {JOBS_TABLE} using (job_key) {cond})"
    counts = warehouse.rows(f"select count(*), count_if({synthetic_flag(warehouse)}) from {scope}")
    n, n_syn = (int(v) for v in counts.values[0])
    has_findings = warehouse.has_table(FINDINGS_TABLE)
    rules = _rules(warehouse, scope, apps, n) if has_findings else Rows([], [], [])
    blind = warehouse.rows(
        f"""select code, count(*) as jobs from (
                select unnest(string_split(i.not_evaluated, ',')) as code
                from {JOBS_TABLE} i join {scope} j using (job_key)
                where i.not_evaluated <> '')
            group by code order by code"""
    )
    texts = rule_texts(warehouse, [r[0] for r in blind.values])
    blind = Rows(
        [*blind.columns, "title", "needs"],
        [*blind.types, "VARCHAR", "VARCHAR"],
        [(*r, *texts[r[0]]) for r in blind.values],
    )
    trend = _trend(warehouse, scope) if has_findings else Rows([], [], [])
    tables = (rules, blind, trend) if rows else tuple(frame_of(t) for t in (rules, blind, trend))
    return FacilityView(n, *tables, kind_of(n, n_syn))


def _rules(warehouse: Warehouse, scope: str, apps: int, n: int) -> Rows:
    """Per rule and level: jobs, their core-hours, time and bytes at stake, the worst
    applications; with each rule's title and share of the ``n`` jobs, most severe level
    first, then the most time at stake, then the most jobs."""
    flag = synthetic_flag(warehouse, "j")
    got = warehouse.rows(
        f"""with f as (
                select i.code, i.level, i.job_key, {APP_SQL} as app, {flag} as synthetic,
                       coalesce(i.stake_s, 0) / 3600 as stake_ch,
                       coalesce(i.stake_bytes, 0) as stake_b,
                       greatest(j.nprocs, 1) * greatest(j.run_time, 0) / 3600 as job_ch
                from {FINDINGS_TABLE} i join {scope} j using (job_key)
            ), per_app as (
                select code, level, app, synthetic, count(*) as jobs, sum(stake_ch) as stake_ch
                from f group by all
            ), worst as (
                select code, level, string_agg(
                    app[:16] || (case when synthetic then ' [SYNTHETIC]' else '' end)
                    || ' (' || jobs || ' jobs, ' || round(stake_ch, 1) || ' core-h)', '; '
                    order by stake_ch desc, jobs desc, app, synthetic) as worst_apps
                from (select *, row_number() over (
                          partition by code, level
                          order by stake_ch desc, jobs desc, app, synthetic) as r
                      from per_app) where r <= {int(apps)}
                group by all
            )
            select f.code, f.level, count(*) as jobs, sum(job_ch) as job_core_hours,
                   sum(stake_ch) as stake_core_hours, sum(stake_b) as stake_bytes,
                   any_value(w.worst_apps) as worst_apps
            from f left join worst w using (code, level)
            group by f.code, f.level order by f.code, f.level"""
    )
    order = {lv: i for i, lv in enumerate(LEVELS)}
    texts = rule_texts(warehouse, sorted({r[0] for r in got.values}))
    values = [
        (r[0], r[1], texts[r[0]][0], *r[2:], r[2] / max(n, 1))
        for r in sorted(got.values, key=lambda r: (order[r[1]], -r[4], -r[2]))
    ]
    columns = [*got.columns[:2], "title", *got.columns[2:], "share_of_jobs"]
    return Rows(columns, [*got.types[:2], "VARCHAR", *got.types[2:], "DOUBLE"], values)


def _trend(warehouse: Warehouse, scope: str) -> Rows:
    return warehouse.rows(
        f"""with m as (
                select job_key, strftime(to_timestamp(start_time), '%Y-%m') as month
                from {scope} where start_time is not null and isfinite(start_time)
            ), totals as (select month, count(*) as month_jobs from m group by month)
            select m.month, i.code, count(*) as jobs, count(*) / any_value(t.month_jobs) as share,
                   sum(coalesce(i.stake_s, 0)) / 3600 as stake_core_hours
            from {FINDINGS_TABLE} i join m using (job_key) join totals t using (month)
            where i.level in ('high', 'warn')
            group by m.month, i.code order by m.month, i.code"""
    )
