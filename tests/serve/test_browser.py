"""End to end in a real headless Chromium: the pages work, and no log markup runs.

Chromium is Debian's ``chromium`` package driven through ``chromedriver``; these tests
skip (saying why) only where neither can be found.
"""

from __future__ import annotations

import urllib.parse

import pytest

pytestmark = pytest.mark.slow

WAIT_S = 30


def _wait(driver, condition, what: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(condition, message=what)


def _figure_ready(driver, fig_id: str) -> None:
    _wait(
        driver,
        lambda d: d.execute_script(
            "var e = document.getElementById(arguments[0]);"
            "return e && e.dataset.ready === '1' && e.querySelector('.main-svg') !== null",
            fig_id,
        ),
        f"figure {fig_id} drawn",
    )


def test_jobs_filter_sort_open_job_facility_zoom(server, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    d = browser
    d.get(server.url + "/jobs")
    total = int(d.find_element(By.ID, "count").text.split()[0])
    assert total > 100

    # filter: jobs with more than 8 processes, through the form
    box = d.find_element(By.NAME, "nprocs_min")
    box.send_keys("9")
    d.find_element(By.ID, "apply").click()
    _wait(d, lambda d: "nprocs_min=9" in d.current_url, "filtered page")
    filtered = int(d.find_element(By.ID, "count").text.split()[0])
    assert 0 < filtered < total
    nprocs = [
        int(td.text) for td in d.find_elements(By.CSS_SELECTOR, "#jobs tbody td:nth-child(4)")
    ]
    assert nprocs and min(nprocs) >= 9

    # sort by nprocs (descending first click), then ascending
    d.find_element(By.ID, "sort-nprocs").click()
    _wait(d, lambda d: "sort=nprocs" in d.current_url, "sorted page")
    d.find_element(By.ID, "sort-nprocs").click()
    _wait(d, lambda d: "dir=asc" in d.current_url, "ascending")
    shown = [int(td.text) for td in d.find_elements(By.CSS_SELECTOR, "#jobs tbody td:nth-child(4)")]
    assert (
        shown == sorted(shown) and int(d.find_element(By.ID, "count").text.split()[0]) == filtered
    )

    # open the real DXT log's job from the list
    d.get(server.url + "/jobs?exe=" + urllib.parse.quote("dxt"))  # PyDarshan's dxt example
    if not d.find_elements(By.CSS_SELECTOR, "a.job-link"):
        d.get(server.url + "/jobs?where=" + urllib.parse.quote("source_path like '%dxt.darshan'"))
    d.find_element(By.CSS_SELECTOR, "a.job-link").click()
    _wait(d, lambda d: "/job/" in d.current_url, "job page")
    for fig in ("fig-access", "fig-files", "fig-timeline", "part-insights", "part-similar"):
        _wait(
            d,
            lambda d, f=fig: d.execute_script(
                "return document.getElementById(arguments[0]).dataset.ready === '1'", f
            ),
            fig,
        )
    rows = d.find_elements(By.CSS_SELECTOR, "#files tbody tr")
    assert rows and rows[0].find_element(By.CSS_SELECTOR, "td").text

    # the facility page: figure, then a drag-zoom re-bins it finer
    d.find_element(By.ID, "nav-facility").click()
    _figure_ready(d, "fig-facility")
    before = float(d.find_element(By.ID, "bin-width").text)
    plot = d.find_element(By.CSS_SELECTOR, "#fig-facility .nsewdrag")
    w = plot.size["width"]
    ActionChains(d).move_to_element_with_offset(
        plot, -w // 2 + 40, 0
    ).click_and_hold().move_by_offset(max(12, w // 40), 0).release().perform()
    _wait(
        d,
        lambda d: (
            d.execute_script("return document.getElementById('fig-facility').dataset.binWidth")
            not in (None, "")
        ),
        "re-binned after zoom",
    )
    after = float(d.find_element(By.ID, "bin-width").text)
    assert after < before


def test_markup_from_a_traced_log_never_runs(server, browser, served_path, exe_markup):
    from selenium.webdriver.common.by import By

    from iosight.serve import ServedWarehouse

    key = ServedWarehouse(served_path).sql("select job_key from jobs where exe like '%__xss%'")
    key = key["job_key"].iloc[0]
    d = browser
    probe = (
        "return {xss: window.__xss === undefined ? null : String(window.__xss),"
        " imgs: document.querySelectorAll('img[src=\"x\"]').length,"
        " scripts: Array.from(document.scripts).filter(s => s.text.includes('__xss')"
        " && s.type !== 'application/json').length}"
    )
    for path in (f"/job/{key}", "/jobs?exe=" + urllib.parse.quote("<script>")):
        d.get(server.url + path)
        if path.startswith("/job/"):
            _figure_ready(d, "fig-files")
            _wait(
                d,
                lambda d: d.execute_script(
                    "return document.getElementById('part-insights').dataset.ready === '1'"
                ),
                "parts",
            )
        found = d.execute_script(probe)
        assert found == {"xss": None, "imgs": 0, "scripts": 0}, (path, found)
        exe = d.find_element(By.CSS_SELECTOR, ".exe")  # shown as text (long ones in the title)
        assert exe_markup in exe.text or exe.get_attribute("title").endswith(exe_markup)
    # file names with markup appear literally in the table and in the figure's labels
    d.get(server.url + f"/job/{key}")
    _figure_ready(d, "fig-files")
    table = d.find_element(By.ID, "files").text
    assert "<script>window.__xss='dir'</script>" in table
    assert "<img src=x onerror=\"window.__xss='img'\">.dat" in table
    labels = d.execute_script(
        "return Array.from(document.querySelectorAll('#fig-files .ytick text'))"
        ".map(t => t.textContent).join('\\n')"
    )
    assert "<img src=x" in labels
    assert d.execute_script("return window.__xss === undefined")


def test_dxt_zoom_counts_again_down_to_single_operations(server, browser, served_path):
    """The real DXT log's job has more segments than a view holds: cells; a zoom into one
    rank and a short time asks the server again and draws that window's segments."""
    from iosight.serve import ServedWarehouse

    wh = ServedWarehouse(served_path)
    key = wh.sql("select job_key from jobs where source_path like '%dxt.darshan'")["job_key"][0]
    r = wh.sql("select rank, median(start) t from dxt_posix where job_key = ? group by 1 "
               "order by count(*) desc limit 1", [key]).iloc[0]  # fmt: skip
    rank, t0, t1 = int(r["rank"]), float(r["t"]), float(r["t"]) + 0.5
    n = int(wh.sql('select count(*) n from dxt_posix where job_key = ? and rank = ? and "end" >= ? '
                   "and start <= ?", [key, rank, t0, t1])["n"][0])  # fmt: skip
    d = browser
    d.get(f"{server.url}/job/{key}")
    _figure_ready(d, "fig-timeline")
    title = "return document.getElementById('fig-timeline').layout.title.text"
    assert "counted per" in d.execute_script(title)
    d.execute_script(
        "Plotly.relayout(document.getElementById('fig-timeline'), {'xaxis.range[0]': arguments[0],"
        "'xaxis.range[1]': arguments[1], 'yaxis.range[0]': arguments[2] - 0.4,"
        "'yaxis.range[1]': arguments[2] + 0.4})",
        t0, t1, rank,
    )  # fmt: skip
    _wait(d, lambda d: d.execute_script(title).startswith("traced POSIX operations (DXT): all"),
          "single operations after zoom")  # fmt: skip
    assert f"all {n:,} segments" in d.execute_script(title) and n > 0
