"""What PyTorch's SDPA dispatch looks at, read once per call: the ``SdpaCall`` facts.

PyTorch decides from the tensors' shapes, strides, dtypes and devices, the call's options, the
autograd state, its global enable flags and (on CUDA) the device's capability and cuDNN. All of
that is gathered here into one immutable ``SdpaCall`` stored in ``CallContext.extra["sdpa"]``,
so the rules in ``cpu_rules``/``cuda_rules`` are pure expressions over plain values, the same
for ``predict`` (short-circuit, hot path) and ``trace_call`` (every clause, with actual values).
A context built from axes alone (the command line, the panel, ``what_if``) gets synthetic facts
from ``facts_from_axes``: contiguous tensors of the described shape.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

import torch
from torch import Tensor

from inspector.dispatch.context import CallContext, format_value

FAMILY = "torch_sdpa"
FACTS = "sdpa"  # the key of ``CallContext.extra`` holding the ``SdpaCall``

# PyTorch's backends by their ``SDPBackend`` names in lower case.
FLASH, EFFICIENT, CUDNN, OVERRIDEABLE, MATH = (
    "flash_attention", "efficient_attention", "cudnn_attention", "overrideable", "math",
)
BACKENDS = (FLASH, EFFICIENT, CUDNN, OVERRIDEABLE, MATH)

_C = torch._C
FLAG_READERS = {
    FLASH: _C._get_flash_sdp_enabled,
    EFFICIENT: _C._get_mem_efficient_sdp_enabled,
    CUDNN: _C._get_cudnn_sdp_enabled,
    OVERRIDEABLE: getattr(_C, "_get_overrideable_sdp_enabled", lambda: False),
    MATH: _C._get_math_sdp_enabled,
}
_read_flash, _read_math = FLAG_READERS[FLASH], FLAG_READERS[MATH]
_CPU_ENABLED = {  # (flash, math) -> the enabled set, built once: the CPU hot path allocates nothing
    (f, m): frozenset(name for name, on in ((FLASH, f), (MATH, m)) if on) for f in (False, True) for m in (False, True)
}


class CudaFacts(NamedTuple):
    """The CUDA device and build facts PyTorch's CUDA rules read (``None`` on other devices)."""

    sm: tuple[int, int]
    cudnn_version: int
    flash_built: bool
    mem_efficient_built: bool
    cudnn_built: bool
    rocm: bool
    deterministic: bool
    deterministic_warn_only: bool
    fa3_enabled: bool
    storage_offset_bytes: tuple[int, int, int]
    numels: tuple[int, int, int]
    element_size: int


class SdpaCall(NamedTuple):
    """One ``scaled_dot_product_attention`` call as PyTorch's dispatch sees it."""

    device: str
    shapes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    strides: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None  # None for nested inputs
    dtypes: tuple[Any, Any, Any]
    nested: bool
    requires_grad: bool  # an input requires grad *and* autograd is on (PyTorch's input_requires_grad)
    dropout_p: float
    is_causal: bool
    enable_gqa: bool
    scale: float | None
    mask_shape: tuple[int, ...] | None
    mask_dtype: Any
    mask_requires_grad: bool
    mask_last_stride: int | None
    enabled: frozenset[str]
    cuda: CudaFacts | None = None
    synthetic: bool = False
    dense4d: bool = False  # dense (not nested) inputs, all three 4-D: what most checks assume

    def __str__(self) -> str:
        """``q(2, 8, 128, 64) k(...) v(...) float32 cpu`` plus whatever departs from the defaults."""
        q, k, v = (tuple(s) for s in self.shapes)
        dtypes = {format_value(d) for d in self.dtypes}
        parts = [f"q{q} k{k} v{v}", "/".join(sorted(dtypes)), self.device]
        if self.nested:
            parts.append("nested")
        if self.dropout_p:
            parts.append(f"dropout_p={self.dropout_p:g}")
        if self.enable_gqa:
            parts.append("enable_gqa")
        if self.mask_shape is not None:
            parts.append(f"mask{tuple(self.mask_shape)} {format_value(self.mask_dtype)}")
        if self.requires_grad:
            parts.append("requires_grad")
        if self.synthetic:
            parts.append("(described, not measured)")
        return " ".join(parts)


def enabled_backends(device: str) -> frozenset[str]:
    """The backends PyTorch's flags allow now (``sdpa_kernel`` blocks change them, process-wide)."""
    if device == "cpu":
        return _CPU_ENABLED[(bool(_read_flash()), bool(_read_math()))]
    return frozenset(name for name, read in FLAG_READERS.items() if read())


@functools.lru_cache(maxsize=16)
def _cuda_build(index: int) -> tuple[tuple[int, int], int, bool, bool, bool, bool]:
    sm = tuple(torch.cuda.get_device_capability(index))
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else 0
    flash = bool(getattr(torch.backends.cuda, "is_flash_attention_available", lambda: True)())
    return (sm[0], sm[1]), int(cudnn or 0), flash, True, bool(cudnn), torch.version.hip is not None


def cuda_facts(query: Any, key: Any, value: Any) -> CudaFacts:
    """Device capability, cuDNN, build and determinism facts for a CUDA call."""
    index = query.device.index if query.device.index is not None else torch.cuda.current_device()
    sm, cudnn, flash, mem_efficient, cudnn_built, rocm = _cuda_build(index)
    tensors = (query, key, value)
    size = query.element_size()
    return CudaFacts(
        sm, cudnn, flash, mem_efficient, cudnn_built, rocm,
        torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
        bool(getattr(_C, "_get_fa3_sdp_enabled", lambda: False)()),
        tuple(0 if t.is_nested else t.storage_offset() * t.element_size() for t in tensors),  # type: ignore[arg-type]
        tuple(t.numel() for t in tensors),
        size,
    )


def dispatch_device(query: Any, key: Any, value: Any) -> str:
    """The device whose kernel PyTorch's dispatcher picks for the call: the tensors' common
    device; with mixed devices CUDA's if any is on CUDA, the meta kernel's if any is on meta."""
    if query.is_cpu and key.is_cpu and value.is_cpu:
        return "cpu"
    types = {str(t.device.type) for t in (query, key, value)}
    if len(types) == 1:
        return types.pop()
    for preferred in ("cuda", "meta"):
        if preferred in types:
            return preferred
    return str(query.device.type)


def facts_from_call(
    query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
    scale: float | None = None, enable_gqa: bool = False,
) -> SdpaCall:
    """Read the facts of one call (the tensors are not kept). Straight-line on purpose: reading
    tensor metadata from Python is most of what ``predict`` costs."""
    for position, (name, tensor) in enumerate((("query", query), ("key", key), ("value", value)), 1):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' (position {position}) must be "
                            f"Tensor, not {type(tensor).__name__}")
    device = dispatch_device(query, key, value)
    nested = False
    try:
        qs, ks, vs = query.shape, key.shape, value.shape
        strides: Any = (query.stride(), key.stride(), value.stride())
    except RuntimeError:  # strided nested tensors have neither sizes nor strides
        qs, ks, vs = (_nested_shape(t) for t in (query, key, value))
        strides, nested = None, True
    else:
        # A plain Tensor with sizes is dense; subclasses (jagged nested tensors among them) are asked.
        if (query.__class__ is not Tensor or key.__class__ is not Tensor or value.__class__ is not Tensor) and (
            query.is_nested or key.is_nested or value.is_nested
        ):
            nested = True
    requires_grad = (query.requires_grad or key.requires_grad or value.requires_grad) and torch.is_grad_enabled()
    if attn_mask is None:
        mask_shape = mask_dtype = mask_stride = None
        mask_grad = False
    else:
        mask_shape, mask_dtype = tuple(attn_mask.shape), attn_mask.dtype
        mask_grad = attn_mask.requires_grad
        mask_stride = attn_mask.stride(-1) if attn_mask.dim() else None
    return SdpaCall(
        device, (qs, ks, vs), strides, (query.dtype, key.dtype, value.dtype), nested, requires_grad,
        float(dropout_p), bool(is_causal), bool(enable_gqa), scale, mask_shape, mask_dtype, mask_grad, mask_stride,
        _CPU_ENABLED[(bool(_read_flash()), bool(_read_math()))] if device == "cpu" else enabled_backends(device),
        cuda_facts(query, key, value) if device == "cuda" else None, False,
        not nested and len(qs) == 4 and len(ks) == 4 and len(vs) == 4,
    )


def _nested_shape(tensor: Any) -> tuple[int, ...]:
    """A nested tensor's shape with ragged dimensions as -1 (what PyTorch's checks can see)."""
    if not tensor.is_nested:
        return tuple(tensor.shape)
    sizes = tensor._nested_tensor_size()
    dims = [int(tensor.size(0))]
    for column in range(sizes.shape[1]):
        values = sizes[:, column].unique()
        dims.append(int(values[0]) if len(values) == 1 else -1)
    return tuple(dims)


def context_of(facts: SdpaCall, raw: tuple[Any, ...] = (), raw_kwargs: Mapping[str, Any] | None = None) -> CallContext:
    """The ``CallContext`` whose standard axes summarise ``facts`` (query's dtype, ndim, head dim)."""
    q = facts.shapes[0]
    return CallContext(
        FAMILY, None, facts.dtypes[0], facts.device == "cuda", len(q), q[-1] if q else None, False,
        facts.mask_shape is not None, torch.is_grad_enabled(), facts.is_causal,
        {"device": facts.device, FACTS: facts}, raw,
        raw_kwargs or {},
    )


def axes_of(ctx: CallContext) -> tuple[Any, ...]:
    """The standard axes facts are derived from: a context whose axes moved needs new facts."""
    return (ctx.dtype, ctx.device_cuda, ctx.ndim, ctx.head_dim, ctx.has_mask, ctx.causal)


def facts_axes(facts: SdpaCall) -> tuple[Any, ...]:
    q = facts.shapes[0]
    return (facts.dtypes[0], facts.device == "cuda", len(q), q[-1] if q else None, facts.mask_shape is not None,
            facts.is_causal)


# Family-specific axes a described (tensor-less) call may set in ``extra``, with their defaults.
DESCRIBED_AXES: dict[str, Any] = {
    "batch": 2, "heads": 8, "kv_heads": None, "seq_len": 128, "kv_len": None, "value_head_dim": None,
    "dropout_p": 0.0, "enable_gqa": False, "requires_grad": None, "mask_dtype": "bool",
}


def facts_from_axes(ctx: CallContext) -> SdpaCall:
    """Facts for a call described by axes alone: contiguous tensors of the described shapes.

    ``extra`` may set ``batch``, ``heads``, ``kv_heads``, ``seq_len``, ``kv_len``,
    ``value_head_dim``, ``dropout_p``, ``enable_gqa``, ``requires_grad`` and ``mask_dtype``;
    unset ones take ``DESCRIBED_AXES``' defaults (inputs require grad when autograd is on).
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
    value_head_dim = _size("value_head_dim", values["value_head_dim"] if values["value_head_dim"] is not None
                           else head_dim)
    batch = _size("batch", values["batch"])
    ndim = _size("ndim", ctx.ndim if ctx.ndim is not None else 4)
    dropout_p = values["dropout_p"]
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"torch_sdpa axis dropout_p={dropout_p!r}: give a probability between 0 and 1")

    def shape(n_heads: int, length: int, last: int) -> tuple[int, ...]:
        full = (batch, n_heads, length, last)
        return full[4 - ndim:] if ndim <= 4 else (1,) * (ndim - 4) + full

    shapes = (
        shape(heads, seq_len, head_dim), shape(kv_heads, kv_len, head_dim), shape(kv_heads, kv_len, value_head_dim),
    )
    strides = tuple(_contiguous_strides(s) for s in shapes)
    dtype = ctx.dtype if ctx.dtype is not None else torch.float32
    device = "cuda" if ctx.device_cuda else "cpu"
    requires_grad = bool(ctx.grad_enabled if values["requires_grad"] is None else values["requires_grad"])
    mask_shape = (seq_len, kv_len) if ctx.has_mask else None
    mask_dtype = getattr(torch, str(values["mask_dtype"]), torch.bool) if ctx.has_mask else None
    cuda = None
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("A CUDA call was described but this machine has no CUDA device: drop --cuda")
        sm, cudnn, flash, mem_efficient, cudnn_built, rocm = _cuda_build(torch.cuda.current_device())
        size = torch.empty((), dtype=dtype).element_size()
        cuda = CudaFacts(
            sm, cudnn, flash, mem_efficient, cudnn_built, rocm, torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            bool(getattr(_C, "_get_fa3_sdp_enabled", lambda: False)()), (0, 0, 0),
            tuple(_numel(s) for s in shapes), size,  # type: ignore[arg-type]
        )
    return SdpaCall(
        device, shapes, strides, (dtype, dtype, dtype), False, requires_grad,  # type: ignore[arg-type]
        float(dropout_p), bool(ctx.causal), bool(values["enable_gqa"]), None, mask_shape, mask_dtype,
        False, 1 if ctx.has_mask else None, enabled_backends(device), cuda, True, all(len(s) == 4 for s in shapes),
    )


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


def complete(ctx: CallContext) -> CallContext:
    """``ctx`` with facts that match its axes: its own when they do, described ones otherwise."""
    facts = ctx.extra.get(FACTS)
    if facts is not None and facts_axes(facts) == axes_of(ctx):
        return ctx
    extra = {k: v for k, v in ctx.extra.items() if k not in (FACTS, "device")}
    facts = facts_from_axes(ctx._replace(extra=extra))
    return ctx._replace(extra={**extra, "device": facts.device, FACTS: facts})
