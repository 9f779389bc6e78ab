"""``inspector report OUT.html``: the self-contained HTML report, holding what the app's report can.

Beyond the engine as it is, the report takes what a command line cannot leave in a running app:
a plan and a job's view (``--plan``, ``--job``: the RPC
section), a described call (the flags of ``inspector explain``, the
Dispatch section) and a benchmark measured in another process (``--loader-results``, the Loader
section). Every input is checked before the report is built, so a bad file costs one line and
exit 2, never a half-written report.
"""

from __future__ import annotations

import argparse
from typing import Any

from inspector.cli._common import UsageError, add_import_option, check_output_path, import_modules
from inspector.cli._explain import add_context_options, context_flags_given


def add_parser(verbs: Any) -> None:
    report = verbs.add_parser(
        "report",
        help="write a self-contained HTML report of the engine's state",
        description="Write one self-contained HTML file (no network, images inline): the environment, then "
        "every engine part's page. Options add what only you can give: a plan, the call to "
        "explain, a loader benchmark measured earlier.",
    )
    report.add_argument("out", metavar="OUT.html", help="the file to write; its folder must exist")
    report.add_argument(
        "--plan",
        metavar="PLAN.json",
        default=None,
        help="the RPC section checks this plan (written by the RPC tab or TopologyPlan.to_json)",
    )
    report.add_argument(
        "--job",
        metavar="JOB.json",
        default=None,
        help="the RPC section shows this job's view: every rank's SDPA backends, loader and "
        "environment, as rank 0 saved them (JobView.save after inspector.rpc.gather)",
    )
    report.add_argument(
        "--loader-results",
        metavar="FILE",
        default=None,
        help="the Loader section shows these results: the CSV of `inspector bench loader --out "
        "FILE`, or the history `inspector bench loader` keeps (its last runs side by side)",
    )
    context = report.add_argument_group(
        "context",
        "the call the Dispatch section explains, with the flags of `inspector explain` "
        "(--family, then any of --dtype, --head-dim, --causal, ...)",
    )
    add_context_options(context, family_option=True)
    add_import_option(report)


def run(args: argparse.Namespace) -> int:
    from inspector._extras import require_extra

    out = check_output_path(args.out, "OUT.html", "report.html")  # before any work, so nothing is wasted
    given = context_flags_given(args)
    if given and args.family is None:
        raise UsageError(f"{given[0]} describes a call to an op family: add --family, e.g. --family attention")
    require_extra("ui", "inspector report")
    states = _file_states(args)  # files before imports: a typo in a path costs nothing

    import_modules(args.imports)  # the user's families and backends first
    call = _checked_call(args) if args.family is not None else None  # the engine alone: a typo fails fast
    from inspector.demos import load_demos
    from inspector.report import build_report, write_report

    load_demos(None)  # the demos only where the user registered nothing of their own
    if call is not None:
        states["dispatch"] = _dispatch_state(call)
    text = build_report(states)
    try:
        path = write_report(out, text)
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    print(f"wrote {path}")
    return 0


def _file_states(args: argparse.Namespace) -> dict[str, Any]:
    """The RPC and Loader states the files given describe (each read and checked in full)."""
    states: dict[str, Any] = {}
    if args.plan is not None or args.job is not None:
        from inspector.cli._rpc import read_job_view, read_plan
        from inspector.views.rpc import LAST_GATHER, current_state

        plan = None if args.plan is None else read_plan(args.plan, "--plan ")
        job = LAST_GATHER if args.job is None else read_job_view(args.job, "--job ")
        states["rpc"] = current_state(plan, job)
    if args.loader_results is not None:
        from inspector.cli._loader_results import read_loader_results

        results = read_loader_results(args.loader_results)  # before the view's imports: a bad file fails fast
        from inspector.views.loader import LoaderState

        states["loader"] = LoaderState(results.rows, history=results.history, history_note=results.note)
    return states


def _checked_call(args: argparse.Namespace) -> Any:
    """The described call, refused as ``inspector explain`` refuses it (NOTE [ One described call ])."""
    from inspector.cli._explain import checked_trace, described_call

    ctx = described_call(args)
    checked_trace(ctx)
    return ctx


def _dispatch_state(ctx: Any) -> Any:
    """The Dispatch page for the described call, with what a report shows by default (every what-if grid)."""
    from inspector.report import DEFAULT_STATE_OPTIONS
    from inspector.views.dispatch import current_state

    return current_state(ctx.family, ctx, **DEFAULT_STATE_OPTIONS.get("dispatch", {}))
