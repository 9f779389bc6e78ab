"""``predict``: the backend PyTorch will run, answered quickly for the common dense CPU call.

NOTE [ The quick CPU path ]
Reading tensor metadata from Python costs more than PyTorch's whole C++ check, so building the
full ``SdpaCall`` facts for every ``predict`` costs several times ``torch._fused_sdp_choice``.
For plain dense CPU tensors ``predict`` answers straight from the few attributes the CPU flash
checks read (``cpu_rules.FLASH_CLAUSES``, the same checks in the same meaning). Whenever a call
leaves that common ground (nested or subclassed tensors, other or mixed devices, masks that are
not 2-D or 4-D or that require grad, zero-sized dimensions) it asks the ported rules
(``predict_by_rules``). Tests hold the two to the same answer on every generated call, and both
to PyTorch's own choice.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn.attention import SDPBackend

from inspector.dispatch.torch_sdpa.checks import FLOATING
from inspector.dispatch.torch_sdpa.family import predict_by_rules

_flash_enabled = torch._C._get_flash_sdp_enabled
_math_enabled = torch._C._get_math_sdp_enabled
_FLOATING = frozenset(FLOATING)
_FLASH, _MATH, _ERROR = SDPBackend.FLASH_ATTENTION, SDPBackend.MATH, SDPBackend.ERROR


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


def predict(
    query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
    scale: float | None = None, enable_gqa: bool = False,
) -> SDPBackend:
    """The backend PyTorch will run for exactly this call under the flags in force now.

    ``SDPBackend.ERROR`` where PyTorch would refuse the call ("No available kernel"), e.g. when
    an ``sdpa_kernel`` block allows only backends that cannot serve it.

    >>> q = torch.randn(2, 8, 128, 64)
    >>> predict(q, q, q)
    <SDPBackend.FLASH_ATTENTION: 1>
    >>> predict(q, q, q, dropout_p=0.1)
    <SDPBackend.MATH: 0>
    """
    if query.__class__ is not Tensor or key.__class__ is not Tensor or value.__class__ is not Tensor \
            or not (query.is_cpu and key.is_cpu and value.is_cpu):
        return predict_by_rules(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    try:
        q, k, v = query.shape, key.shape, value.shape
    except RuntimeError:  # strided nested tensors have no sizes
        return predict_by_rules(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if q == k == v:  # self-attention shapes: batch, heads and head dims agree at once
        if len(q) != 4:
            return _math_or_error()  # the 4-D check fails before the mask is read
        if 0 in q:
            return predict_by_rules(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        flash, wide = True, q[3] > 1
    else:
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            return _math_or_error()
        if 0 in q or 0 in k or 0 in v:
            return predict_by_rules(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        flash = q[0] == k[0] == v[0] and q[3] == k[3] == v[3] and (
            (k[1] == v[1] and q[1] % k[1] == 0) if enable_gqa else q[1] == k[1] == v[1]
        )
        wide = q[3] > 1 and k[3] > 1 and v[3] > 1
    flash = flash and _flash_enabled() and not dropout_p > 0.0
    if flash and attn_mask is not None:
        fits = _mask_fits(attn_mask, q, k)
        if fits is None:
            return predict_by_rules(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        flash = fits
    if flash:
        dtype = query.dtype
        if dtype is key.dtype and dtype is value.dtype and dtype in _FLOATING:
            # ``check_last_dim_stride_equals_1_dense``: a contiguous tensor with no empty dimension
            # and a last one longer than 1 has stride 1 there (``is_contiguous`` ignores the strides
            # of size-1 dimensions), so the strides are read only when that shortcut cannot tell.
            if wide and query.is_contiguous() and key.is_contiguous() and value.is_contiguous():
                return _FLASH
            if query.stride()[-1] == 1 and key.stride()[-1] == 1 and value.stride()[-1] == 1:
                return _FLASH
    if attn_mask is not None and attn_mask.dim() < 2:  # PyTorch's dispatch itself may raise: the rules know
        return predict_by_rules(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return _math_or_error()


def _math_or_error() -> SDPBackend:
    return _MATH if _math_enabled() else _ERROR
