"""Insights speak the units of every iosight table: decimal SI bytes, rank-seconds in one
unit, durations in words; never binary units beside decimal ones, never an exponent."""

from __future__ import annotations

import re

from iosight.data import example_logs
from iosight.insights import job_insights
from iosight.warehouse import log_warehouse


def _table(log_name: str):
    log = next(p for p in example_logs() if p.name == log_name)
    with log_warehouse(log) as wh:
        found = job_insights(wh, wh.sql("select job_key from jobs")["job_key"][0])
    return found.findings.set_index("code"), found.table().set_index("code")


def test_bytes_in_messages_are_decimal_like_the_tables():
    """example.darshan writes 2,199,023,255,552 bytes: "2.2 TB" as in its module table,
    not "2.00 TiB"."""
    _, table = _table("example.darshan")
    assert "by bytes: 2.2 TB against 0 B" in table.loc["P03", "message"]
    text = " ".join(table["message"]) + " ".join(table["at_stake"])
    assert not re.search(r"[KMGTP]iB|\de[+-]\d", text), text


def test_time_at_stake_is_rank_hours_not_scientific():
    findings, table = _table("example.darshan")
    stake = findings.loc["P08", "stake_s"]
    assert 1e5 < stake < 1.01e5  # 100,4xx rank-seconds: Darshan's POSIX time over 2048 ranks
    assert table.loc["P08", "at_stake"] == f"{stake / 3600:.1f} rank-h" == "27.9 rank-h"
