"""The Backends tab of the tour's Inspector in a real JupyterLab: matrix, verb errors, a sample batch."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_driver import error_beside, open_tour_tab, save_screenshot, truncated_texts, was_disabled, watch_disabled

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-backends-panel"


def test_backends_tab_shows_the_matrix_explains_a_missing_verb_and_builds_a_sample(page, lab, tmp_path: Path) -> None:
    open_tour_tab(page, lab, "Backends")

    panel = page.locator(PANEL).first
    panel.locator(".inspector-status", has_text="registered").wait_for()
    matrix = panel.locator("table.inspector-backend-matrix")
    for name in ("npz", "synthetic"):
        assert matrix.locator("th", has_text=name).count() >= 1

    panel.locator(".widget-dropdown", has_text="backend").locator("select").select_option("npz")
    panel.locator(".widget-dropdown", has_text="verb").locator("select").select_option("stats")
    verb = panel.locator(".inspector-backend-verb")
    verb.filter(has_text="MissingOperationError").wait_for()
    assert "Supported by: ['synthetic']" in verb.inner_text()

    panel.locator(".widget-dropdown", has_text="backend").locator("select").select_option("synthetic")
    verb.filter(has_text="Mean and standard deviation").wait_for()
    build = panel.get_by_role("button", name="Build sample")
    watch_disabled(build)
    build.click()
    panel.get_by_text("SyntheticTrajectories of").wait_for()
    assert was_disabled(build) and build.is_enabled()
    assert panel.locator(".widget-progress:visible").count() == 0  # no idle progress bar
    batch = panel.locator("table", has_text="episode_index")
    batch.wait_for()
    assert "(4, 2, 4)" in batch.inner_text() and "float32" in batch.inner_text()
    assert "NaNs" in batch.inner_text() and "mean" in batch.inner_text()  # value statistics beside the shapes

    panel.scroll_into_view_if_needed()
    page.mouse.move(5, 5)
    shot = save_screenshot(page, "backends_tab.png", tmp_path)
    assert shot.read_bytes().startswith(b"\x89PNG")
    assert truncated_texts(page.locator(".inspector-app").first) == []

    # a config error shows under the config box, and the batch built from the previous config goes
    config = panel.locator(".inspector-backends-config textarea")
    config.fill(config.input_value().replace("batch_size: 4", "batch_size: 0"))
    build.click()
    error_beside(panel, ".inspector-backends-config", ".inspector-error-config", "textarea", "batch_size")
    batch.wait_for(state="detached")
    assert panel.get_by_text("SyntheticTrajectories of").count() == 0
    widget_errors = [e for e in page.console_errors if "widget" in e.lower() or "model" in e.lower()]
    assert widget_errors == []
