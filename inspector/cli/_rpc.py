"""``inspector rpc check PLAN.json``: every problem of a plan, and what ``init_rpc`` would say."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(verbs: Any) -> None:
    rpc = verbs.add_parser("rpc", help="RPC device-map tools")
    rpc_verbs = rpc.add_subparsers(dest="rpc_verb", required=True)
    check = rpc_verbs.add_parser("check", help="check a plan JSON file as init_rpc would (exit 1 if refused)")
    check.add_argument("plan", metavar="PLAN.json", help="a plan written by TopologyPlan.to_json or the RPC tab")


def run(args: argparse.Namespace) -> int:
    from inspector.rpc import TopologyPlan, predict_init_error

    try:
        plan = TopologyPlan.from_json(Path(args.plan).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        print(f"inspector rpc check: cannot read {args.plan}: {exc}", file=sys.stderr)
        return 2
    problems = plan.check()
    for problem in problems:
        print(f"{problem.category}: {problem.message}")
    error = predict_init_error(plan)
    if error is None:
        print(f"OK: init_rpc would accept this plan ({len(plan.names)} workers, {len(problems)} problem(s))")
        return 0
    print(f"REFUSED: init_rpc would raise\n{error.text}")
    return 1
