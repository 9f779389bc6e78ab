"""The RPC tab of the tour's Inspector in a real JupyterLab: live validation, then a real local world."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_driver import open_tour_tab, save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-rpc-panel"


def test_rpc_tab_validates_as_you_type_and_launches_a_local_world(page, lab, tmp_path: Path) -> None:
    open_tour_tab(page, lab, "RPC")

    panel = page.locator(PANEL).first
    status = panel.locator(".inspector-status")
    status.filter(has_text="0 problem(s): init_rpc would start").wait_for()
    panel.locator(".inspector-rpc-graph img").first.wait_for()

    gpus = panel.locator(".inspector-rpc-gpus input")
    gpus.fill("1")
    status.filter(has_text="init_rpc would fail (validation)").wait_for()
    init = panel.locator(".inspector-rpc-init")
    assert "Node worker0 has target devices with invalid indices in its device map for worker1" in init.inner_text()
    panel.locator("table", has_text="INVALID_SOURCE_INDEX").first.wait_for()
    gpus.fill("2")
    status.filter(has_text="0 problem(s): init_rpc would start").wait_for()

    panel.get_by_text("Launch a local world", exact=True).click()
    panel.locator(".inspector-rpc-launch").click()
    panel.locator(".inspector-rpc-world", has_text="ready in").wait_for()
    panel.locator("table", has_text="MB/s").first.wait_for()  # the results arrive just after the line above

    panel.scroll_into_view_if_needed()
    page.mouse.move(5, 5)
    shot = save_screenshot(page, "rpc_tab.png", tmp_path)
    assert shot.read_bytes().startswith(b"\x89PNG")
    widget_errors = [e for e in page.console_errors if "widget" in e.lower() or "model" in e.lower()]
    assert widget_errors == []
