"""The ``inspector`` command: lab, app, explain, bench, rpc check and report.

Exit codes scripts can use: 0 success; 1 the answer is "no" (``explain``: the decision is an
error; ``rpc check``: torch would refuse the plan; ``bench``: a target was missed); 2 bad usage
(unknown verb or option, a missing or ill-typed argument, an unreadable file, a path that cannot
be written), always as one line on stderr; 130 interrupted. Only ``lab``, ``app`` and ``report`` need
Jupyter's libraries; ``explain`` and ``rpc check`` run in a bare training environment. Each verb
lives in its own module with ``add_parser(verbs)`` and ``run(args) -> int``.

NOTE [ One line for bad usage ]
A user who mistypes gets one line on stderr naming the problem and the next step, and exit 2:
argparse's own complaints come through :class:`~inspector.cli._common.ArgumentParser`, a verb
raises :class:`~inspector.cli._common.UsageError`, and any error the engine raises on purpose
(an :class:`~inspector.errors.InspectorError`: an unknown family, a malformed config, a missing
extra) is bad input too. Anything else is a bug in the inspector and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from inspector.cli import _app, _bench, _explain, _lab, _report, _rpc
from inspector.cli._common import ArgumentParser, UsageError, one_line
from inspector.errors import InspectorError

VERBS = {"lab": _lab, "app": _app, "explain": _explain, "bench": _bench, "rpc": _rpc, "report": _report}


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="inspector",
        description="Look inside operator dispatch, data backends, the shared-memory loader and RPC device maps.",
        epilog="exit codes: 0 yes; 1 no (see each verb); 2 bad usage, as one line on stderr; 130 interrupted",
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    for module in VERBS.values():
        module.add_parser(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; see NOTE [ One line for bad usage ] for what reaches stderr."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error already printed as one line (2)
        return exc.code if isinstance(exc.code, int) else 2
    prog = f"inspector {args.verb}"
    try:
        return int(VERBS[args.verb].run(args))
    except (UsageError, InspectorError) as exc:
        print(f"{prog}: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
