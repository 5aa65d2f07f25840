"""Shared report pieces: inline figures and the page around them."""

import base64
import re

from iosight.report._html import fig_img, fig_png, html_table, img_tag, page, subplots


def test_figures_are_inline_pngs_outside_pyplot():
    """Report figures leave pyplot alone: no open figure, the caller's backend kept."""
    import matplotlib
    import matplotlib.pyplot as plt

    before = matplotlib.get_backend()
    matplotlib.use("svg")  # what a notebook user might have chosen; a report must keep it
    try:
        fig, ax = subplots()
        ax.plot([0, 1], [1, 0])
        png = fig_png(fig)
        assert png.startswith(b"\x89PNG") and not plt.get_fignums()
        data = re.search(r"base64,([A-Za-z0-9+/=]+)'", img_tag(png, "a<b")).group(1)
        assert base64.b64decode(data) == png
        assert "alt='a&lt;b'" in img_tag(png, "a<b")
        fig, axes = subplots(1, 2, figsize=(4, 2), sharey=True)
        assert len(axes) == 2 and fig.get_size_inches().tolist() == [4, 2]
        assert fig_img(fig).startswith("<img") and not plt.get_fignums()
        assert matplotlib.get_backend() == "svg"
    finally:
        matplotlib.use(before)


def test_page_escapes_the_title_and_keeps_the_body():
    html = page("x < y", "<h1>body</h1>")
    assert "<title>x &lt; y</title>" in html and "<h1>body</h1></body></html>" in html


def test_reports_sharing_a_folder_do_not_overwrite_each_other(tmp_path):
    from iosight.report._html import write_page

    out = tmp_path / "report"
    first = write_page(out, "bursts", "iosight bursts", "<p>bursts body</p>")
    assert first == out / "bursts.html"
    # alone in the folder, the report is also the index
    assert "bursts body" in (out / "index.html").read_text()
    write_page(out, "schedule", "Burst-aware start times", "<p>schedule body</p>")
    write_page(out, "bursts", "iosight bursts", "<p>bursts again</p>")  # rewriting is fine
    index = (out / "index.html").read_text()
    assert "href='bursts.html'" in index and "href='schedule.html'" in index
    assert "Burst-aware start times" in index and "schedule body" not in index
    assert "bursts again" in first.read_text()
    assert "schedule body" in (out / "schedule.html").read_text()
    (out / "notes.html").write_text("<html>not a report</html>")  # other pages are left out
    write_page(out, "schedule", "Burst-aware start times", "<p>schedule body</p>")
    assert "notes.html" not in (out / "index.html").read_text()


def test_report_tables_use_the_units_of_every_table():
    """Reports once printed floats as ``{:.4g}``: 1.2345e+10 bytes, 1.235e+04 seconds."""
    import pandas as pd

    df = pd.DataFrame(
        {
            "app": ["a<b>", "c"],
            "bytes_written": [1.2345e10, 512.0],
            "mean_run_time": [12345.6, 0.25],
            "score": [123456.7, 0.000123],
            "within_30": [0.1234, float("nan")],
        }
    )
    out = html_table(df, percent=("within_30",))
    cells = re.findall(r"<td>(.*?)</td>", out)
    assert cells == ["a&lt;b&gt;", "12.3 GB", "3 h 25 min", "123,457", "12.3%",
                     "c", "512 B", "250 ms", "0.000123", ""]  # fmt: skip
    wide = html_table(df.set_index("app").T.reset_index())  # columns that are no strings
    assert "e+" not in wide and "e-" not in wide
