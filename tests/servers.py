"""Jupyter servers for tests (JupyterLab, Voila, ``inspector lab``): isolated settings, bounded start, clean stop.

Imported as ``servers`` by the browser tests and the command-line tests (this folder is on
``sys.path`` through ``tests/conftest.py``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

START_S = 90  # a Jupyter server on a busy 2-core machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def isolated_jupyter_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in (
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_RUNTIME_DIR",
        "JUPYTERLAB_SETTINGS_DIR",
        "JUPYTERLAB_WORKSPACES_DIR",
        "IPYTHONDIR",
    ):
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
def serve(name: str, command: list[str], home: Path, ready_url: str, cwd: Path | None = None) -> Iterator[None]:
    """Run a Jupyter server in its own session until ``ready_url`` answers; stop the whole group after."""
    log = open(home / f"{name}.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        command, cwd=cwd, env=isolated_jupyter_env(home), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + START_S
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
