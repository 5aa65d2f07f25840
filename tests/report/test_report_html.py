"""Shared report pieces: inline figures and the page around them."""

import base64
import re

from iosight.report._html import fig_img, fig_png, img_tag, page, subplots


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
