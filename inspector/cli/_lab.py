"""``inspector lab``: JupyterLab on the tour notebook."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def add_parser(verbs: Any) -> None:
    lab = verbs.add_parser("lab", help="open JupyterLab on the tour notebook")
    lab.add_argument("--port", type=int, default=None, help="port for JupyterLab (default: its own choice)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser window")
    lab.add_argument("--notebooks", default="notebooks", help="folder holding 00_tour.ipynb")


def run(args: argparse.Namespace) -> int:
    tour = Path(args.notebooks) / "00_tour.ipynb"
    if not tour.exists():
        print(f"inspector lab: no {tour}; run it from the repository root or pass --notebooks", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "jupyterlab", str(tour)]
    if args.port:
        command.append(f"--port={args.port}")
    if args.no_browser or os.environ.get("CI"):
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return subprocess.call(command)
