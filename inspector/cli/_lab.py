"""``inspector lab``: JupyterLab on the tour notebook."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from inspector._messages import Message
from inspector._user_modules import IMPORT_ENV, IMPORT_PATH_ENV
from inspector.cli._common import UsageError, check_module_name, working_directory_importable

WORKING_COPY = "inspector-notebooks"


def port_number(text: str) -> int:
    """argparse type for ``--port``: a TCP port from 1 to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: give a number from 1 to 65535") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: give a number from 1 to 65535")
    return port


def add_parser(verbs: Any) -> None:
    lab = verbs.add_parser("lab", help="open JupyterLab on the tour notebook")
    lab.add_argument("--port", type=port_number, default=None, help="port for JupyterLab (default: its own choice)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser window")
    lab.add_argument(
        "--notebooks",
        default=None,
        metavar="DIR",
        help="folder holding 00_tour.ipynb (default: notebooks/ of a checkout, else a copy of the "
        "installed notebooks in ./inspector-notebooks)",
    )
    lab.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module of yours the notebooks' inspector.show() imports first (families, backends); repeatable",
    )


# NOTE [ The token warning ]
# jupyter_server 2 warns "ServerApp.token config is deprecated ... Use IdentityProvider.token" whenever
# anything reads its old ``ServerApp.token`` attribute, and notebook_shim reads every attribute of the
# server at start-up: so the warning is the first thing ``jupyter lab`` prints although no token option
# is given (passing the current one, ``--IdentityProvider.token``, does not stop it, nor does
# ``PYTHONWARNINGS``: Voila's extension puts its own filter in front). So the server is started through
# ``_lab_server``, which ignores exactly that warning; every other warning shows.


def run(args: argparse.Namespace) -> int:
    from inspector._extras import require_extra

    if args.notebooks is None:
        require_extra("lab", "inspector lab")  # before copying anything
    folder = Path(args.notebooks) if args.notebooks is not None else _default_folder()
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        step = "pass a folder holding 00_tour.ipynb"
        raise UsageError(Message(f"--notebooks {folder} {what}", next_step=step).one_line())
    tour = folder / "00_tour.ipynb"
    if not tour.is_file():
        step = "pass --notebooks with a folder holding 00_tour.ipynb"
        raise UsageError(Message(f"no {tour}", next_step=step).one_line())
    require_extra("lab", "inspector lab")
    env = user_modules_env(args.imports, dict(os.environ))
    # -P: the server never imports a stray html.py from the folder it starts in.
    command = [sys.executable, "-P", "-m", "inspector.cli._lab_server", str(tour)]  # NOTE [ The token warning ]
    if args.port:
        command.append(f"--port={args.port}")
    if args.no_browser or os.environ.get("CI"):
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return subprocess.call(command, env=env)


def user_modules_env(imports: list[str], env: dict[str, str]) -> dict[str, str]:
    """``env`` for a server whose kernels import ``imports`` in ``inspector.show()`` (each checked here first)."""
    if imports:
        for name in imports:
            check_module_name(name)
        with working_directory_importable():
            missing = [name for name in imports if _find(name) is None]
        if missing:
            raise UsageError(f"--import {missing[0]}: no such module here (is it on PYTHONPATH?)")
        env[IMPORT_ENV] = ",".join([*filter(None, env.get(IMPORT_ENV, "").split(",")), *imports])
        env[IMPORT_PATH_ENV] = os.getcwd()  # on the kernels' path only while they import these
    return env


def _default_folder() -> Path:
    """``notebooks/`` in a checkout; elsewhere a copy of the installed notebooks in
    ``./inspector-notebooks`` (made once, never overwritten: your edits are yours)."""
    checkout = Path("notebooks")
    if (checkout / "00_tour.ipynb").is_file():
        return checkout
    installed = Path(str(resources.files("inspector") / "notebooks"))
    if not (installed / "00_tour.ipynb").is_file():
        headline = "no notebooks here and none installed with the package"
        raise UsageError(Message(headline, next_step="pass --notebooks DIR").one_line())
    working = Path(WORKING_COPY)
    if not (working / "00_tour.ipynb").exists():
        working.mkdir(exist_ok=True)
        for notebook in sorted([*installed.glob("*.ipynb"), *installed.glob("*.md")]):  # the glossary too
            if not (working / notebook.name).exists():
                shutil.copy2(notebook, working / notebook.name)
        print(f"inspector lab: copied the notebooks into {working.resolve()}", file=sys.stderr)
    return working


def _find(name: str) -> object:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
