"""``inspector app``: the Inspector alone, as a Voila app (no code, no notebook, nothing from a CDN).

The app is a one-cell notebook shipped with the package (``_voila/app.ipynb``: a title, then
``inspector.show()``), rendered by Voila with the ``inspector`` template (``_voila/voila/templates``):
Voila's lab template less the stylesheets it links from a CDN, so the app works offline.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from inspector._messages import Message
from inspector.cli._common import UsageError
from inspector.cli._lab import port_number, user_modules_env

TEMPLATE = "inspector"


def voila_folder() -> Path:
    """Where the app notebook and the Voila template ship (a ``JUPYTER_PATH`` entry)."""
    return Path(str(resources.files("inspector") / "_voila"))


def add_parser(verbs: Any) -> None:
    app = verbs.add_parser("app", help="serve the Inspector alone as a Voila app (no notebook, no code)")
    app.add_argument("--port", type=port_number, default=None, help="port for Voila (default: 8866)")
    app.add_argument("--no-browser", action="store_true", help="do not open a browser window")
    app.add_argument("--dark", action="store_true", help="the dark theme")
    app.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module of yours the app imports first (families, backends); repeatable",
    )


def voila_command(notebook: Path, port: int | None, *, no_browser: bool, dark: bool) -> list[str]:
    """The Voila command line serving ``notebook`` with the ``inspector`` template."""
    command = [sys.executable, "-P", "-m", "voila", str(notebook), f"--template={TEMPLATE}", "--strip_sources=True"]
    if port:
        command += [f"--port={port}", "--Voila.port_retries=0"]
    if dark:
        command.append("--theme=dark")
    if no_browser:
        command.append("--no-browser")
    return command


def run(args: argparse.Namespace) -> int:
    from inspector._extras import require_extra

    require_extra("lab", "inspector app")
    folder = voila_folder()
    notebook = folder / "app.ipynb"
    if not notebook.is_file():
        headline = f"no {notebook}: this installation of inspector is incomplete"
        raise UsageError(Message(headline, next_step="reinstall it").one_line())
    env = user_modules_env(args.imports, dict(os.environ))
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(folder), env.get("JUPYTER_PATH")]))
    command = voila_command(
        notebook, args.port, no_browser=args.no_browser or bool(os.environ.get("CI")), dark=args.dark
    )
    return subprocess.call(command, env=env)
