"""The tour as a Voila app, and the HTML report opened with the network off."""

from __future__ import annotations

from pathlib import Path

import pytest

import inspector.examples  # noqa: F401  (the embedded families and data backends the report shows)
from inspector.report import build_report, write_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-dispatch-panel"


def test_the_tour_renders_as_a_voila_app_and_its_toggle_works(page, voila_tour) -> None:
    page.goto(voila_tour.base_url + "/")
    status = page.locator(f"{PANEL} .inspector-status")
    status.filter(has_text="attention: sdpa (origin=chain)").wait_for()
    shown_code = page.locator(".jp-CodeCell .jp-InputArea, .cm-editor, .jp-CodeMirrorEditor").evaluate_all(
        "areas => areas.filter(a => a.offsetParent !== null).length")
    assert shown_code == 0  # the app view hides the code
    assert page.locator(".widget-tab").count() >= 1  # the whole Inspector is there
    page.locator(f"{PANEL} .inspector-toggle-attention").get_by_role("button", name="math", exact=True).click()
    status.filter(has_text="attention: math (origin=context)").wait_for()
    starred = page.locator(f"{PANEL} table.inspector-decision-table tbody tr", has_text="★")
    assert (starred.locator("td").first.text_content() or "").strip() == "math"


def test_the_report_renders_offline_with_its_tables_and_images(browser_context, tmp_path: Path) -> None:
    path = write_report(tmp_path / "report.html", build_report())
    page = browser_context.new_page()
    blocked: list[str] = []

    def only_local(route) -> None:  # type: ignore[no-untyped-def]
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    browser_context.set_offline(True)
    try:
        page.goto(path.as_uri())
        assert page.locator("h2").all_text_contents() == [
            "Operator dispatch", "Data backends", "Shared-memory loader", "RPC device maps"]
        assert page.locator("table").count() >= 5
        images = page.locator("img")
        assert images.count() >= 3
        page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
        assert blocked == []
    finally:
        browser_context.set_offline(False)
        page.close()
