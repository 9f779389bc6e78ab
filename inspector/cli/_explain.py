"""``inspector explain``: a family's decision for a described call, as text or JSON."""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Sequence
from typing import Any

from inspector.cli._common import UsageError, add_import_option, import_modules, jsonable

# Names and the aliases researchers type, to torch dtype attribute names.
DTYPE_ALIASES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "f32": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "f16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float64": "float64",
    "fp64": "float64",
    "double": "float64",
    "f64": "float64",
}


def dtype_name(text: str) -> str:
    """argparse type for ``--dtype``: a dtype name or alias (``bf16``, ``fp16``, ``fp32``...)."""
    name = DTYPE_ALIASES.get(text.strip().lower())
    if name is None:
        raise argparse.ArgumentTypeError(f"unknown dtype {text!r}; use one of {', '.join(DTYPE_ALIASES)}")
    return name


def positive_seconds(text: str) -> float:
    """argparse type for a time budget: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type for sizes and ranks: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


# NOTE [ One described call ]
# ``inspector explain`` and ``inspector report`` describe a call with the same flags, read the same
# way: the options are defined once (``CONTEXT_OPTIONS``), turned into a ``CallContext`` once
# (``described_call``) and traced once (``checked_trace``), so the report's Dispatch section shows
# exactly what ``inspector explain`` prints for the same flags, and a typo is refused the same way.
CONTEXT_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--dtype",
        {
            "type": dtype_name,
            "default": "float32",
            "metavar": "DTYPE",
            "help": "float32 (fp32), float16 (fp16, half), bfloat16 (bf16) or float64 (fp64)",
        },
    ),
    (
        "--head-dim",
        {"type": positive_int, "default": None, "help": "the last dimension of the query (attention heads)"},
    ),
    ("--ndim", {"type": positive_int, "default": 4, "help": "the inputs' number of dimensions (default 4)"}),
    ("--fwd", {"choices": ("prefill", "decode"), "default": None, "help": "inference mode (default: training)"}),
    (
        "--cuda",
        {"action": "store_true", "help": "the call's tensors are on a CUDA device (this machine's GPU, or --gpu)"},
    ),
    (
        "--gpu",
        {
            "default": None,
            "metavar": "GPU",
            "help": "torch_sdpa: plan the call on this GPU: a preset (t4, a100, a10, a6000, 3090, l4, 4090, "
            "h100, h200, b200) or a compute capability (sm90, 8.6); implies --cuda",
        },
    ),
    (
        "--cudnn",
        {
            "default": None,
            "metavar": "VERSION",
            "help": "torch_sdpa: the cuDNN version PyTorch runs with (9.15.1 or 91501)",
        },
    ),
    ("--mask", {"action": "store_true", "help": "the call passes an explicit mask tensor"}),
    ("--causal", {"action": "store_true", "help": "the call is causal (is_causal=True, no mask tensor)"}),
    ("--cache", {"action": "store_true", "help": "the call uses a KV cache"}),
    ("--no-grad", {"action": "store_true", "help": "autograd is off"}),
    (
        "--extra",
        {
            "action": "append",
            "default": [],
            "metavar": "NAME=VALUE",
            "help": "family-specific axis, e.g. kv_len=4096; repeatable",
        },
    ),
)
FAMILY_HELP = "op family, e.g. torch_sdpa, attention or rotary"


def add_context_options(parser: Any, *, family_option: bool = False) -> None:
    """The flags that describe a call (NOTE [ One described call ]); the family is a positional
    argument (``explain``) or ``--family`` (``report``, where describing a call is optional)."""
    if family_option:
        parser.add_argument("--family", default=None, help=f"{FAMILY_HELP}: the call the Dispatch section explains")
    else:
        parser.add_argument("family", help=FAMILY_HELP)
    for flag, options in CONTEXT_OPTIONS:
        parser.add_argument(flag, **options)


def context_flags_given(args: argparse.Namespace) -> list[str]:
    """The context flags ``args`` sets away from their defaults (``--family`` aside)."""
    given = []
    for flag, options in CONTEXT_OPTIONS:
        default = False if options.get("action") == "store_true" else options.get("default")
        if getattr(args, flag.lstrip("-").replace("-", "_")) != default:
            given.append(flag)
    return given


def add_parser(verbs: Any) -> None:
    explain = verbs.add_parser("explain", help="print a family's decision for a described call")
    add_context_options(explain)
    explain.add_argument("--select", default=None, metavar="ROW", help="explicit (strict) selection")
    explain.add_argument("--json", action="store_true", help="print the structured trace as JSON")
    explain.add_argument(
        "--time",
        action="store_true",
        help="torch_sdpa: also run every backend that can serve the call on this machine and time it "
        "(forward, and backward when grad is on)",
    )
    explain.add_argument(
        "--budget",
        type=positive_seconds,
        default=0.5,
        metavar="SECONDS",
        help="with --time: seconds for every backend's warm-up and timed runs together (default 0.5)",
    )
    add_import_option(explain)


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
    from inspector.demos import load_demos

    load_demos(True)  # demos only under free names: never over a family the user registered
    from inspector.dispatch import families

    known = families()
    if family not in known:
        raise UsageError(f"no op family {family!r}.{closest(family, known)} Known: {', '.join(known)}")


def described_call(args: argparse.Namespace) -> Any:
    """The ``CallContext`` the flags describe (the family made available first; see NOTE [ One described call ])."""
    import torch

    from inspector.dispatch import CallContext
    from inspector.dispatch.context import parse_extra

    resolve_family(args.family)
    for item in args.extra:
        name, sep, value = item.partition("=")
        if sep and not value.strip():
            raise UsageError(f"--extra {item}: no value after '='; write {name.strip()}=none to mean None")
    try:
        extra = parse_extra(",".join(args.extra))
    except ValueError as exc:
        raise UsageError(f"--extra: {exc}") from None
    _refuse_unread_extras(args.family, extra)
    cuda = args.cuda
    if args.gpu is not None or args.cudnn is not None:
        cuda = True
        extra.update(_gpu_axes(args))
    return CallContext(
        args.family,
        args.fwd,
        getattr(torch, args.dtype),
        cuda,
        args.ndim,
        args.head_dim,
        args.cache,
        args.mask,
        not args.no_grad,
        args.causal,
    ).evolve(extra=extra)


def _gpu_axes(args: argparse.Namespace) -> dict[str, Any]:
    """``--gpu`` and ``--cudnn`` as the axes ``torch_sdpa`` reads (checked here, so a typo is one line)."""
    from inspector.dispatch.torch_sdpa import FAMILY, gpu_profile
    from inspector.dispatch.torch_sdpa.gpus import parse_cudnn

    flag = "--gpu" if args.gpu is not None else "--cudnn"
    if args.family != FAMILY:
        raise UsageError(
            f"{flag} describes PyTorch's SDPA on a GPU: only the {FAMILY} family reads it, not {args.family}"
        )
    axes: dict[str, Any] = {}
    if args.cudnn is not None:
        try:
            axes["cudnn"] = parse_cudnn(args.cudnn)
        except ValueError as exc:
            raise UsageError(f"--cudnn {args.cudnn}: {exc}") from None
    if args.gpu is not None:
        try:
            gpu_profile(args.gpu)
        except ValueError as exc:
            raise UsageError(f"--gpu {args.gpu}: {exc}") from None
        axes["gpu"] = args.gpu
    return axes


def checked_trace(ctx: Any, explicit: str | None = None) -> Any:
    """The family's trace for ``ctx``; a call the family refuses, or an ill-typed ``--extra``, is bad usage."""
    from inspector.dispatch import get_family, trace
    from inspector.dispatch.torch_sdpa import FAMILY
    from inspector.dispatch.torch_sdpa.family import ours, trace_context

    try:
        # PyTorch's own family decides in the order PyTorch uses for the call (NOTE [ Priority orders ]).
        result = (
            trace_context(ctx, explicit)
            if ctx.family == FAMILY and ours()
            else trace(ctx.family, ctx, explicit=explicit)
        )
    except ValueError as exc:  # a family refusing the described call (e.g. torch_sdpa --cuda without a GPU)
        raise UsageError(str(exc).splitlines()[0]) from None
    _refuse_ill_typed_extras(result, dict(ctx.extra), get_family(ctx.family).name)
    return result


def run(args: argparse.Namespace) -> int:
    import_modules(args.imports)
    ctx = described_call(args)
    if args.select is not None:
        names = _row_names(args.family)
        if args.select not in names:
            raise UsageError(
                f"--select {args.select}: {args.family} has no row {args.select!r}.{closest(args.select, names)} "
                f"Rows: {', '.join(names)}"
            )
    result = checked_trace(ctx, args.select)
    comparison = _timed(result, args) if args.time else None
    if args.json:
        payload = jsonable(result)
        payload["context"] = {
            k: jsonable(v) for k, v in result.context._asdict().items() if k not in ("raw", "raw_kwargs")
        }
        if comparison is not None:
            payload["compare"] = {
                "summary": comparison.summary(),
                "pick": comparison.pick,
                "fastest": comparison.fastest,
                "backends": jsonable(comparison.rows()),
            }
        print(json.dumps(payload, indent=2))
    else:
        print(result.explain())
        if comparison is not None:
            print()
            print(comparison)
    return 0 if result.ok else 1


def _timed(result: Any, args: argparse.Namespace) -> Any:
    """``--time``: every backend that can serve the described call, run and timed on this machine."""
    from inspector.dispatch.torch_sdpa import FAMILY
    from inspector.dispatch.torch_sdpa.compare import compare
    from inspector.dispatch.torch_sdpa.inputs import tensors_for

    if args.family != FAMILY:
        raise UsageError(f"--time runs PyTorch's SDPA backends: it describes the {FAMILY} family, not {args.family}")
    from inspector.dispatch.torch_sdpa.compare_limits import refuse_what_cannot_run

    facts = result.context.extra.get("sdpa")
    try:
        # before any tensor is made: a call too big for this machine is refused, not an allocator traceback
        refuse_what_cannot_run(
            facts,
            args.budget,
            facts.requires_grad and not args.no_grad,
            how="smaller --extra seq_len=/kv_len=/batch=/heads= or --head-dim",
        )
        call, options = tensors_for(facts)
    except ValueError as exc:
        message = str(exc).splitlines()[0]
        if "drop the timing" in message:
            message = message.replace("drop the timing", "drop --time")
        raise UsageError(f"--time: {message}") from None
    import torch

    with torch.set_grad_enabled(not args.no_grad):
        try:
            return compare(*call, **options, total_s=args.budget)
        except ValueError as exc:
            raise UsageError(f"--time: {str(exc).splitlines()[0]}") from None


def _refuse_unread_extras(family: str, extra: dict[str, Any]) -> None:
    """An ``--extra`` axis that no row of the family reads is a typo, not a described call.

    A family with a completer (``torch_sdpa``) derives what its rows read from named axes and
    checks their names itself."""
    from inspector.dispatch.context import AXES
    from inspector.dispatch.registry import plan_for

    plan = plan_for(family)
    if plan.completer is not None:
        return
    read = sorted({axis for row in plan.by_name.values() for axis in row.spec.axes} - set(AXES))
    for name in extra:
        if name not in read:
            known = ", ".join(read) if read else "none"
            raise UsageError(
                f"--extra {name}: no row of {family} reads an axis {name!r}.{closest(name, read)} "
                f"Extra axes its rows read: {known}"
            )


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
