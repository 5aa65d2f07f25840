"""The facility view: across many jobs, which rules fire, what is at stake, where, and when.

Everything is SQL over the stored ``insights`` and ``insights_jobs`` tables joined with
``jobs``. Time at stake is in rank-seconds (Darshan sums I/O time over ranks), shown as
core-hours (one core per rank); jobs' own core-hours are ``nprocs x run_time``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from iosight.insights._names import FINDINGS_TABLE, JOBS_TABLE, LEVELS
from iosight.insights._registered import RULES
from iosight.warehouse import Warehouse, kind_of, synthetic_flag

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
    or mixed (:func:`iosight.warehouse.kind_of`)."""

    jobs: int  # evaluated jobs in scope
    rules: pd.DataFrame
    not_evaluated: pd.DataFrame
    trend: pd.DataFrame  # month, code, jobs, share, stake_core_hours
    data: str = "real"

    def summary_table(self) -> pd.DataFrame:
        """The per-rule table rounded for reading: percent of jobs, core-hours, and the
        bytes at stake (raw: tables show them in human units)."""
        if self.rules.empty:
            return self.rules
        r = self.rules
        return pd.DataFrame(
            {
                "code": r["code"],
                "level": r["level"],
                "title": r["title"],
                "jobs": r["jobs"],
                "% jobs": (100 * r["share_of_jobs"]).round(1),
                "job core-h": r["job_core_hours"].round(0),
                "core-h at stake": r["stake_core_hours"].round(1),
                "bytes at stake": r["stake_bytes"],
                "worst applications": r["worst_apps"],
            }
        )

    def top_codes(self, n: int = 6) -> list[str]:
        """The high/warn rules with the most time at stake (then the most jobs).

        ``n``: how many rules.
        """
        if self.rules.empty:
            return []
        bad = self.rules[self.rules["level"].isin(["high", "warn"])]
        bad = bad.sort_values(["stake_core_hours", "jobs"], ascending=False, kind="mergesort")
        return list(dict.fromkeys(bad["code"]))[:n]

    def trend_table(self, n: int = 6) -> pd.DataFrame:
        """Months x the top ``n`` rules: percent of that month's jobs each fires on."""
        codes = self.top_codes(n)
        if self.trend.empty or not codes:
            return pd.DataFrame()
        t = self.trend[self.trend["code"].isin(codes)]
        wide = t.pivot_table(index="month", columns="code", values="share", aggfunc="sum")
        return (100 * wide.reindex(columns=codes).fillna(0)).round(1).reset_index()


def facility_view(warehouse: Warehouse, *, where: str | None = None, apps: int = 3) -> FacilityView:
    """Summarise the stored insights of the jobs matching ``where`` (SQL on ``jobs``).

    ``warehouse``: the warehouse holding the stored insights; ``apps``: worst applications shown
    per rule.
    """
    warehouse.require(JOBS_TABLE, "run 'iosight insights' (or compute_insights) first")
    cond = f"where {where}" if where else ""
    scope = f"(select j.* from jobs j join {JOBS_TABLE} using (job_key) {cond})"
    counts = warehouse.sql(f"select count(*), count_if({synthetic_flag(warehouse)}) from {scope}")
    n, n_syn = (int(v) for v in counts.iloc[0])
    has_findings = warehouse.has_table(FINDINGS_TABLE)
    rules = _rules(warehouse, scope, apps) if has_findings else pd.DataFrame()
    if len(rules):
        rules["share_of_jobs"] = rules["jobs"] / max(n, 1)
        rules.insert(2, "title", rules["code"].map(lambda c: RULES.get(c).title))
        order = {lv: i for i, lv in enumerate(LEVELS)}
        rules = rules.assign(_o=rules["level"].map(order)).sort_values(
            ["_o", "stake_core_hours", "jobs"], ascending=[True, False, False], kind="mergesort"
        )
        rules = rules.drop(columns="_o").reset_index(drop=True)
    blind = warehouse.sql(
        f"""select code, count(*) as jobs from (
                select unnest(string_split(i.not_evaluated, ',')) as code
                from {JOBS_TABLE} i join {scope} j using (job_key)
                where i.not_evaluated <> '')
            group by code order by code"""
    )
    blind["title"] = blind["code"].map(lambda c: RULES.get(c).title)
    blind["needs"] = blind["code"].map(lambda c: RULES.get(c).needs_text())
    trend = _trend(warehouse, scope) if has_findings else pd.DataFrame()
    return FacilityView(n, rules, blind, trend, kind_of(n, n_syn))


def _rules(warehouse: Warehouse, scope: str, apps: int) -> pd.DataFrame:
    flag = synthetic_flag(warehouse, "j")
    return warehouse.sql(
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
            group by f.code, f.level"""
    )


def _trend(warehouse: Warehouse, scope: str) -> pd.DataFrame:
    return warehouse.sql(
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
