"""The Loader tab of the tour's Inspector in a real JupyterLab: pick a small benchmark, run it, read the results."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_driver import error_beside, open_tour_tab, save_screenshot, truncated_texts, was_disabled, watch_disabled

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-loader-panel"


def test_loader_tab_runs_a_small_benchmark_and_shows_results_and_workers(page, lab, tmp_path: Path) -> None:
    open_tour_tab(page, lab, "Loader")

    panel = page.locator(PANEL).first
    panel.locator(".inspector-status", has_text="Pick sizes and workers").wait_for()
    # before a first result: a note says what to press, no empty axes, no idle progress bar
    panel.locator(".widget-tab", has_text="By size").get_by_text("No result yet").first.wait_for()
    assert panel.locator(".widget-tab img").count() == 0 and panel.locator(".widget-progress:visible").count() == 0
    assert truncated_texts(page.locator(".inspector-app").first) == []
    sizes = panel.locator(".widget-select-multiple", has_text="sizes (MiB)").locator("select")
    sizes.select_option([])
    run = panel.locator(".inspector-loader-run button", has_text="Run")
    run.click()
    error_beside(panel, ".inspector-loader-run", ".inspector-error-run", "button", "Pick at least one of sizes")
    devices = panel.locator(".widget-dropdown", has_text="device").locator("option").all_inner_texts()
    assert "CPU" in devices
    sizes.select_option(label=["0.25"])
    panel.locator(".widget-select-multiple", has_text="workers").locator("select").select_option(label=["1"])
    panel.locator(".widget-select-multiple", has_text="methods").locator("select").select_option(
        label=["inspector loader", "FileStorage.load (sync)", "memcpy (ceiling)"]
    )
    watch_disabled(run)
    run.click()
    panel.locator(".inspector-status", has_text="results in").wait_for(timeout=120_000)
    assert was_disabled(run)
    panel.locator(".inspector-loader-run button:not([disabled])", has_text="Run").wait_for()

    results = panel.locator("table", has_text="inspector loader").first
    results.wait_for()
    text = results.inner_text()
    assert "memcpy (ceiling)" in text and "FileStorage.load (sync)" in text
    assert panel.locator(".widget-tab img, .widget-tab .jp-RenderedImage img").count() >= 1
    panel.get_by_role("button", name="Refresh workers").click()
    panel.get_by_text("Loaders in this kernel").wait_for()

    panel.scroll_into_view_if_needed()
    page.mouse.move(5, 5)
    shot = save_screenshot(page, "loader_tab.png", tmp_path)
    assert shot.read_bytes().startswith(b"\x89PNG")
    widget_errors = [e for e in page.console_errors if "widget" in e.lower() or "model" in e.lower()]
    assert widget_errors == []
