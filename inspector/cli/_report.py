"""``inspector report OUT.html``: the self-contained HTML report of the engine's state."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(verbs: Any) -> None:
    report = verbs.add_parser("report", help="write a self-contained HTML report of the engine's state")
    report.add_argument("out", metavar="OUT.html")


def run(args: argparse.Namespace) -> int:
    import inspector.examples  # noqa: F401
    from inspector.report import to_html

    path = to_html(args.out)
    print(f"wrote {path}")
    return 0
