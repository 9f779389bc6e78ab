"""Helpers that drive JupyterLab pages (imported by the browser tests as ``lab_driver``)."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "images"


def open_notebook(page, lab: Any, name: str, copy_as: str | None = None):  # type: ignore[no-untyped-def]
    """Open a fresh copy of notebooks/<name> and wait until its kernel is really idle."""
    target = copy_as or f"{Path(name).stem}-{secrets.token_hex(3)}.ipynb"
    shutil.copy(lab.root / "notebooks" / name, lab.root / "notebooks" / target)
    # ?reset: start from an empty workspace, so notebooks of earlier tests are not restored beside it.
    page.goto(lab.url(f"lab/tree/notebooks/{target}") + "&reset")
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


def save_screenshot(page, name: str, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """Screenshot of the app alone into tmp_path; also into docs/images when INSPECTOR_UPDATE_SCREENSHOTS=1
    (for the images README shows).

    The left side bar is collapsed for the shot (and opened again after), so the file browser with
    the tests' notebook copies never appears in a screenshot.
    """
    opened = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    collapsed = opened.count() > 0
    if collapsed:
        opened.first.click()  # clicking the open side bar's tab collapses it
        page.locator("#jp-left-stack").wait_for(state="hidden")
        page.mouse.move(5, 5)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    target = tmp_path / name
    page.screenshot(path=str(target))
    if collapsed:
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab").first.click()
        page.locator("#jp-left-stack").wait_for(state="visible")
    if os.environ.get("INSPECTOR_UPDATE_SCREENSHOTS") == "1" and name in README_SCREENSHOTS:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(target, SCREENSHOTS / name)
    return target


def open_tour_tab(page: Any, lab: Any, title: str) -> None:
    """Run the whole tour in a fresh copy, wait for its Inspector, then open the tab called ``title``."""
    open_notebook(page, lab, "00_tour.ipynb")
    run_all_cells(page)
    page.locator(".jp-OutputArea .widget-tab").first.wait_for()
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
    return list(root.evaluate(
        """root => [...root.querySelectorAll(
                'button, .widget-label, .widget-label-basic, .lm-TabBar-tabLabel, .jupyter-widget-Collapse-header')]
            .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
            .map(e => `${e.textContent.trim()} (${e.scrollWidth} > ${e.clientWidth})`)"""
    ))


def error_beside(panel: Any, box: str, error: str, control: str, text: str) -> None:
    """Wait until the error ``text`` shows in ``box``, and check ``box`` also holds the control that caused it."""
    container = panel.locator(box).first
    container.locator(error, has_text=text).first.wait_for()
    assert container.locator(control).count() >= 1, f"{control} is not in {box} with its error"
