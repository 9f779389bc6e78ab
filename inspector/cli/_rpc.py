"""``inspector rpc check PLAN.json [--strict]``: every problem and warning of a plan, and what ``init_rpc`` would say.

Exit 0: torch would accept the plan (warnings are printed); 1: torch would refuse it, or
``--strict`` and there are warnings; 2: the file cannot be read as a plan (one line on stderr:
a missing file, a FIFO or directory, bad JSON, non-finite numbers, absurd device counts).
"""

from __future__ import annotations

import argparse
from typing import Any

from inspector.cli._common import UsageError


def add_parser(verbs: Any) -> None:
    rpc = verbs.add_parser("rpc", help="RPC device-map tools")
    rpc_verbs = rpc.add_subparsers(dest="rpc_verb", required=True)
    check = rpc_verbs.add_parser(
        "check", help="check a plan JSON file as init_rpc would (exit 1 if refused, or warned with --strict)"
    )
    check.add_argument("plan", metavar="PLAN.json", help="a plan written by TopologyPlan.to_json or the RPC tab")
    check.add_argument(
        "--strict", action="store_true", help="treat pre-flight warnings (mistakes torch accepts) as a refusal"
    )


def read_plan(path: str, option: str = "") -> Any:
    """The plan in ``path``, or a :class:`UsageError` saying why it cannot be one (``option``: how it was given)."""
    from inspector.rpc import PlanError, RpcError, TopologyPlan

    where = f"{option}{path}"
    try:
        return TopologyPlan.from_file(path)
    except PlanError as exc:
        raise UsageError(f"cannot read {where}: {exc.one_line}") from exc
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc.strerror or exc}") from exc
    except (RpcError, ValueError, TypeError) as exc:
        raise UsageError(f"cannot read {where}: {str(exc).partition(chr(10))[0]}") from exc


def read_job_view(path: str, option: str = "") -> Any:
    """The job view in ``path`` (written by ``JobView.save``), or a :class:`UsageError` saying why it is not one."""
    from inspector.rpc import JobView, JobViewError

    try:
        return JobView.load(path)
    except OSError as exc:
        raise UsageError(f"cannot read {option}{path}: {exc.strerror or exc}") from exc
    except JobViewError as exc:
        raise UsageError(f"cannot read {option}{path}: {str(exc).partition(chr(10))[0]}") from exc


def run(args: argparse.Namespace) -> int:
    from inspector.rpc import predict_init_error

    plan = read_plan(args.plan)
    problems, warnings = plan.check(), plan.preflight()
    for problem in problems:
        print(f"{problem.category}: {problem.message}")
    for warning in warnings:
        target = f" -> {warning.target}" if warning.target else ""
        print(f"WARNING {warning.kind} ({warning.worker}{target}): {warning.message}")
    error = predict_init_error(plan)
    counts = f"{len(plan.names)} workers, {len(problems)} problem(s), {len(warnings)} warning(s)"
    if error is not None:
        print(f"REFUSED: init_rpc would raise ({counts})\n{error.text}")
        return 1
    if warnings and args.strict:
        print(f"STRICT: init_rpc would accept this plan, but --strict refuses its warnings ({counts})")
        return 1
    print(f"OK: init_rpc would accept this plan ({counts})")
    return 0
