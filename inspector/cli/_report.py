"""``inspector report OUT.html``: the self-contained HTML report of the engine's state."""

from __future__ import annotations

import argparse
from typing import Any

from inspector.cli._common import UsageError, check_output_path


def add_parser(verbs: Any) -> None:
    report = verbs.add_parser("report", help="write a self-contained HTML report of the engine's state")
    report.add_argument("out", metavar="OUT.html", help="the file to write; its folder must exist")


def run(args: argparse.Namespace) -> int:
    from inspector._extras import require_extra

    out = check_output_path(args.out, "OUT.html", "report.html")  # before any work, so nothing is wasted
    require_extra("ui", "inspector report")

    import inspector.examples  # noqa: F401
    from inspector.report import build_report, write_report

    text = build_report()
    try:
        path = write_report(out, text)
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    print(f"wrote {path}")
    return 0
