"""``inspector explain``: a family's decision for a described call, as text or JSON."""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from inspector.cli._common import UsageError, jsonable

# Names and the aliases researchers type, to torch dtype attribute names.
DTYPE_ALIASES = {
    "float32": "float32", "fp32": "float32", "float": "float32", "f32": "float32",
    "float16": "float16", "fp16": "float16", "half": "float16", "f16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float64": "float64", "fp64": "float64", "double": "float64", "f64": "float64",
}
DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64")


def dtype_name(text: str) -> str:
    """argparse type for ``--dtype``: a dtype name or alias (``bf16``, ``fp16``, ``fp32``...)."""
    name = DTYPE_ALIASES.get(text.strip().lower())
    if name is None:
        raise argparse.ArgumentTypeError(f"unknown dtype {text!r}; use one of {', '.join(DTYPE_ALIASES)}")
    return name


def add_parser(verbs: Any) -> None:
    explain = verbs.add_parser("explain", help="print a family's decision for a described call")
    explain.add_argument("family", help="op family, e.g. torch_sdpa, attention or rotary")
    explain.add_argument("--dtype", type=dtype_name, default="float32", metavar="DTYPE",
                         help="float32 (fp32), float16 (fp16, half), bfloat16 (bf16) or float64 (fp64)")
    explain.add_argument("--head-dim", type=int, default=None)
    explain.add_argument("--ndim", type=int, default=4)
    explain.add_argument("--fwd", choices=("prefill", "decode"), default=None,
                         help="inference mode (default: training)")
    explain.add_argument("--cuda", action="store_true", help="the call's tensors are on a CUDA device")
    explain.add_argument("--mask", action="store_true", help="the call passes an explicit mask tensor")
    explain.add_argument("--causal", action="store_true", help="the call is causal (is_causal=True, no mask tensor)")
    explain.add_argument("--cache", action="store_true", help="the call uses a KV cache")
    explain.add_argument("--no-grad", action="store_true", help="autograd is off")
    explain.add_argument("--extra", action="append", default=[], metavar="NAME=VALUE", help="family-specific axis")
    explain.add_argument("--select", default=None, metavar="ROW", help="explicit (strict) selection")
    explain.add_argument("--json", action="store_true", help="print the structured trace as JSON")
    add_import_option(explain)


def add_import_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                        help="import this module first (your own families and backends); repeatable")


def import_modules(modules: Sequence[str]) -> None:
    """Import the user's modules (``--import``) so their families and backends are registered."""
    sys.path.insert(0, "")  # as ``python -m`` does: modules in the current directory are found
    for name in modules:
        try:
            importlib.import_module(name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a module that exits or fails at import is bad input here
            raise UsageError(f"--import {name}: {type(exc).__name__}: {exc}") from None


def closest(word: str, choices: Sequence[str]) -> str:
    """`` Did you mean 'x'?`` for the nearest choice, or nothing."""
    prefixed = [c for c in choices if c.startswith(word)] if word else []
    found = prefixed[:1] or difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" Did you mean {found[0]!r}?" if found else ""


def _family_known(family: str) -> bool:
    from inspector.dispatch import families

    return family in families()


def resolve_family(family: str) -> None:
    """Make ``family`` available: PyTorch's own, the user's (``--import``, plugins) or a demo."""
    from inspector.dispatch.torch_sdpa import ensure_registered

    ensure_registered()  # PyTorch's own family is always there
    if _family_known(family):
        return
    from inspector.examples import register_all

    register_all()  # demos only under free names: never over a family the user registered
    from inspector.dispatch import families

    known = families()
    if family not in known:
        raise UsageError(f"no op family {family!r}.{closest(family, known)} Known: {', '.join(known)}")


def run(args: argparse.Namespace) -> int:
    import torch

    from inspector.dispatch import CallContext, get_family, trace
    from inspector.dispatch.context import parse_extra

    import_modules(args.imports)
    resolve_family(args.family)
    try:
        extra = parse_extra(",".join(args.extra))
    except ValueError as exc:
        raise UsageError(f"--extra: {exc}") from None
    ctx = CallContext(
        args.family, args.fwd, getattr(torch, args.dtype), args.cuda, args.ndim, args.head_dim, args.cache,
        args.mask, not args.no_grad, args.causal,
    ).evolve(extra=extra)
    if args.select is not None:
        names = _row_names(args.family)
        if args.select not in names:
            raise UsageError(
                f"--select {args.select}: {args.family} has no row {args.select!r}.{closest(args.select, names)} "
                f"Rows: {', '.join(names)}"
            )
    try:
        result = trace(args.family, ctx, explicit=args.select)
    except ValueError as exc:  # a family refusing the described call (e.g. torch_sdpa --cuda without a GPU)
        raise UsageError(str(exc).splitlines()[0]) from None
    _refuse_ill_typed_extras(result, extra, get_family(args.family).name)
    if args.json:
        payload = jsonable(result)
        payload["context"] = {
            k: jsonable(v) for k, v in result.context._asdict().items() if k not in ("raw", "raw_kwargs")
        }
        print(json.dumps(payload, indent=2))
    else:
        print(result.explain())
    return 0 if result.ok else 1


def _row_names(family: str) -> list[str]:
    from inspector.dispatch.registry import plan_for

    return plan_for(family).names


def _refuse_ill_typed_extras(result: Any, extra: dict[str, Any], family: str) -> None:
    """An ``--extra`` value a row's clause cannot even compare is the user's typo, not a verdict."""
    for row in result.rows:
        for check in row.failing:
            if check.error and check.axis in extra:
                raise UsageError(
                    f"--extra {check.axis}={extra[check.axis]}: the {family} row {row.name!r} checks "
                    f"{check.clause} and could not compare it ({check.error}); give a value of the right type"
                )
