"""``inspector explain``: a family's decision for a described call, as text or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from inspector.cli._common import jsonable

DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64")


def add_parser(verbs: Any) -> None:
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


def run(args: argparse.Namespace) -> int:
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
        payload = jsonable(result)
        payload["context"] = {k: jsonable(v) for k, v in ctx._asdict().items() if k not in ("raw", "raw_kwargs")}
        print(json.dumps(payload, indent=2))
    else:
        print(result.explain())
    return 0 if result.ok else 1
