"""Chart keys in the Loader tab are never cut off: at three widths of JupyterLab, every key entry is inside its
figure and the figure inside what the page shows.

The PNGs carry where each key entry landed (``views._figures.KEYS_METADATA``); the browser says where each
image is drawn and at what scale, and which of its ancestors clip. Widths: JupyterLab with the file browser
side bar open, with it closed, and a narrow 800 px window.
"""

from __future__ import annotations

import base64
import io
import json

import pytest
from lab_driver import open_tour_tab
from PIL import Image

from inspector.views._figures import KEYS_METADATA

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-loader-panel"
# Every visible figure of the panel: its source, natural size, drawn box, and the boxes of ancestors that clip it.
FIGURES_JS = """panel => [...panel.querySelectorAll('img')].filter(img => img.offsetParent !== null).map(img => {
    const clips = [];
    for (let e = img.parentElement; e && e !== document.body; e = e.parentElement) {
        const style = getComputedStyle(e);
        if (style.overflowX !== 'visible' || style.overflowY !== 'visible') {
            const r = e.getBoundingClientRect();
            clips.push([r.left, r.top, r.right, r.bottom, e.className]);
        }
    }
    const r = img.getBoundingClientRect();
    return {src: img.src, natural: [img.naturalWidth, img.naturalHeight], box: [r.left, r.top, r.right, r.bottom],
            clips};
})"""


def key_entries(src: str) -> list[list]:
    data = base64.b64decode(src.split(",", 1)[1])
    return json.loads(Image.open(io.BytesIO(data)).text.get(KEYS_METADATA, "[]"))


def check_figures(page, panel, where: str) -> int:  # type: ignore[no-untyped-def]
    """Every key entry of every visible figure lies inside the figure as drawn and inside each clipping box."""
    checked = 0
    for tab in ("By size", "By workers", "Stages"):
        panel.locator(".widget-tab .lm-TabBar-tab", has_text=tab).first.click()
        page.wait_for_function(
            """panel => [...panel.querySelectorAll('img')].some(
            i => i.offsetParent !== null && i.complete && i.naturalWidth > 0)""",
            arg=panel.element_handle(),
        )
        for shown in panel.evaluate(FIGURES_JS):
            left, top, right, _bottom = shown["box"]
            scale = (right - left) / shown["natural"][0]
            for label, x0, y0, x1, y1 in key_entries(shown["src"]):
                entry = (left + x0 * scale, top + y0 * scale, left + x1 * scale, top + y1 * scale)
                inside = x0 >= 0 and y0 >= 0 and x1 <= shown["natural"][0] and y1 <= shown["natural"][1]
                assert inside, (where, tab, label, (x0, y0, x1, y1), shown["natural"])
                for c_left, _c_top, c_right, _c_bottom, name in shown["clips"]:
                    assert c_left - 1 <= entry[0] and entry[2] <= c_right + 1, (where, tab, label, entry, name)
                checked += 1
    return checked


def test_every_key_entry_is_inside_its_figure_at_three_widths(page, lab) -> None:  # type: ignore[no-untyped-def]
    open_tour_tab(page, lab, "Loader")
    panel = page.locator(PANEL).first
    panel.locator(".inspector-status", has_text="Pick sizes and workers").wait_for()
    panel.locator(".widget-select-multiple", has_text="sizes (MiB)").locator("select").select_option(
        label=["0.25", "1"]
    )
    panel.locator(".widget-select-multiple", has_text="workers").locator("select").select_option(label=["1", "2"])
    panel.locator(".widget-select-multiple", has_text="layouts").locator("select").select_option(
        label=["steps", "columnar"]
    )
    panel.locator(".widget-select-multiple", has_text="methods").locator("select").select_option(
        label=["inspector loader", "FileStorage.load (sync)", "memcpy (ceiling)"]
    )
    panel.locator(".inspector-loader-run button", has_text="Run").click()
    panel.locator(".inspector-status", has_text="results in").wait_for(timeout=240_000)

    side_bar = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab").first
    if page.locator("#jp-left-stack").is_hidden():
        side_bar.click()  # the file browser open: the narrowest notebook at this window size
    page.locator("#jp-left-stack").wait_for(state="visible")
    checked = check_figures(page, panel, "side bar open")
    side_bar.click()
    page.locator("#jp-left-stack").wait_for(state="hidden")
    checked += check_figures(page, panel, "side bar closed")
    page.set_viewport_size({"width": 800, "height": 900})
    page.wait_for_timeout(500)  # JupyterLab lays the notebook out again
    checked += check_figures(page, panel, "800 px window")
    assert checked >= 3 * 3  # at least three keys, each checked at the three widths
