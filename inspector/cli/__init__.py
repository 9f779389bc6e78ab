"""The ``inspector`` command: lab, explain, bench, rpc check and report.

Exit codes scripts can use: 0 success; 1 the answer is "no" (``explain``: the decision is an
error; ``rpc check``: torch would refuse the plan; ``bench``: a target was missed); 2 bad usage
(unknown family, unreadable file, malformed option). Only ``lab`` and ``report`` need Jupyter's
libraries; ``explain`` and ``rpc check`` run in a bare training environment. Each verb lives in
its own module with ``add_parser(verbs)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from inspector.cli import _bench, _explain, _lab, _report, _rpc
from inspector.cli._common import UsageError

VERBS = {"lab": _lab, "explain": _explain, "bench": _bench, "rpc": _rpc, "report": _report}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inspector", description=__doc__.split("\n")[0] if __doc__ else None)
    verbs = parser.add_subparsers(dest="verb", required=True)
    for module in VERBS.values():
        module.add_parser(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return VERBS[args.verb].run(args)
    except UsageError as exc:
        print(f"inspector {args.verb}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
