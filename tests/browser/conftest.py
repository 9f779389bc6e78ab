"""A real JupyterLab on 127.0.0.1 driven by Debian's Chromium through Playwright.

Fixtures: ``lab`` (a server per test module, over a temporary copy of notebooks/ as its root, the
way ``inspector lab`` serves it), ``page`` (a fresh Chromium page per test) and the helpers in
``lab_driver``. A test opens a notebook under its own name the first time in its module (so the
file browser and the screenshots show the names a user has) and a fresh copy after that, so
tests never share a kernel. The window is a usual laptop's, 1280 x 900, with JupyterLab's file
browser open: the notebook is about 950 px wide, the width most people read the Inspector at
(``lab_driver.at_three_widths`` also closes the side bar and narrows the window to 800 px).
"""

from __future__ import annotations

import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from servers import free_port, serve

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
TIMEOUT_MS = 120_000
WINDOW = {"width": 1280, "height": 900}  # a laptop's window: with the file browser open, a ~950 px notebook


@dataclass(frozen=True)
class Lab:
    base_url: str
    token: str
    root: Path
    opened: set[str] = field(default_factory=set)  # notebooks opened under their own name in this server

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path}?token={self.token}"


@pytest.fixture(scope="module")
def lab(chromium_path: str) -> Iterator[Lab]:
    home = Path(tempfile.mkdtemp(prefix="inspector-lab-"))
    root = home / "notebooks"
    shutil.copytree(REPO / "notebooks", root)
    port, token = free_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    base = f"http://127.0.0.1:{port}"
    try:
        with serve("JupyterLab", command, home, f"{base}/api/status?token={token}"):
            yield Lab(base, token, root)
    finally:
        shutil.rmtree(home, ignore_errors=True)


# Module scope: Playwright's sync API keeps an event loop running in this thread while it is
# open, and a later test calling asyncio.run() would fail if it stayed open all session.
@pytest.fixture(scope="module")
def browser_context(lab: Lab, chromium_path: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="inspector-chromium-")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=chromium_path,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport=WINDOW,
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser_context):  # type: ignore[no-untyped-def]
    page = browser_context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.console_errors = errors
    yield page
    page.close()


@dataclass(frozen=True)
class Voila:
    base_url: str


def _voila(*flags: str) -> Iterator[Voila]:
    home = Path(tempfile.mkdtemp(prefix="inspector-voila-"))
    port = free_port()
    command = [sys.executable, "-m", "inspector", "app", "--no-browser", f"--port={port}", *flags]
    base = f"http://127.0.0.1:{port}"
    try:
        with serve("Voila", command, home, f"{base}/voila/static/index.css", cwd=home):
            yield Voila(base)
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def voila_app() -> Iterator[Voila]:
    """``inspector app``: the Inspector alone, served by Voila on 127.0.0.1."""
    yield from _voila()


@pytest.fixture(scope="module")
def voila_dark_app() -> Iterator[Voila]:
    """``inspector app --dark``: the Inspector under Voila's dark theme."""
    yield from _voila("--dark")
