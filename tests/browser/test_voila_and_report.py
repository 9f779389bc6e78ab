"""The Inspector as a Voila app (``inspector app``), and the HTML report opened with the network off."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import inspector.examples  # noqa: F401  (the embedded families and data backends the report shows)
from inspector.report import build_report, write_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PANEL = ".inspector-dispatch-panel"


# What must never reach a user of the app: notebook instructions and bare reprs of Python objects.
NOT_APP_TEXT = re.compile(
    r"run the cells?|run all cells|shift\+enter|object at 0x|\bOutput\(|"
    r"\b(?:VBox|HBox|Tab|HTML|Button|Dropdown|Layout)\((?:children|value|layout)=",
    re.I,
)


def _is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in ("127.0.0.1", "localhost", "::1")


def test_the_app_renders_under_voila_offline_in_app_wording(page, voila_app) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(voila_app.base_url + "/")
    status = page.locator(f"{PANEL} .inspector-status")
    status.filter(has_text="attention: sdpa (origin=chain)").wait_for()
    shown_code = page.locator(".jp-CodeCell .jp-InputArea, .cm-editor, .jp-CodeMirrorEditor").evaluate_all(
        "areas => areas.filter(a => a.offsetParent !== null).length"
    )
    assert shown_code == 0  # the app view hides the code
    trace = page.locator(f"{PANEL} pre.inspector-pre").first
    style = trace.evaluate("""pre => { const s = getComputedStyle(pre);
        return {font: s.fontFamily, size: parseFloat(s.fontSize), line: parseFloat(s.lineHeight),
                breaks: s.wordBreak, wraps: s.overflowWrap, spaces: s.whiteSpace}; }""")
    assert "monospace" in style["font"]
    assert style["line"] <= 1.5 * style["size"], style  # single-spaced, not the widgets' 28 px rows
    assert (style["breaks"], style["wraps"], style["spaces"]) == ("normal", "normal", "pre"), style
    page.locator(f"{PANEL} .inspector-toggle-attention").get_by_role("button", name="math", exact=True).click()
    status.filter(has_text="attention: math (origin=context)").wait_for()
    starred = page.locator(f"{PANEL} table.inspector-decision-table tbody tr", has_text="★")
    assert (starred.locator("td").first.text_content() or "").strip() == "math"
    # the tables' inline sort script runs under Voila too
    page.locator(f"{PANEL} table.inspector-decision-table thead th", has_text="priority").click()
    page.locator(f"{PANEL} table.inspector-decision-table thead th[data-order=asc]").wait_for()
    tabs = page.locator(".widget-tab .lm-TabBar-tab")
    assert tabs.count() == 4  # the whole Inspector is there
    for i in range(tabs.count()):  # every tab built and shown, so its text is read as a user sees it
        tabs.nth(i).click()
        page.wait_for_function("() => !document.body.innerText.includes('Opening ')")
        text = page.locator("body").inner_text()
        assert NOT_APP_TEXT.search(text) is None, NOT_APP_TEXT.search(text)
    assert any(url.startswith(voila_app.base_url) for url in requests)  # the requests were seen
    assert [url for url in requests if not _is_local(url)] == []  # nothing from a CDN: the app works offline


def luminance(css_colour: str) -> float:
    red, green, blue = (int(v) / 255 for v in re.findall(r"[\d.]+", css_colour)[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def test_the_dark_app_has_no_glaring_white_boxes(page, voila_dark_app) -> None:
    page.goto(voila_dark_app.base_url + "/")
    page.locator(f"{PANEL} .inspector-status").filter(has_text="attention: sdpa (origin=chain)").wait_for()
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert luminance(background) < 0.3, background  # the dark theme is on
    tools = page.locator(f"{PANEL} .inspector-table-tools").first
    for part in ("input.inspector-table-filter", "button.inspector-table-copy"):
        colours = tools.locator(part).evaluate("e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]")
        assert luminance(colours[0]) < 0.4 and luminance(colours[1]) > 0.5, (part, colours)


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
            "Environment",
            "Operator dispatch",
            "Data backends",
            "Shared-memory loader",
            "RPC device maps",
        ]
        assert page.locator("table").count() >= 5
        filter_box = page.locator(".inspector-table-filter").first  # the inline script runs offline
        filter_box.fill("no such text anywhere")
        page.locator(".inspector-table-count", has_text="0 of").first.wait_for()
        images = page.locator("img")
        assert images.count() >= 3
        page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
        assert blocked == []
    finally:
        browser_context.set_offline(False)
        page.close()
