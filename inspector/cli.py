"""The ``inspector`` command: lab, explain, bench, rpc check and report.

Exit codes scripts can use: 0 success; 1 the answer is "no" (``explain``: the decision is an
error; ``rpc check``: torch would refuse the plan; ``bench``: a target was missed); 2 bad usage
(unknown family, unreadable file, malformed option). Only ``lab`` and ``report`` need Jupyter's
libraries; ``explain`` and ``rpc check`` run in a bare training environment.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inspector", description=__doc__.split("\n")[0] if __doc__ else None)
    verbs = parser.add_subparsers(dest="verb", required=True)

    lab = verbs.add_parser("lab", help="open JupyterLab on the tour notebook")
    lab.add_argument("--port", type=int, default=None, help="port for JupyterLab (default: its own choice)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser window")
    lab.add_argument("--notebooks", default="notebooks", help="folder holding 00_tour.ipynb")

    explain = verbs.add_parser("explain", help="print a family's decision for a described call")
    explain.add_argument("family", help="op family, e.g. attention or rotary")
    explain.add_argument("--dtype", choices=DTYPE_NAMES, default="float32")
    explain.add_argument("--head-dim", type=int, default=None)
    explain.add_argument("--ndim", type=int, default=4)
    explain.add_argument("--fwd", choices=("prefill", "decode"), default=None,
                         help="inference mode (default: training)")
    explain.add_argument("--cuda", action="store_true", help="the call's tensors are on a CUDA device")
    explain.add_argument("--mask", action="store_true", help="the call passes a mask")
    explain.add_argument("--cache", action="store_true", help="the call uses a KV cache")
    explain.add_argument("--no-grad", action="store_true", help="autograd is off")
    explain.add_argument("--extra", action="append", default=[], metavar="NAME=VALUE", help="family-specific axis")
    explain.add_argument("--select", default=None, metavar="ROW", help="explicit (strict) selection")
    explain.add_argument("--json", action="store_true", help="print the structured trace as JSON")

    bench = verbs.add_parser("bench", help="measure an engine part against its baselines in one run")
    bench.add_argument("part", choices=("loader", "dispatch", "rpc"))
    bench.add_argument("--out", metavar="CSV", help="also write every measured row to this CSV file")
    bench.add_argument("--plot", metavar="PNG", help="also draw the results into this PNG file")
    bench.add_argument("--sizes", default="1,16,64", help="loader: payload sizes in MiB (default 1,16,64)")
    bench.add_argument("--workers", default="2", help="loader: worker counts (default 2)")
    bench.add_argument("--layouts", default="steps,columnar", help="loader: steps and/or columnar")
    bench.add_argument("--repeats", type=int, default=3, help="loader: repeats per cell (default 3)")
    bench.add_argument("--device", default=None, help="loader: deliver to this device, e.g. cuda")

    rpc = verbs.add_parser("rpc", help="RPC device-map tools")
    rpc_verbs = rpc.add_subparsers(dest="rpc_verb", required=True)
    check = rpc_verbs.add_parser("check", help="check a plan JSON file as init_rpc would (exit 1 if refused)")
    check.add_argument("plan", metavar="PLAN.json", help="a plan written by TopologyPlan.to_json or the RPC tab")

    report = verbs.add_parser("report", help="write a self-contained HTML report of the engine's state")
    report.add_argument("out", metavar="OUT.html")
    return parser


def _lab(args: argparse.Namespace) -> int:
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


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    from inspector.dispatch.context import format_value

    return format_value(value)


def _explain(args: argparse.Namespace) -> int:
    import torch

    import inspector.examples  # noqa: F401
    from inspector.dispatch import CallContext, UnknownFamilyError, trace
    from inspector.dispatch.context import parse_extra

    try:
        extra = parse_extra(",".join(args.extra))
        ctx = CallContext(
            args.family, args.fwd, getattr(torch, args.dtype), args.cuda, args.ndim, args.head_dim, args.cache,
            args.mask, not args.no_grad,
        ).evolve(extra=extra)
        result = trace(args.family, ctx, explicit=args.select)
    except (UnknownFamilyError, ValueError) as exc:
        print(f"inspector explain: {exc}", file=sys.stderr)
        return 2
    if args.json:
        payload = _jsonable(result)
        payload["context"] = {k: _jsonable(v) for k, v in ctx._asdict().items() if k not in ("raw", "raw_kwargs")}
        print(json.dumps(payload, indent=2))
    else:
        print(result.explain())
    return 0 if result.ok else 1


def _progress_bar(done: int, total: int, message: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    end = "\n" if done >= total else ""
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {message[:60]:<60}{end}")
    sys.stderr.flush()


def _numbers(text: str, kind: type) -> list[Any]:
    try:
        return [kind(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise ValueError(f"expected comma-separated {kind.__name__}s, got {text!r}") from None


def _bench(args: argparse.Namespace) -> int:
    try:
        rows, measurements = _run_bench(args)
    except ValueError as exc:
        print(f"inspector bench: {exc}", file=sys.stderr)
        return 2
    if args.out:
        import csv

        with open(args.out, "w", newline="", encoding="utf-8") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if args.plot:
        from inspector.views._figures import figure_to_png

        Path(args.plot).write_bytes(figure_to_png(_bench_figure(args.part, rows)))
    for measurement in measurements:
        print(measurement.line())
    return 0 if all(m.ok for m in measurements) else 1


def _run_bench(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[Any]]:
    if args.part == "dispatch":
        import inspector.examples  # noqa: F401
        from inspector.dispatch.bench import hot_path

        measurements = hot_path("attention", progress=_progress_bar)
        return [m.as_dict() for m in measurements], measurements
    if args.part == "rpc":
        from inspector.rpc.bench import measure

        measurements = measure(progress=_progress_bar)
        return [m.as_dict() for m in measurements], measurements
    from inspector.loader.bench import run
    from inspector.loader.targets import throughput_targets

    bench_rows = run(sizes_mb=_numbers(args.sizes, float), workers=_numbers(args.workers, int),
                     layouts=[x.strip() for x in args.layouts.split(",") if x.strip()], repeats=args.repeats,
                     device=args.device, progress=_progress_bar)
    return [row.as_dict() for row in bench_rows], throughput_targets(bench_rows)


def _bench_figure(part: str, rows: list[dict[str, Any]]) -> Any:
    if part == "loader":
        from inspector.views.loader import throughput_by_size_figure

        return throughput_by_size_figure(rows)
    from inspector.views.bench import measurements_figure

    return measurements_figure(rows, title=f"inspector bench {part}")


def _rpc_check(args: argparse.Namespace) -> int:
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


def _report(args: argparse.Namespace) -> int:
    import inspector.examples  # noqa: F401
    from inspector.report import to_html

    path = to_html(args.out)
    print(f"wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handlers = {"lab": _lab, "explain": _explain, "bench": _bench, "rpc": _rpc_check, "report": _report}
    return handlers[args.verb](args)


if __name__ == "__main__":
    raise SystemExit(main())
