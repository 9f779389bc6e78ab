"""The tour in a real JupyterLab: run every cell, switch the attention toggle, see the table change."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_driver import open_notebook, run_all_cells, save_screenshot, wait_for_idle_kernel

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-dispatch-panel"


def chosen_row(page) -> str:  # type: ignore[no-untyped-def]
    table = page.locator(f"{PANEL} table.inspector-decision-table")
    starred = table.locator("tbody tr", has_text="★")
    return (starred.locator("td").first.text_content() or "").strip()


def test_tour_runs_and_the_attention_toggle_changes_the_decision(page, lab, tmp_path: Path) -> None:
    open_notebook(page, lab, "00_tour.ipynb")
    run_all_cells(page)
    status = page.locator(f"{PANEL} .inspector-status")
    status.filter(has_text="attention: sdpa (origin=chain)").wait_for()
    assert chosen_row(page) == "sdpa"
    wait_for_idle_kernel(page)

    toggle = page.locator(f"{PANEL} .inspector-toggle-attention")
    toggle.get_by_role("button", name="math", exact=True).click()
    status.filter(has_text="attention: math (origin=context)").wait_for()
    assert chosen_row(page) == "math"

    toggle.get_by_role("button", name="chunked", exact=True).click()
    status.filter(has_text="attention: ERROR").wait_for()
    caption = page.locator(f"{PANEL} .inspector-decision-table caption").text_content() or ""
    assert caption.startswith("attention: ERROR")

    toggle.get_by_role("button", name="auto", exact=True).click()
    status.filter(has_text="attention: sdpa (origin=chain)").wait_for()

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
