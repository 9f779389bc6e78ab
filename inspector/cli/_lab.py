"""``inspector lab``: JupyterLab on the tour notebook."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from inspector.cli._common import UsageError


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: give a number from 1 to 65535") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: give a number from 1 to 65535")
    return port


def add_parser(verbs: Any) -> None:
    lab = verbs.add_parser("lab", help="open JupyterLab on the tour notebook")
    lab.add_argument("--port", type=_port, default=None, help="port for JupyterLab (default: its own choice)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser window")
    lab.add_argument("--notebooks", default="notebooks", help="folder holding 00_tour.ipynb")


def run(args: argparse.Namespace) -> int:
    from inspector._extras import require_extra

    folder = Path(args.notebooks)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(f"--notebooks {folder} {what}; run it from the repository root or pass --notebooks")
    tour = folder / "00_tour.ipynb"
    if not tour.is_file():
        raise UsageError(f"no {tour}; run it from the repository root or pass --notebooks")
    require_extra("lab", "inspector lab")
    command = [sys.executable, "-m", "jupyterlab", str(tour)]
    if args.port:
        command.append(f"--port={args.port}")
    if args.no_browser or os.environ.get("CI"):
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return subprocess.call(command)
