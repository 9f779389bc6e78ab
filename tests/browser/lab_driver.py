"""Helpers that drive JupyterLab pages (imported by the browser tests as ``lab_driver``)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "images"


def open_notebook(page, lab: Any, name: str, copy_as: str | None = None):  # type: ignore[no-untyped-def]
    """Open notebooks/<name> (under its own name the first time in this server, else a fresh copy) and wait
    until its kernel is really idle."""
    target = copy_as or (name if name not in lab.opened else f"{Path(name).stem}-{secrets.token_hex(3)}.ipynb")
    lab.opened.add(name)
    if target != name:
        shutil.copy(lab.root / name, lab.root / target)
    # ?reset: start from an empty workspace, so notebooks of earlier tests are not restored beside it.
    page.goto(lab.url(f"lab/tree/{target}") + "&reset")
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell")
    # "idle" shows while the toolbar still says "No Kernel"; a Run All then is silently dropped.
    page.wait_for_function(
        """() => {
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            const name = panel && panel.querySelector('[data-jp-item-name="kernelName"]');
            const state = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
            return name && !name.textContent.includes('No Kernel') && state && state.dataset.status === 'idle';
        }"""
    )
    return target


def run_all_cells(page) -> None:  # type: ignore[no-untyped-def]
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def wait_for_widget(page: Any, selector: str) -> None:
    """Wait for the first ``selector`` after a Run All. A Run All whose menu click was dropped (nothing ran:
    no cell has an execution count) is clicked once more; a widget that never comes fails with what the
    notebook's cells show, so the failure says why."""
    widget = page.locator(selector).first
    try:
        widget.wait_for(timeout=60_000)
        return
    except PlaywrightTimeoutError:
        prompts = page.locator(".jp-InputPrompt").all_inner_texts()
        if not any(re.search(r"\[(\d+|\*)\]", prompt) for prompt in prompts):
            run_all_cells(page)
    try:
        widget.wait_for(timeout=150_000)  # within the suite's 300 s per test, lab start included
    except PlaywrightTimeoutError as exc:
        prompts = " ".join(page.locator(".jp-InputPrompt").all_inner_texts())
        outputs = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())[-3000:]
        raise AssertionError(f"no {selector} after Run All; prompts: {prompts}\noutputs:\n{outputs}") from exc


def wait_for_idle_kernel(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(
        """() => {
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            const state = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
            const busy = [...document.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('[*]'));
            return state && state.dataset.status === 'idle' && !busy;
        }"""
    )


README_SCREENSHOTS = ("tour.png", "backends_tab.png", "loader_tab.png", "rpc_tab.png")  # the ones README shows
# The words a screenshot shows a user (tab titles, section titles, labels and buttons), recorded beside each
# README image: when they change, the image is out of date.
VISIBLE_LABELS_JS = """root => [...new Set([...root.querySelectorAll(
        '.lm-TabBar-tabLabel, .jupyter-widget-Collapse-header, .widget-label, .widget-label-basic, button')]
    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().bottom > 0
                 && e.getBoundingClientRect().top < window.innerHeight)
    .map(e => e.textContent.replace(/\\s+/g, ' ').trim()).filter(Boolean))].sort()"""


def visible_labels(page: Any) -> list[str]:
    return list(page.locator(".inspector-app").first.evaluate(VISIBLE_LABELS_JS))


def labels_file(name: str) -> Path:
    return SCREENSHOTS / f"{Path(name).stem}.labels.json"


def save_screenshot(page, name: str, tmp_path: Path, top: Any = None) -> Path:  # type: ignore[no-untyped-def]
    """Screenshot of JupyterLab as a user sees it (the file browser open, the notebook at its usual width), with
    ``top`` (a locator; default: the Inspector's tabs) scrolled to the top of the notebook, into tmp_path.

    For an image README shows: with ``INSPECTOR_UPDATE_SCREENSHOTS=1`` (``make screenshots``) it replaces
    docs/images/<name> and records beside it the labels it shows and the machine's load average; otherwise
    the labels shown now must be the recorded ones, or the README's image is out of date.
    """
    set_side_bar(page, True)
    # The status bar says which cell of which notebook the test drives ("Cell 2/32"): nothing a reader needs.
    page.add_style_tag(content="#jp-main-statusbar { display: none !important; }")
    anchor = top if top is not None else page.locator(".jp-OutputArea .widget-tab").first
    anchor.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.mouse.move(5, 5)
    page.wait_for_function("() => [...document.images].every(i => i.complete)")
    _relaid(page)
    target = tmp_path / name
    page.screenshot(path=str(target))
    if name not in README_SCREENSHOTS:
        return target
    labels = visible_labels(page)
    if os.environ.get("INSPECTOR_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(target, SCREENSHOTS / name)
        record = {
            "image": name,
            "window": f"{page.viewport_size['width']} x {page.viewport_size['height']} px, "
            "JupyterLab's file browser open",
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "cores": os.cpu_count(),
            "labels": labels,
        }
        labels_file(name).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    else:
        recorded = json.loads(labels_file(name).read_text())["labels"] if labels_file(name).exists() else None
        assert labels == recorded, (
            f"docs/images/{name} is out of date: the tab now shows other labels than the image "
            f"(now {labels}, recorded {recorded}); run `make screenshots`"
        )
    return target


# -- three widths ------------------------------------------------------------------------------
WIDTHS = ("side bar open", "side bar closed", "800 px window")
NARROW = 800


def _relaid(page: Any) -> None:
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_timeout(300)  # JupyterLab and the widgets lay out again after a resize


def set_side_bar(page: Any, opened: bool) -> None:
    """Open or close JupyterLab's left side bar (the file browser)."""
    stack = page.locator("#jp-left-stack")
    if stack.is_visible() != opened:
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab").first.click()
    stack.wait_for(state="visible" if opened else "hidden")
    _relaid(page)


def at_three_widths(page: Any) -> Iterator[str]:
    """Lay JupyterLab out at each width people read the Inspector at, yielding which: the file browser open
    (the usual ~950 px notebook), closed, and an 800 px window. Puts the window back after."""
    size = dict(page.viewport_size)
    try:
        set_side_bar(page, True)
        yield WIDTHS[0]
        set_side_bar(page, False)
        yield WIDTHS[1]
        page.set_viewport_size({"width": NARROW, "height": size["height"]})
        _relaid(page)
        yield WIDTHS[2]
    finally:
        page.set_viewport_size(size)
        set_side_bar(page, True)


# Words split across lines: in every visible table header and trace, each word (or underscore-joined part)
# must lie on one line.
SPLIT_WORDS_JS = """root => {
    const split = [];
    const check = (element, what) => {
        const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
        let node, words = 0;
        while ((node = walker.nextNode()) && words < 3000) {
            const pattern = /\\S+/g;
            let found;
            while ((found = pattern.exec(node.textContent)) && words < 3000) {
                words++;
                let start = found.index;
                for (const part of found[0].split(/(?<=_)/)) {
                    const range = document.createRange();
                    range.setStart(node, start);
                    range.setEnd(node, start + part.length);
                    const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
                                         .map(r => Math.round(r.top)));
                    if (tops.size > 1) split.push(`${what}: ${found[0]}`);
                    start += part.length;
                }
            }
        }
    };
    root.querySelectorAll('.inspector-table th').forEach(e => { if (e.offsetParent !== null) check(e, 'header'); });
    root.querySelectorAll('pre.inspector-pre').forEach(e => { if (e.offsetParent !== null) check(e, 'trace'); });
    return [...new Set(split)].slice(0, 20);
}"""

# Every visible control's tooltip as the browser has it (its DOM title), not the Python attribute.
UNTITLED_JS = """root => [...root.querySelectorAll('input, select, textarea, button')]
    .filter(e => (e.offsetParent !== null || e.type === 'checkbox') && !e.closest('.inspector-table-tools'))
    .filter(e => {
        const title = (e.getAttribute('title') || '').trim();
        const label = (e.closest('label') || e.parentElement || e).textContent.trim();
        return !title || title === 'null' || (e.type === 'checkbox' && title === label);
    })
    .map(e => `${e.tagName.toLowerCase()}${e.type ? '[' + e.type + ']' : ''} in `
              + `"${(e.closest('.jupyter-widgets') || e).textContent.replace(/\\s+/g, ' ').trim().slice(0, 50)}"`)"""


# Rows of controls wider than the room they have: their right end (or left end) is cut off or scrolled away.
OVERFLOWING_JS = """root => [...root.querySelectorAll('.widget-hbox, .widget-vbox, .widget-box')]
    .filter(e => e.offsetParent !== null && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1
                 && !e.closest('.inspector-table'))
    .filter(e => ![...e.querySelectorAll('.widget-hbox, .widget-vbox, .widget-box')]
                 .some(c => c.offsetParent !== null && c.scrollWidth > c.clientWidth + 1))
    .map(e => `${e.scrollWidth} > ${e.clientWidth} px: "${e.textContent.replace(/\\s+/g, ' ').trim().slice(0, 60)}"`)"""


def layout_problems(page: Any) -> dict[str, list[str]]:
    """What reads badly in the visible part of the Inspector now: words split across lines in headers and
    traces, controls without a tooltip in the page, labels cut short, rows of controls wider than their room,
    ``title="null"``."""
    app = page.locator(".inspector-app").first
    return {
        "split words": list(app.evaluate(SPLIT_WORDS_JS)),
        "no tooltip": list(app.evaluate(UNTITLED_JS)),
        "cut labels": truncated_texts(app),
        "overflowing rows": list(app.evaluate(OVERFLOWING_JS)),
        "title=null": list(
            app.evaluate("root => [...root.querySelectorAll('[title=\"null\"]')].map(e => e.outerHTML.slice(0, 80))")
        ),
    }


def open_tour_tab(page: Any, lab: Any, title: str) -> None:
    """Run the whole tour in a fresh copy, wait for its Inspector, then open the tab called ``title``."""
    open_notebook(page, lab, "00_tour.ipynb")
    run_all_cells(page)
    wait_for_widget(page, ".jp-OutputArea .widget-tab")
    wait_for_idle_kernel(page)
    page.locator(".widget-tab .lm-TabBar-tab", has_text=title).first.click()


def watch_disabled(button: Any) -> None:
    """Start noting whether ``button`` (a locator) is ever disabled, however briefly; read with ``was_disabled``."""
    button.evaluate(
        """b => { b.__inspectorWasDisabled = b.disabled;
                 new MutationObserver(() => { if (b.disabled) b.__inspectorWasDisabled = true; })
                     .observe(b, {attributes: true}); }"""
    )


def was_disabled(button: Any) -> bool:
    return bool(button.evaluate("b => b.__inspectorWasDisabled"))


def truncated_texts(root: Any) -> list[str]:
    """Visible buttons, labels and tab titles under ``root`` (a locator) whose text is wider than the element."""
    return list(
        root.evaluate(
            """root => [...root.querySelectorAll(
                'button, .widget-label, .widget-label-basic, .lm-TabBar-tabLabel, .jupyter-widget-Collapse-header')]
            .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
            .map(e => `${e.textContent.trim()} (${e.scrollWidth} > ${e.clientWidth})`)"""
        )
    )


def error_beside(panel: Any, box: str, error: str, control: str, text: str) -> None:
    """Wait until the error ``text`` shows in ``box``, and check ``box`` also holds the control that caused it."""
    container = panel.locator(box).first
    container.locator(error, has_text=text).first.wait_for()
    assert container.locator(control).count() >= 1, f"{control} is not in {box} with its error"
