"""A real JupyterLab on 127.0.0.1 driven by Debian's Chromium through Playwright.

Fixtures: ``lab`` (a session-wide server over a temporary copy of notebooks/), ``page`` (a fresh
Chromium page per test) and the helpers ``open_notebook`` and ``run_all_cells``. Each browser
test opens its own notebook copy, so tests do not see each other's kernels or edits.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]
TIMEOUT_MS = 120_000


@dataclass(frozen=True)
class Lab:
    base_url: str
    token: str
    root: Path

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path}?token={self.token}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _isolated_jupyter_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR",
                 "JUPYTERLAB_WORKSPACES_DIR", "IPYTHONDIR"):
        path = home / name.lower()
        path.mkdir(parents=True)
        env[name] = str(path)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    notifications = home / "jupyterlab_settings_dir" / "@jupyterlab" / "apputils-extension"
    notifications.mkdir(parents=True)
    (notifications / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    profile = home / "ipythondir" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text('c.InteractiveShell.colors = "nocolor"\n')
    return env


@contextmanager
def _server(name: str, command: list[str], home: Path, ready_url: str, cwd: Path | None = None) -> Iterator[None]:
    """Run a Jupyter server in its own session until ``ready_url`` answers; stop the whole group after."""
    log = open(home / f"{name}.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen(command, cwd=cwd, env=_isolated_jupyter_env(home), stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(ready_url, timeout=2):
                    break
            except OSError as exc:
                if getattr(exc, "code", None) is not None:  # any HTTP answer means the server is up
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{name} did not start:\n{(home / f'{name}.log').read_text()[-3000:]}")
            time.sleep(0.3)
        yield
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        log.close()


@pytest.fixture(scope="session")
def lab(chromium_path: str) -> Iterator[Lab]:
    home = Path(tempfile.mkdtemp(prefix="inspector-lab-"))
    root = home / "root"
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    base = f"http://127.0.0.1:{port}"
    try:
        with _server("JupyterLab", command, home, f"{base}/api/status?token={token}"):
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
            profile, executable_path=chromium_path, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000},
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


@pytest.fixture(scope="module")
def voila_tour() -> Iterator[Voila]:
    """Voila serving the tour as an app (code hidden), on 127.0.0.1."""
    home = Path(tempfile.mkdtemp(prefix="inspector-voila-"))
    shutil.copytree(REPO / "notebooks", home / "notebooks")
    port = _free_port()
    command = [sys.executable, "-m", "voila", "00_tour.ipynb", "--no-browser", f"--port={port}",
               "--Voila.ip=127.0.0.1", "--Voila.port_retries=0", "--show_tracebacks=True"]
    base = f"http://127.0.0.1:{port}"
    try:
        with _server("Voila", command, home, f"{base}/voila/static/index.css", cwd=home / "notebooks"):
            yield Voila(base)
    finally:
        shutil.rmtree(home, ignore_errors=True)
