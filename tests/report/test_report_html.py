"""Shared report pieces: inline figures and the page around them."""

import base64
import re

from iosight.report._html import fig_img, fig_png, img_tag, page


def test_figures_are_inline_pngs_and_closed():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    png = fig_png(fig)
    assert png.startswith(b"\x89PNG") and not plt.get_fignums()
    data = re.search(r"base64,([A-Za-z0-9+/=]+)'", img_tag(png, "a<b")).group(1)
    assert base64.b64decode(data) == png
    assert "alt='a&lt;b'" in img_tag(png, "a<b")
    fig, _ = plt.subplots()
    assert fig_img(fig).startswith("<img") and not plt.get_fignums()


def test_page_escapes_the_title_and_keeps_the_body():
    html = page("x < y", "<h1>body</h1>")
    assert "<title>x &lt; y</title>" in html and "<h1>body</h1></body></html>" in html
