"""The Job page of a real log: ranks of shared files, and the command line's units."""

from __future__ import annotations

import re
import urllib.request

import pytest

from iosight.serve import BackgroundServer, create_app


@pytest.fixture(scope="module")
def page(example_warehouse) -> str:
    """The Job page of ``example.darshan``: 2048 ranks writing one shared file (real data)."""
    with BackgroundServer(create_app(example_warehouse.path)) as srv:
        with urllib.request.urlopen(srv.url + "/job/4478544", timeout=60) as r:
            return r.read().decode()


def _cells(html: str, table: str) -> list[list[str]]:
    body = re.search(rf'<table id="{table}">(.*?)</table>', html, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [[c.strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S)] for r in rows]


def test_a_shared_file_shows_all_ranks_and_its_mean_time_per_rank(page):
    header, row = _cells(page, "files")
    got = dict(zip(header, row, strict=True))
    assert got["ranks"] == "2048"  # one record of rank -1: every rank, not 1
    assert got["I/O time (summed over ranks)"] == "1 d 3 h"
    assert got["I/O time per rank (mean)"] == "49 s"
    assert got["written"] == "2.2 TB"


def test_tables_show_human_units_and_no_raw_numbers(page):
    header, *rows = _cells(page, "modules")
    posix = dict(zip(header, rows[0], strict=True))
    assert posix["bytes_written"] == "2.2 TB" and posix["write_time"] == "1 d 3 h"
    assert posix["io_time_per_rank"] == "49 s"
    assert "<dd>1 min 57 s</dd>" in page  # run time, not "117.0 s"
    tables = "".join(re.findall(r"<table.*?</table>", page, re.S))
    assert not re.search(r"\de[+-]\d", tables)  # no 2.19902e+12
