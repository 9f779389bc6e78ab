"""The tour in a real JupyterLab: run every cell, switch the attention toggle, see the table change."""

from __future__ import annotations

import json
import platform
import re
from pathlib import Path

import pytest
from lab_driver import (
    error_beside,
    open_notebook,
    run_all_cells,
    save_screenshot,
    truncated_texts,
    wait_for_idle_kernel,
    was_disabled,
    watch_disabled,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-dispatch-panel"


def chosen_row(page) -> str:  # type: ignore[no-untyped-def]
    table = page.locator(f"{PANEL} table.inspector-decision-table")
    starred = table.locator("tbody tr", has_text="★")
    return (starred.locator("td").first.text_content() or "").strip()


def what_if_key(page, without: str | None = None, draw: bool = True) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """(Draw a what-if grid and) read its colour key: row -> colour, as the swatches are painted."""
    if draw:
        page.locator(PANEL).get_by_role("button", name=re.compile("what-if", re.I)).click()
    key = page.locator(f"{PANEL} .inspector-key")
    if without is not None:
        key = key.filter(has_not_text=without)
    key.wait_for()
    items = key.locator(".inspector-key-item").evaluate_all(
        "els => els.map(e => [e.dataset.row, e.dataset.colour,"
        " getComputedStyle(e.querySelector('.inspector-swatch')).backgroundColor])"
    )
    for _row, colour, painted in items:  # the swatch is painted the colour the key names
        assert painted == "rgb({}, {}, {})".format(*(int(colour[i : i + 2], 16) for i in (1, 3, 5)))
    return {row: colour for row, colour, _painted in items}


def modified_tabs(page) -> list[str]:  # type: ignore[no-untyped-def]
    return list(
        page.evaluate("""() => [...document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab')]
        .filter(t => t.classList.contains('jp-mod-dirty')).map(t => t.textContent.trim())""")
    )


def test_tour_runs_and_the_attention_toggle_changes_the_decision(page, lab, tmp_path: Path) -> None:
    open_notebook(page, lab, "00_tour.ipynb")
    stored = json.loads((lab.root / "00_tour.ipynb").read_text())["metadata"]["language_info"]["version"]
    if stored == platform.python_version():  # the kernel writes its own language_info: the same one changes nothing
        page.evaluate("() => new Promise(r => setTimeout(r, 1500))")
        assert modified_tabs(page) == []  # opened, its kernel started, nothing run: not modified
    run_all_cells(page)
    status = page.locator(f"{PANEL} .inspector-status")
    status.filter(has_text="attention: sdpa (origin=chain)").wait_for()
    assert chosen_row(page) == "sdpa"
    wait_for_idle_kernel(page)

    toggle = page.locator(f"{PANEL} .inspector-toggle-attention")
    toggle.get_by_role("button", name="math", exact=True).click()
    status.filter(has_text="attention: math (origin=context)").wait_for()
    assert chosen_row(page) == "math"

    # a row that cannot serve the context is marked on its own button, its refusal beside the toggle
    chunked = toggle.locator("button", has_text="chunked")
    assert chunked.locator(".fa-ban").count() == 1 and "reject" in (chunked.get_attribute("title") or "")
    chunked.click()
    status.filter(has_text="attention: ERROR").wait_for()
    caption = page.locator(f"{PANEL} .inspector-decision-table caption").text_content() or ""
    assert caption.startswith("attention: ERROR")
    refusal = page.locator(f"{PANEL} .inspector-row-refusal", has_text="chunked refused")
    refusal.wait_for()
    assert refusal.evaluate("e => !!e.closest('.widget-hbox').querySelector('.inspector-toggle-attention')")
    assert page.locator(".inspector-app .inspector-status:visible").count() == 1  # the status shows once

    toggle.get_by_role("button", name="auto", exact=True).click()
    status.filter(has_text="attention: sdpa (origin=chain)").wait_for()

    # a bad extra: the error shows in the editor's box, the decision below is marked stale, then recovers
    extra = page.locator(f"{PANEL} .inspector-context-editor .widget-text", has_text="extra").locator("input")
    extra.fill("kv_len")
    extra.press("Enter")
    error_beside(page.locator(PANEL), ".inspector-context-editor", ".inspector-error-context", "input", "name=value")
    page.locator(f"{PANEL} .inspector-results.inspector-stale .inspector-stale-note", has_text="stale").wait_for()
    extra.fill("kv_len=128")
    extra.press("Enter")
    page.locator(f"{PANEL} .inspector-results:not(.inspector-stale)").wait_for()

    # a button that starts work is disabled while it runs; before, a note says what to press
    page.locator(f"{PANEL} .jupyter-widget-Collapse-header", has_text="What-if grid").click()
    grid = page.locator(f"{PANEL} .widget-vbox", has=page.get_by_role("button", name="Draw what-if grid")).last
    grid.get_by_text("No grid yet: press").wait_for()
    draw = grid.get_by_role("button", name="Draw what-if grid")
    watch_disabled(draw)
    draw.click()
    grid.locator("img").first.wait_for()
    grid.locator("button:not([disabled])", has_text="Draw what-if grid").wait_for()
    assert was_disabled(draw)
    assert truncated_texts(page.locator(".inspector-app").first) == []

    # Two successive what-if grids with different winners: a row keeps its colour in both.
    first = what_if_key(page, draw=False)  # the grid just drawn
    toggle.get_by_role("button", name="sdpa", exact=True).click()
    status.filter(has_text="attention: sdpa (origin=context)").wait_for()
    second = what_if_key(page, without="math")  # sdpa where it can serve the cell, an error where it cannot
    assert set(first) == {"sdpa", "math"} and set(second) == {"sdpa", "no row (error)"}
    assert first["sdpa"] == second["sdpa"] and first["sdpa"] != first["math"]
    # a grid whose cells all agree is one line, not a heatmap
    toggle.get_by_role("button", name="math", exact=True).click()
    status.filter(has_text="attention: math (origin=context)").wait_for()
    page.locator(PANEL).get_by_role("button", name=re.compile("what-if", re.I)).click()
    page.locator(f"{PANEL} .inspector-note", has_text="combinations").filter(has_text="runs math").wait_for()
    toggle.get_by_role("button", name="auto", exact=True).click()
    status.filter(has_text="attention: sdpa (origin=chain)").wait_for()

    # The decision table sorts by a clicked header and filters by the words typed above it (inline script, no CDN).
    box = page.locator(f"{PANEL} .inspector-table", has=page.locator("table.inspector-decision-table"))
    rows = box.locator("tbody tr:visible td:first-child")
    priority = box.locator("thead th", has_text="priority")
    priority.click()
    box.locator("thead th[data-order=asc]").wait_for()
    ascending = [text.strip() for text in rows.all_text_contents()]
    priority.click()
    box.locator("thead th[data-order=desc]").wait_for()
    assert [text.strip() for text in rows.all_text_contents()] == ascending[::-1]
    box.locator("input.inspector-table-filter").fill("math")
    box.locator(".inspector-table-count", has_text=f"1 of {len(ascending)} rows").wait_for()
    assert [text.strip() for text in rows.all_text_contents()] == ["math"]

    # PyTorch's own family: select it, force math, and the table follows.
    page.locator(f"{PANEL} select").first.select_option("torch_sdpa")
    status.filter(has_text="torch_sdpa: flash_attention (origin=chain)").wait_for()
    assert chosen_row(page) == "flash_attention"
    sdpa_toggle = page.locator(f"{PANEL} .inspector-toggle-torch_sdpa")
    sdpa_toggle.get_by_role("button", name="math", exact=True).click()
    status.filter(has_text="torch_sdpa: math (origin=context)").wait_for()
    assert chosen_row(page) == "math"
    sdpa_toggle.get_by_role("button", name="auto", exact=True).click()
    page.locator(f"{PANEL} select").first.select_option("attention")
    status.filter(has_text="attention: sdpa (origin=chain)").wait_for()
    page.locator(".jp-OutputArea .widget-tab").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.mouse.move(5, 5)
    shot = save_screenshot(page, "tour.png", tmp_path)
    assert shot.read_bytes().startswith(b"\x89PNG")
    widget_errors = [e for e in page.console_errors if "widget" in e.lower() or "model" in e.lower()]
    assert widget_errors == []
