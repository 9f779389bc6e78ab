"""The ``inspector`` command: ``inspector lab`` and ``inspector explain`` (no Jupyter needed to explain).

Exit codes: 0 success, 1 the decision is an error (e.g. a selected row cannot handle the call),
2 bad usage (unknown family, malformed option).
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.verb == "lab":
        return _lab(args)
    return _explain(args)


if __name__ == "__main__":
    raise SystemExit(main())
