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

from collections.abc import Mapping
from typing import Any, NamedTuple

import torch
from torch import Tensor

from inspector.dispatch.context import CallContext, format_value
from inspector.dispatch.torch_sdpa.flags import CPU_ENABLED, enabled_backends, read_flash, read_math
from inspector.dispatch.torch_sdpa.gpus import GpuProfile, gpu_profile, this_gpu
from inspector.dispatch.torch_sdpa.names import (
    BACKENDS,
    CUDNN,
    EFFICIENT,
    FACTS,
    FAMILY,
    FLASH,
    MATH,
    OVERRIDEABLE,
)

__all__ = [
    "BACKENDS",
    "CUDNN",
    "EFFICIENT",
    "FACTS",
    "FAMILY",
    "FLASH",
    "MATH",
    "OVERRIDEABLE",
    "CudaFacts",
    "SdpaCall",
    "context_of",
    "dispatch_device",
    "enabled_backends",
    "facts_from_call",
]
_C = torch._C


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
    cuda_version: tuple[int, int] = (13, 0)
    cudnn_d256: bool = False
    gpu: str = ""  # the profile's label, e.g. "H100 (sm 9.0, cuDNN 9.15.1, CUDA 13.0)"
    measured: bool = True  # this machine's own GPU; False: PyTorch's rules for a GPU named by a profile

    def rules_label(self) -> str:
        """What an answer on this device is (see ``GpuProfile.rules_label``)."""
        name = self.gpu or f"sm {self.sm[0]}.{self.sm[1]}"
        if self.measured:
            return f"PyTorch's rules for this machine's {name}"
        return f"PyTorch's rules for {name}, not measured here"


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
    described: tuple[tuple[str, Any], ...] = ()  # the family axes a described call was made from
    nested_seq: tuple[tuple[int, int] | None, ...] | None = None  # (shortest, longest) sequence of nested inputs

    def __str__(self) -> str:
        """``q(2, 8, 128, 64) k(...) v(...) float32 cpu`` plus whatever departs from the defaults."""
        q, k, v = (tuple(s) for s in self.shapes)
        dtypes = {format_value(d) for d in self.dtypes}
        parts = [f"q{q} k{k} v{v}", "/".join(sorted(dtypes)), self.device]
        if self.nested:
            parts.append("nested")
        if self.dropout_p:
            parts.append(f"dropout_p={self.dropout_p:g}")
        if self.is_causal:
            parts.append("is_causal")
        if self.enable_gqa:
            parts.append("enable_gqa")
        if self.mask_shape is not None:
            parts.append(f"mask{tuple(self.mask_shape)} {format_value(self.mask_dtype)}")
        if self.requires_grad:
            parts.append("requires_grad")
        if self.cuda is not None and self.cuda.gpu:
            parts.append(f"[{self.cuda.rules_label()}]")
        if self.synthetic:
            parts.append("(described, not measured)")
        return " ".join(parts)


def cuda_facts(query: Any, key: Any, value: Any, profile: GpuProfile | None = None) -> CudaFacts:
    """What PyTorch's CUDA rules read for a call on ``profile`` (default: the tensors' own GPU)."""
    if profile is None:
        profile = this_gpu(query.device.index)
    tensors = (query, key, value)
    return cuda_facts_on(
        profile,
        tuple(0 if t.is_nested else t.storage_offset() * t.element_size() for t in tensors),
        tuple(t.numel() for t in tensors),
        query.element_size(),
    )


def cuda_facts_on(profile: GpuProfile, offsets: tuple[int, ...], numels: tuple[int, ...], size: int) -> CudaFacts:
    """``CudaFacts`` for q, k and v with these byte offsets, element counts and element size on ``profile``,
    under this process's determinism and FA3 settings (tensors measured here, or a described call)."""
    return CudaFacts(
        profile.sm,
        profile.cudnn_version,
        profile.flash_built,
        profile.mem_efficient_built,
        profile.cudnn_built,
        torch.version.hip is not None and profile.measured,
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        bool(getattr(_C, "_get_fa3_sdp_enabled", lambda: False)()),
        offsets,  # type: ignore[arg-type]
        numels,  # type: ignore[arg-type]
        size,
        profile.cuda_version,
        profile.cudnn_d256,
        profile.label(),
        profile.measured,
    )


def dispatch_device(query: Any, key: Any, value: Any, attn_mask: Any = None) -> str:
    """The device whose kernel PyTorch's dispatcher picks for the call: the common device of every
    tensor argument (the mask's included); with mixed devices CUDA's if any is on CUDA, the meta
    kernel's if any is on meta."""
    if (
        query.is_cpu
        and key.is_cpu
        and value.is_cpu
        and (attn_mask is None or not isinstance(attn_mask, Tensor) or attn_mask.is_cpu)
    ):
        return "cpu"
    tensors = (query, key, value) if not isinstance(attn_mask, Tensor) else (query, key, value, attn_mask)
    types = {str(t.device.type) for t in tensors}
    if len(types) == 1:
        return types.pop()
    for preferred in ("cuda", "meta"):
        if preferred in types:
            return preferred
    return str(query.device.type)


def facts_from_call(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    gpu: Any = None,
) -> SdpaCall:
    """Read the facts of one call (the tensors are not kept). ``gpu`` (a preset name, a compute
    capability or a ``GpuProfile``) describes the call as made on that GPU instead."""
    for position, (name, tensor) in enumerate((("query", query), ("key", key), ("value", value)), 1):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"scaled_dot_product_attention(): argument '{name}' (position {position}) must be "
                f"Tensor, not {type(tensor).__name__}"
            )
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        raise TypeError(
            f"scaled_dot_product_attention(): argument 'attn_mask' must be Tensor, not {type(attn_mask).__name__}"
        )
    profile = None if gpu is None else gpu_profile(gpu)
    device = dispatch_device(query, key, value, attn_mask) if profile is None else "cuda"
    nested = False
    nested_seq = None
    try:
        qs, ks, vs = query.shape, key.shape, value.shape
        strides: Any = (query.stride(), key.stride(), value.stride())
    except RuntimeError:  # strided nested tensors have neither sizes nor strides
        qs, ks, vs = (_nested_shape(t) for t in (query, key, value))
        strides, nested = None, True
        nested_seq = tuple(_nested_seq(t) for t in (query, key, value))
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
    if device == "cpu":
        enabled = CPU_ENABLED[(bool(read_flash()), bool(read_math()))]
    elif profile is not None and profile.enabled is not None:
        enabled = profile.enabled
    else:
        enabled = enabled_backends(device)
    cuda = None
    if device == "cuda":
        cuda = cuda_facts(query, key, value, profile)
    return SdpaCall(
        device,
        (qs, ks, vs),
        strides,
        (query.dtype, key.dtype, value.dtype),
        nested,
        requires_grad,
        float(dropout_p),
        bool(is_causal),
        bool(enable_gqa),
        scale,
        mask_shape,
        mask_dtype,
        mask_grad,
        mask_stride,
        enabled,
        cuda,
        False,
        not nested and len(qs) == 4 and len(ks) == 4 and len(vs) == 4,
        (),
        nested_seq,
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


def _nested_seq(tensor: Any) -> tuple[int, int] | None:
    """The shortest and longest sequence (dimension 1 of each component) of a strided nested tensor."""
    if not tensor.is_nested:
        return None
    sizes = tensor._nested_tensor_size()
    if sizes.dim() != 2 or sizes.shape[1] < 2 or sizes.shape[0] == 0:
        return None
    return int(sizes[:, 1].min()), int(sizes[:, 1].max())


def context_of(facts: SdpaCall, raw: tuple[Any, ...] = (), raw_kwargs: Mapping[str, Any] | None = None) -> CallContext:
    """The ``CallContext`` whose standard axes summarise ``facts`` (query's dtype, ndim, head dim)."""
    q = facts.shapes[0]
    return CallContext(
        FAMILY,
        None,
        facts.dtypes[0],
        facts.device == "cuda",
        len(q),
        q[-1] if q else None,
        False,
        facts.mask_shape is not None,
        torch.is_grad_enabled(),
        facts.is_causal,
        {"device": facts.device, FACTS: facts},
        raw,
        raw_kwargs or {},
    )
