"""The RPC tab of the tour's Inspector in a real JupyterLab: live validation, templates, download, then a real world."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lab_driver import error_beside, open_tour_tab, save_screenshot, truncated_texts, was_disabled, watch_disabled

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-rpc-panel"


def test_rpc_tab_validates_as_you_type_and_launches_a_local_world(page, lab, tmp_path: Path) -> None:
    open_tour_tab(page, lab, "RPC")

    panel = page.locator(PANEL).first
    status = panel.locator(".inspector-status")
    status.filter(has_text="0 problem(s): init_rpc would start").wait_for()
    panel.locator(".inspector-rpc-graph img").first.wait_for()
    assert truncated_texts(page.locator(".inspector-app").first) == []

    # a GPU count that does not fit the workers: explained beside the worker fields, results marked stale
    gpus = panel.locator(".inspector-rpc-gpus input")
    gpus.fill("2,2,2")
    error_beside(panel, ".inspector-rpc-plan-box", ".inspector-error-plan", ".inspector-rpc-gpus", "comma-separated")
    panel.locator(".inspector-results.inspector-stale .inspector-stale-note", has_text="stale").wait_for()
    gpus.fill("2")
    status.filter(has_text="0 problem(s): init_rpc would start").wait_for()
    assert panel.locator(".inspector-results.inspector-stale").count() == 0

    # a template fills the rows; the graph of a 4 x 8 mesh is drawn
    templates = panel.locator(".inspector-rpc-templates")
    templates.locator("select").select_option("full mesh")
    templates.locator("input").nth(0).fill("4")
    templates.locator("input").nth(1).fill("8")
    templates.locator("input").nth(1).press("Enter")
    panel.locator(".inspector-rpc-template-apply").click()
    status.filter(has_text="4 workers, 96 mapped pairs, 0 problem(s)").wait_for()

    # one short node: torch's first error, every offending row outlined with its next step
    gpus.fill("8,8,4,8")
    status.filter(has_text="init_rpc would fail (validation)").wait_for()
    init = panel.locator(".inspector-rpc-init")
    assert "Node worker0 has target devices with invalid indices in its device map for worker2" in init.inner_text()
    bad_rows = panel.locator(".inspector-rpc-row-bad")
    bad_rows.first.wait_for()
    assert bad_rows.count() == 2 * 3 * 4  # cuda:4..7 into worker2 from three callers, and out of it to three
    assert "INVALID_TARGET_INDEX: targets are the callee's devices" in bad_rows.first.inner_text()
    grid = panel.locator(".inspector-rpc-graph img")  # a GPU mesh: a GPU x GPU grid per worker pair
    grid.first.wait_for()
    panel.scroll_into_view_if_needed()
    save_screenshot(page, "rpc_tab_mesh.png", tmp_path)

    # the plan downloads as a file, from a link on one line
    link = panel.locator(".inspector-rpc-download")
    assert link.evaluate("a => a.getClientRects().length") == 1 and link.evaluate(
        "a => a.getBoundingClientRect().height < 2 * parseFloat(getComputedStyle(a).lineHeight || '20')"
    )
    with page.expect_download() as download_info:
        panel.locator(".inspector-rpc-download").click()
    download = download_info.value
    assert download.suggested_filename == "rpc_plan.json"
    saved = json.loads(Path(download.path()).read_text())
    assert [w["device_count"] for w in saved["workers"]] == [8, 8, 4, 8]

    # back to a small plan torch refuses: launching it asks first, loudly
    templates.locator("select").select_option("ring")
    templates.locator("input").nth(0).fill("2")
    templates.locator("input").nth(1).fill("1")
    templates.locator("input").nth(1).press("Enter")
    panel.locator(".inspector-rpc-template-apply").click()
    status.filter(has_text="2 workers, 2 mapped pairs, 0 problem(s)").wait_for()
    gpus.fill("0")
    status.filter(has_text="init_rpc would fail (validation)").wait_for()
    panel.get_by_text("Launch a local world", exact=True).click()
    panel.locator(".inspector-rpc-launch-preview", has_text="Every figure is for CPU tensors").wait_for()
    panel.locator(".inspector-rpc-launch").click()
    confirm = panel.locator(".inspector-rpc-confirm")
    confirm.filter(has_text="init_rpc would refuse this plan; this machine can run only part of it").wait_for()
    assert "this machine has no GPU, so the plan's 2 GPU map pairs are left out" in confirm.inner_text()
    confirm.locator("button", has_text="Cancel").click()
    confirm.wait_for(state="hidden")

    # a plan torch accepts launches at once and shows RTT percentiles and bandwidth in MiB/s
    gpus.fill("1")
    status.filter(has_text="0 problem(s): init_rpc would start").wait_for()
    launch = panel.locator(".inspector-rpc-launch")
    watch_disabled(launch)
    launch.click()
    panel.locator(".inspector-rpc-world", has_text="ready in").wait_for()
    assert "for CPU tensors" in panel.locator(".inspector-rpc-world").inner_text()
    assert was_disabled(launch)
    panel.locator(".inspector-rpc-launch:not([disabled])").wait_for()
    panel.locator("table", has_text="median MiB/s").first.wait_for()  # the results arrive just after the line above
    panel.locator("table", has_text="p99 us").first.wait_for()

    panel.scroll_into_view_if_needed()
    page.mouse.move(5, 5)
    shot = save_screenshot(page, "rpc_tab.png", tmp_path)
    assert shot.read_bytes().startswith(b"\x89PNG")
    widget_errors = [e for e in page.console_errors if "widget" in e.lower() or "model" in e.lower()]
    assert widget_errors == []
