"""``predict``'s quick answer for the common call: dense CPU tensors, PyTorch's CPU flash checks inlined.

NOTE [ The quick CPU path ]
Reading tensor metadata from Python costs more than PyTorch's whole C++ check, so building the
full ``SdpaCall`` facts for every ``predict`` costs several times ``torch._fused_sdp_choice``.
For plain dense CPU tensors this module answers straight from the few attributes the CPU flash
checks read (``cpu_rules.FLASH_CLAUSES``, the same checks in the same meaning), and returns
``None`` whenever a call leaves that common ground (nested or subclassed tensors, other
devices, masks of unusual rank, grouped-query heads, zero-sized dimensions), so the rules
answer instead. Tests hold the two to the same answer on every generated call, and both to
PyTorch's own choice.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn.attention import SDPBackend

from inspector.dispatch.torch_sdpa.checks import FLOATING

_flash_enabled = torch._C._get_flash_sdp_enabled
_math_enabled = torch._C._get_math_sdp_enabled
_FLOATING = frozenset(FLOATING)
_FLASH, _MATH, _ERROR = SDPBackend.FLASH_ATTENTION, SDPBackend.MATH, SDPBackend.ERROR


def _unit_last_strides(tensors: tuple[Any, Any, Any], shapes: tuple[Any, Any, Any]) -> bool:
    """``check_last_dim_stride_equals_1_dense`` (CPU: the mask's stride is not read)."""
    for tensor, shape in zip(tensors, shapes, strict=True):
        # A contiguous tensor with no empty dimension and a last one longer than 1 has stride 1
        # there (``is_contiguous`` ignores the strides of size-1 dimensions and empty tensors).
        if not (shape[3] > 1 and tensor.is_contiguous()) and tensor.stride()[-1] != 1:
            return False
    return True


def _mask_fits(mask: Any, q: Any, k: Any) -> bool | None:
    """``check_attn_mask_shape`` for a dense mask; ``None`` when the rules must decide."""
    if mask.__class__ is not Tensor or mask.requires_grad:
        return None
    shape = mask.shape
    rank = len(shape)
    if rank != 2 and rank != 4:
        return None
    if shape[-2] not in (1, q[2]) or shape[-1] not in (1, k[2]):
        return False
    return rank == 2 or (shape[0] in (1, q[0]) and shape[1] in (1, q[1]))


def choose(query: Any, key: Any, value: Any, attn_mask: Any, dropout_p: Any, enable_gqa: Any) -> SDPBackend | None:
    """PyTorch's CPU choice for a plain dense call, or ``None`` to ask the rules."""
    if query.__class__ is not Tensor or key.__class__ is not Tensor or value.__class__ is not Tensor \
            or enable_gqa or not query.is_cpu:
        return None
    try:
        q, k, v = query.shape, key.shape, value.shape
    except RuntimeError:  # strided nested tensors have no sizes
        return None
    if q == k == v:  # self-attention shapes: batch, heads and head dim agree at once
        if len(q) != 4 or 0 in q:
            return None
        flash = True
    else:
        if len(q) != 4 or len(k) != 4 or len(v) != 4 or 0 in q or 0 in k or 0 in v:
            return None
        flash = q[0] == k[0] == v[0] and q[1] == k[1] == v[1] and q[3] == k[3] == v[3]
    flash = flash and _flash_enabled() and not dropout_p > 0.0
    if flash and attn_mask is not None:
        fits = _mask_fits(attn_mask, q, k)
        if fits is None:
            return None
        flash = fits
    if flash:
        dtype = query.dtype
        if dtype is key.dtype and dtype is value.dtype and dtype in _FLOATING:
            if q[3] > 1 and k[3] > 1 and v[3] > 1 and query.is_contiguous() and key.is_contiguous() \
                    and value.is_contiguous():
                return _FLASH
            if _unit_last_strides((query, key, value), (q, k, v)):
                return _FLASH
    if attn_mask is not None and attn_mask.dim() < 2:
        return None  # PyTorch's dispatch itself may raise here: the rules know when
    return _MATH if _math_enabled() else _ERROR
