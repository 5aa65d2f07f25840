"""The Facility page's "now" in a real headless Chromium: drawn, then refreshed in place
when a live rate lands (no reload), under the page's Content-Security-Policy.

The live rows are SYNTHETIC, written here in the ``live_rates`` schema of issue #28.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa

from iosight.serve import BackgroundServer, create_app
from iosight.warehouse import Warehouse

WAIT_S = 30
WIDTH = 300.0
SHOT = "IOSIGHT_SCREENSHOTS"  # a folder to save the page's screenshot in (docs/img)


def _wait(driver, condition, what: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(condition, message=what)


def _rates(starts: list[float], known: list[float]) -> pa.Table:
    n = len(starts)
    return pa.table({"bin_start": starts, "read_bytes": [2e11 + 4e10 * i for i in range(n)],
                     "write_bytes": [3e11 - 2e10 * i for i in range(n)],
                     "source": ["lustre"] * n, "known_at": known})  # fmt: skip


def test_facility_now_refreshes_in_place(served_path, tmp_path, browser):
    from selenium.webdriver.common.by import By

    path = tmp_path / "wh"
    shutil.copytree(served_path, path)
    wh = Warehouse(path)
    end = float(wh.sql("select max(bin_start + bin_width) t from timeline")["t"].iloc[0])
    starts = [end + i * WIDTH for i in range(6)]
    wh.write_table("live_rates", _rates(starts[:5], [s + WIDTH + 5 for s in starts[:5]]),
                   mode="append")  # fmt: skip
    with BackgroundServer(create_app(path, now_refresh=1)) as srv:
        d = browser
        d.get(srv.url + "/facility")
        summary = d.find_element(By.ID, "now-summary")
        assert "5 live bins" in summary.text and "0 partial" in summary.text
        _wait(
            d,
            lambda d: d.execute_script(
                "return document.getElementById('fig-now').dataset.ready === '1'"
            ),
            "now drawn",
        )
        wh.write_table("live_rates", _rates(starts[5:], [starts[5] + 60]), mode="append")
        _wait(d, lambda d: "6 live bins" in d.find_element(By.ID, "now-summary").text,
              "the page asked /api/now again and shows the new bin")  # fmt: skip
        assert "1 partial" in d.find_element(By.ID, "now-summary").text
        points = d.execute_script(
            "return document.getElementById('fig-now').data[1].x.length"
        )  # write (live_rates)
        assert points == 6
        assert d.execute_script("return window.performance.navigation.type") == 0  # no reload
        if os.environ.get(SHOT):
            d.execute_script("document.getElementById('now').scrollIntoView()")
            d.save_screenshot(str(Path(os.environ[SHOT]) / "serve-now.png"))
