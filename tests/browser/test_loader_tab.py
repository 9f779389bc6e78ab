"""The Loader tab of the tour's Inspector in a real JupyterLab: pick a small benchmark, run it, read the results."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_driver import open_tour_tab, save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-loader-panel"


def test_loader_tab_runs_a_small_benchmark_and_shows_results_and_workers(page, lab, tmp_path: Path) -> None:
    open_tour_tab(page, lab, "Loader")

    panel = page.locator(PANEL).first
    panel.locator(".inspector-status", has_text="Pick sizes and workers").wait_for()
    devices = panel.locator(".widget-dropdown", has_text="device").locator("option").all_inner_texts()
    assert "CPU" in devices
    panel.locator(".widget-select-multiple", has_text="sizes (MiB)").locator("select").select_option(label=["0.25"])
    panel.locator(".widget-select-multiple", has_text="workers").locator("select").select_option(label=["1"])
    panel.locator(".widget-select-multiple", has_text="methods").locator("select").select_option(
        label=["inspector loader", "FileStorage.load (sync)", "memcpy (ceiling)"]
    )
    panel.get_by_role("button", name="Run").click()
    panel.locator(".inspector-status", has_text="results in").wait_for(timeout=120_000)

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
