"""Every tab at every width: JupyterLab with the file browser open (the usual ~950 px notebook), closed, and
an 800 px window.

At each width, in every tab, with its tables and trace on show: no table header and no trace token is split
inside a word, every control has a tooltip in the page (its DOM ``title``, not the Python attribute), no
label is cut short, no row of controls is wider than its room and no element carries ``title="null"``. And
an error is said once, where the user acted.
"""

from __future__ import annotations

import pytest
from lab_driver import at_three_widths, layout_problems, open_tour_tab, wait_for_idle_kernel

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTHING = {"split words": [], "no tooltip": [], "cut labels": [], "overflowing rows": [], "title=null": []}


def open_tab(page, title: str) -> object:  # type: ignore[no-untyped-def]
    page.locator(".widget-tab .lm-TabBar-tab", has_text=title).first.click()
    panel = page.locator(f".inspector-{title.lower()}-panel").first
    panel.locator(".inspector-status").first.wait_for()
    return panel


def open_section(panel, title: str) -> None:  # type: ignore[no-untyped-def]
    header = panel.locator(".jupyter-widget-Collapse-header", has_text=title).first
    if "jupyter-widget-Collapse-open" not in (header.evaluate("h => h.parentElement.className") or ""):
        header.click()


def check_every_width(page, tab: str) -> None:  # type: ignore[no-untyped-def]
    found = {where: layout_problems(page) for where in at_three_widths(page)}
    assert {where: {k: v for k, v in problems.items() if v} for where, problems in found.items()} == {
        where: {} for where in found
    }, tab


def test_every_tab_reads_at_every_width(page, lab) -> None:  # type: ignore[no-untyped-def]
    open_tour_tab(page, lab, "Dispatch")
    dispatch = open_tab(page, "Dispatch")
    open_section(dispatch, "Plan (all families)")
    dispatch.locator("pre.inspector-pre").first.wait_for()
    check_every_width(page, "Dispatch")

    backends = open_tab(page, "Backends")
    backends.locator(".widget-dropdown", has_text="backend").locator("select").select_option("npz")
    backends.get_by_role("button", name="Build sample").click()  # the demo's own config builds as it stands
    backends.locator("table", has_text="episode_index").first.wait_for()
    check_every_width(page, "Backends")

    loader = open_tab(page, "Loader")
    loader.locator(".widget-select-multiple", has_text="sizes (MiB)").locator("select").select_option(label=["0.25"])
    loader.locator(".widget-select-multiple", has_text="workers").locator("select").select_option(label=["1"])
    loader.locator(".widget-select-multiple", has_text="methods").locator("select").select_option(
        label=["inspector loader", "FileStorage.load (sync)", "memcpy (ceiling)"]
    )
    loader.locator(".inspector-loader-run button", has_text="Run").click()
    loader.locator(".inspector-status", has_text="results in").wait_for(timeout=240_000)
    loader.locator("table", has_text="inspector loader").first.wait_for()
    check_every_width(page, "Loader")

    rpc = open_tab(page, "RPC")
    templates = rpc.locator(".inspector-rpc-templates")
    templates.locator("input").nth(0).fill("4")
    templates.locator("input").nth(1).fill("8")
    templates.locator("input").nth(1).press("Enter")
    rpc.locator(".inspector-rpc-template-apply").click()
    rpc.locator(".inspector-rpc-gpus input").fill("8,8,4,8")
    rpc.locator(".inspector-status", has_text="init_rpc would fail").wait_for()
    for title in ("Reverse maps and device lists", "Registered RPC backends"):
        open_section(rpc, title)
    check_every_width(page, "RPC")
    wait_for_idle_kernel(page)


def test_an_axis_the_family_does_not_know_is_said_once_under_the_fields(page, lab) -> None:  # type: ignore[no-untyped-def]
    open_tour_tab(page, lab, "Dispatch")
    panel = page.locator(".inspector-dispatch-panel").first
    status = panel.locator(".inspector-status")
    panel.locator("select").first.select_option("torch_sdpa")
    status.filter(has_text="torch_sdpa: flash_attention").wait_for()
    extra = panel.locator(".inspector-context-editor .widget-text", has_text="extra").locator("input")
    extra.fill("bogus=1")
    extra.press("Enter")
    status.filter(has_text="torch_sdpa: the context cannot be used (see above)").wait_for()
    said = panel.locator(":is(div, span, pre, td, caption):visible", has_text="no axis 'bogus'")
    innermost = said.evaluate_all(
        "els => els.filter(e => ![...e.children].some(c => els.includes(c))).map(e => e.className)"
    )
    assert len(innermost) == 1 and "inspector-error-box" in innermost[0], innermost
    assert panel.locator(".inspector-context-editor .inspector-error-context", has_text="no axis 'bogus'").count() == 1
    extra.fill("kv_len=128")
    extra.press("Enter")
    status.filter(has_text="torch_sdpa: flash_attention").wait_for()
