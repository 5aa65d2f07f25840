"""Reading times and durations given on the command line."""

from __future__ import annotations

import time

import pytest

from iosight._errors import IosightError
from iosight.timeline import parse_time


def test_parse_time_reads_dates_and_numbers():
    assert parse_time("2024-03-01 12:00") == 1709294400.0  # naive: UTC
    assert parse_time("2024-03-01 12:00+02:00") == 1709294400.0 - 7200
    assert parse_time("17.5") == 17.5 and parse_time(5) == 5.0


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", float("nan"), float("inf"), "NaT", "x"])
def test_parse_time_refuses_what_is_not_a_finite_time(text):
    with pytest.raises(IosightError, match="cannot read time"):
        parse_time(text)


@pytest.mark.parametrize("zone", ["America/Chicago", "Asia/Kolkata", "UTC"])
def test_now_is_the_utc_epoch_whatever_the_local_zone(monkeypatch, zone):
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        before = time.time()
        now = parse_time("now")
        assert before - 1 <= now <= time.time() + 1  # was off by the zone's offset
    finally:
        monkeypatch.undo()
        time.tzset()
