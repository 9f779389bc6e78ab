"""Calls described by axes alone (the command line, the panel, ``what_if``): their ``SdpaCall`` facts.

A described call is contiguous tensors of the described shapes, on the CPU, on this machine's
GPU, or on any GPU a profile names (``gpu``). Every family axis is checked here, so a value
that PyTorch could not be called with (``enable_gqa='no'``, ``mask_dtype='xyz'``) is refused
with the axis and the values it accepts instead of being read as something else.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

import torch

from inspector.dispatch.torch_sdpa.facts import FACTS, SdpaCall, cuda_facts_on
from inspector.dispatch.torch_sdpa.flags import enabled_backends
from inspector.dispatch.torch_sdpa.gpus import GpuProfile, gpu_profile, parse_enabled, this_gpu
from inspector.dispatch.torch_sdpa.names import FLASH, MATH

if TYPE_CHECKING:
    from inspector.dispatch.context import CallContext

# Family-specific axes a described call may set in ``extra``, with their defaults.
DESCRIBED_AXES: dict[str, Any] = {
    "batch": 2,
    "heads": 8,
    "kv_heads": None,
    "seq_len": 128,
    "kv_len": None,
    "value_head_dim": None,
    "dropout_p": 0.0,
    "enable_gqa": False,
    "requires_grad": None,
    "mask_dtype": "bool",
    "mask_shape": "2d",
    "gpu": None,
    "cudnn": None,
    "enabled": None,
}
MASK_SHAPES = ("2d", "4d", "broadcast", "3d")
MASK_DTYPE_NAMES = ("bool", "float16", "bfloat16", "float32", "float64")


def _flag(name: str, value: Any, *, none_ok: bool = False) -> bool | None:
    if isinstance(value, bool) or (none_ok and value is None):
        return value
    accepted = "true, false or none (follow autograd)" if none_ok else "true or false"
    raise ValueError(f"torch_sdpa axis {name}={value!r}: give {accepted}")


def mask_dtype_of(value: Any) -> torch.dtype:
    """A real dtype from ``torch.float16`` or its name (``"float16"``, ``"torch.bool"``)."""
    if isinstance(value, torch.dtype):
        return value
    if isinstance(value, str):
        name = value.strip()
        name = name[6:] if name.startswith("torch.") else name
        found = getattr(torch, name, None) if name.isidentifier() else None
        if isinstance(found, torch.dtype):
            return found
    raise ValueError(f"torch_sdpa axis mask_dtype={value!r}: give a dtype name such as {', '.join(MASK_DTYPE_NAMES)}")


def _size(name: str, value: Any) -> int:
    """A described dimension: a whole number >= 0 (``ndim`` and ``head_dim`` >= 1)."""
    least = 1 if name in ("ndim", "head_dim") else 0
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"torch_sdpa axis {name}={value!r}: give a whole number >= {least}")
    return value


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _numel(shape: tuple[int, ...]) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


def _mask_shape(kind: Any, batch: int, heads: int, seq_len: int, kv_len: int) -> tuple[int, ...]:
    if isinstance(kind, tuple) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in kind):
        return kind
    shapes = {
        "2d": (seq_len, kv_len),
        "4d": (batch, heads, seq_len, kv_len),
        "broadcast": (1, 1, seq_len, kv_len),
        "3d": (heads, seq_len, kv_len),
    }
    if kind not in shapes:
        raise ValueError(f"torch_sdpa axis mask_shape={kind!r}: give one of {', '.join(MASK_SHAPES)}")
    return shapes[kind]


def gpu_of(values: dict[str, Any]) -> GpuProfile | None:
    """The GPU a described call names (``gpu``, with ``cudnn`` applied), if any."""
    gpu, cudnn = values["gpu"], values["cudnn"]
    if isinstance(cudnn, float):
        raise ValueError(
            f"torch_sdpa axis cudnn={cudnn!r}: write the version as text ('9.15.1') or as PyTorch reports it (91501)"
        )
    try:
        if gpu is None:
            return None if cudnn is None else this_gpu().with_options(cudnn=cudnn)
        return gpu_profile(gpu, cudnn=cudnn)
    except TypeError as exc:
        raise ValueError(f"torch_sdpa axis gpu: {exc}") from None


def enabled_of(value: Any, device: str, profile: GpuProfile | None) -> frozenset[str]:
    """The backends the described call's flags allow: ``enabled`` if given, else the profile's, else the flags now."""
    if value is not None:
        try:
            chosen = parse_enabled(value)
        except ValueError as exc:
            raise ValueError(f"torch_sdpa axis {exc}") from None
        return chosen & {FLASH, MATH} if device == "cpu" else chosen
    if profile is not None and profile.enabled is not None:
        return profile.enabled
    return enabled_backends(device)


def facts_from_axes(ctx: CallContext) -> SdpaCall:
    """Facts for a call described by axes alone: contiguous tensors of the described shapes.

    ``extra`` may set ``batch``, ``heads``, ``kv_heads``, ``seq_len``, ``kv_len``,
    ``value_head_dim``, ``dropout_p``, ``enable_gqa``, ``requires_grad``, ``mask_dtype``,
    ``mask_shape`` and, for a CUDA call, ``gpu``, ``cudnn`` and ``enabled``; unset ones take
    ``DESCRIBED_AXES``' defaults (inputs require grad when autograd is on). ``gpu`` makes the
    call a CUDA call on that GPU; a CUDA call without it is on this machine's GPU.
    """
    extra = ctx.extra
    unknown = sorted(set(extra) - set(DESCRIBED_AXES) - {FACTS, "device"})
    if unknown:
        near = difflib.get_close_matches(unknown[0], list(DESCRIBED_AXES), n=1)
        hint = f" Did you mean {near[0]!r}?" if near else ""
        raise ValueError(f"torch_sdpa has no axis {unknown[0]!r}.{hint} Axes in extra: {sorted(DESCRIBED_AXES)}")
    values = {name: extra.get(name, default) for name, default in DESCRIBED_AXES.items()}
    head_dim = _size("head_dim", ctx.head_dim if ctx.head_dim is not None else 64)
    heads = _size("heads", values["heads"])
    kv_heads = _size("kv_heads", values["kv_heads"] if values["kv_heads"] is not None else heads)
    seq_len = _size("seq_len", values["seq_len"])
    kv_len = _size("kv_len", values["kv_len"] if values["kv_len"] is not None else seq_len)
    value_head_dim = _size(
        "value_head_dim", values["value_head_dim"] if values["value_head_dim"] is not None else head_dim
    )
    batch = _size("batch", values["batch"])
    ndim = _size("ndim", ctx.ndim if ctx.ndim is not None else 4)
    dropout_p = values["dropout_p"]
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"torch_sdpa axis dropout_p={dropout_p!r}: give a probability between 0 and 1")
    enable_gqa = bool(_flag("enable_gqa", values["enable_gqa"]))
    wants_grad = _flag("requires_grad", values["requires_grad"], none_ok=True)
    mask_dtype = mask_dtype_of(values["mask_dtype"])
    mask_shape = _mask_shape(values["mask_shape"], batch, heads, seq_len, kv_len)
    profile = gpu_of(values)

    def shape(n_heads: int, length: int, last: int) -> tuple[int, ...]:
        full = (batch, n_heads, length, last)
        return full[4 - ndim :] if ndim <= 4 else (1,) * (ndim - 4) + full

    shapes = (
        shape(heads, seq_len, head_dim),
        shape(kv_heads, kv_len, head_dim),
        shape(kv_heads, kv_len, value_head_dim),
    )
    strides = tuple(_contiguous_strides(s) for s in shapes)
    dtype = ctx.dtype if ctx.dtype is not None else torch.float32
    device = "cuda" if ctx.device_cuda or profile is not None else "cpu"
    requires_grad = bool(ctx.grad_enabled if wants_grad is None else wants_grad)
    cuda = None
    if device == "cuda":
        if profile is None:
            if not torch.cuda.is_available():
                raise ValueError(
                    "A CUDA call was described but this machine has no CUDA device: name the GPU to plan for "
                    "(--gpu h100, or extra gpu='h100'); presets: t4, a100, a10, a6000, 3090, l4, 4090, h100, h200, b200"
                )
            profile = this_gpu()
        size = torch.empty((), dtype=dtype).element_size()
        cuda = cuda_facts_on(profile, (0, 0, 0), tuple(_numel(s) for s in shapes), size)
    enabled = enabled_of(values["enabled"], device, profile)
    described = tuple(sorted(((k, v) for k, v in extra.items() if k not in (FACTS, "device")), key=lambda kv: kv[0]))
    return SdpaCall(
        device,
        shapes,
        strides,  # type: ignore[arg-type]
        (dtype, dtype, dtype),
        False,
        requires_grad,
        float(dropout_p),
        bool(ctx.causal),
        enable_gqa,
        None,
        mask_shape if ctx.has_mask else None,
        mask_dtype if ctx.has_mask else None,
        False,
        1 if ctx.has_mask else None,
        enabled,
        cuda,
        True,
        all(len(s) == 4 for s in shapes),
        described,
    )


def axes_of(ctx: CallContext) -> tuple[Any, ...]:
    """The standard axes facts are derived from: a context whose axes moved needs new facts."""
    return (ctx.dtype, ctx.device_cuda, ctx.ndim, ctx.head_dim, ctx.has_mask, ctx.causal)


def facts_axes(facts: SdpaCall) -> tuple[Any, ...]:
    q = facts.shapes[0]
    return (
        facts.dtypes[0],
        facts.device == "cuda",
        len(q),
        q[-1] if q else None,
        facts.mask_shape is not None,
        facts.is_causal,
    )


def complete(ctx: CallContext) -> CallContext:
    """``ctx`` with facts that match its axes: its own when they do, described ones otherwise."""
    facts = ctx.extra.get(FACTS)
    extra = {k: v for k, v in ctx.extra.items() if k not in (FACTS, "device")}
    if (
        facts is not None
        and facts_axes(facts) == axes_of(ctx)
        and facts.described == tuple(sorted(extra.items(), key=lambda kv: kv[0]))
    ):
        return ctx
    facts = facts_from_axes(ctx._replace(extra=extra))
    return ctx._replace(device_cuda=facts.device == "cuda", extra={**extra, "device": facts.device, FACTS: facts})
