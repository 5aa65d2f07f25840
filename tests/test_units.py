"""One convention for numbers wherever iosight shows them: decimal SI bytes, durations
in words, rank-seconds in one unit, and never scientific notation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iosight._units import (
    cell,
    elide_middle,
    human_bytes,
    human_duration,
    human_number,
    human_rank_time,
    per_rank_label,
    significant,
)


def test_bytes_and_rates_are_decimal_si():
    assert human_bytes(2199023255552) == "2.2 TB"
    assert human_bytes(512) == "512 B"
    assert human_bytes(1.81e9) == "1.81 GB"
    assert human_bytes(999_600) == "1 MB"  # rounds up into the next unit, not "1e+03 kB"
    assert cell("POSIX_BYTES_READ", 1.4e9) == "1.4 GB"
    assert cell("bytes_per_s", 1.4e9) == "1.4 GB/s"


def test_durations_read_as_words_with_their_sign():
    assert human_duration(192) == "3 min 12 s"
    assert human_duration(0.537) == "537 ms"
    assert human_duration(7500) == "2 h 05 min"
    assert human_duration(100_000) == "1 d 3 h"
    # Darshan 3.1's STDIO timers can sum to a negative time: the sign stays in front
    assert human_duration(-2737.4) == "-45 min 37 s"
    assert human_duration(59.97) == "1 min"
    assert human_duration(300) == "5 min" and human_duration(7200) == "2 h"
    assert human_duration(3 * 86400 + 1800) == "3 d"
    assert human_duration(math.inf) == "inf s"


def test_rank_seconds_take_one_unit_and_no_exponent():
    assert human_rank_time(100_400) == "27.9 rank-h"
    assert human_rank_time(12.3) == "12.3 rank-s"
    assert human_rank_time(2400) == "2,400 rank-s"
    assert cell("rank_seconds", 100_400) == cell("stake_s", 100_400) == "27.9 rank-h"
    assert human_rank_time(5e9) == "1,388,889 rank-h"


@pytest.mark.parametrize("v", [1.6597e10, 12345.6, 1.138e5, 3.2e-7, -0.000123456, 9.99e17])
def test_no_number_is_shown_in_scientific_notation(v):
    for text in (human_number(v), cell("value", v), human_bytes(v), human_duration(v)):
        assert "e+" not in text and "e-" not in text, text
    assert human_number(v).replace(",", "").lstrip("-").replace(".", "", 1).isdigit()


def test_plain_numbers():
    assert human_number(12345.6) == "12,346"
    assert human_number(0.5) == "0.5"
    assert human_number(-0.000123456) == "-0.0001235"
    assert human_number(np.float64(2.0)) == "2" and human_number(np.int64(5)) == "5"
    assert cell("start_time", 1490000867.0) == "1490000867"  # a timestamp, not a duration
    assert cell("jobid", 32324925) == "32324925"  # ids are not grouped
    assert significant(0.000123456) == "0.000123" and significant(123456) == "123,456"


def test_missing_values_are_empty():
    for v in (None, math.nan, pd.NA, pd.NaT, np.float64("nan")):
        assert human_number(v) == "" and cell("io_time", v) == ""
    assert cell("ost_ids", np.array([1.0, np.nan])) != ""  # an array is a value


def test_a_mean_per_rank_keeps_the_unit_of_its_sum():
    assert cell("io_time_per_rank", 47.6) == "47.6 s"
    assert cell("bytes_written_per_rank", 2.2e12) == "2.2 TB"


def test_long_paths_keep_both_ends():
    path = "/global/cscratch1/sd/someone/" + "x" * 80 + "/file.h5"
    short = elide_middle(path)
    assert len(short) == 60 and short.startswith("/global") and short.endswith("/file.h5")


def test_a_per_rank_label_says_the_mean_and_the_ranks():
    assert per_rank_label(49.03, 2048) == "49 s per rank, 2048 ranks"
    assert per_rank_label(0.5, 1) == "500 ms per rank, 1 rank"
    assert per_rank_label(math.nan, None) == "? ranks"  # a shared record, nprocs unknown
