"""The embedded attention family: five real rows, all runnable on CPU except ``flash``.

Inputs are ``(batch, heads, length, head_dim)`` tensors; ``attn_mask`` follows
``scaled_dot_product_attention`` (boolean: True takes part; float: added to the scores), and
``is_causal`` masks the upper triangle (top-left aligned). The decision table:

==========  ========  ========  ============================================================
row         priority  faithful  handles
==========  ========  ========  ============================================================
flash       0         yes       CUDA, float16/bfloat16, head_dim <= 256, no mask, 4-D
quantized   5         no        inference (``fwd`` set), fp8-rounded Q/K/V: changes numerics
chunked     10        yes       no grad, no mask, kv_len >= 1024: online softmax in chunks
sdpa        20        yes       4-D float16/bfloat16/float32: ``F.scaled_dot_product_attention``
math        100       yes       anything: softmax(QKᵀ)V in float32 (float64 for float64), the reference
==========  ========  ========  ============================================================
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from inspector._free_names import ORIGIN, may_register_family
from inspector.dispatch import (
    CallContext,
    ImplRecord,
    Spec,
    axis,
    default_registry,
    register_env_alias,
    register_family,
    resolve,
)

FAMILY = "attention"
LONG_KV = 1024
CHUNK = 256
FP8_MAX = 448.0  # largest finite float8_e4m3fn value

# (atol, rtol) of every faithful row against the reference, per input dtype.
TOLERANCES = {
    torch.float64: (1e-10, 1e-10),
    torch.float32: (2e-5, 1e-4),
    torch.float16: (2e-3, 4e-3),
    torch.bfloat16: (1.6e-2, 3e-2),
}
# The quantized row rounds Q, K and V to fp8: its outputs are expected this far from the reference.
QUANTIZED_TOLERANCE = (0.15, 0.1)


def _scores_bias(attn_mask: Any, is_causal: bool, q_len: int, kv_len: int, dtype: torch.dtype, device: Any) -> Any:
    if attn_mask is not None and is_causal:
        raise ValueError("Pass either attn_mask or is_causal=True, not both (as scaled_dot_product_attention)")
    if is_causal:
        keep = torch.ones(q_len, kv_len, dtype=torch.bool, device=device).tril()
        return torch.zeros(q_len, kv_len, dtype=dtype, device=device).masked_fill(~keep, float("-inf"))
    if attn_mask is None:
        return None
    if attn_mask.dtype == torch.bool:
        return torch.zeros(attn_mask.shape, dtype=dtype, device=device).masked_fill(~attn_mask, float("-inf"))
    return attn_mask.to(dtype)


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def math_attention(
    q: Any, k: Any, v: Any, attn_mask: Any = None, *, is_causal: bool = False, scale: float | None = None
) -> Any:
    """Reference: softmax(QKᵀ·scale + mask)·V, computed in float32 (float64 for float64 inputs)."""
    compute = _compute_dtype(q.dtype)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q.to(compute) @ k.to(compute).transpose(-2, -1)) * scale
    bias = _scores_bias(attn_mask, is_causal, q.shape[-2], k.shape[-2], compute, q.device)
    if bias is not None:
        scores = scores + bias
    return (torch.softmax(scores, dim=-1) @ v.to(compute)).to(q.dtype)


def sdpa_attention(
    q: Any, k: Any, v: Any, attn_mask: Any = None, *, is_causal: bool = False, scale: float | None = None
) -> Any:
    """PyTorch's fused ``scaled_dot_product_attention`` (it picks its own kernel inside)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)


def chunked_attention(
    q: Any,
    k: Any,
    v: Any,
    attn_mask: Any = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    chunk: int = CHUNK,
) -> Any:
    """Online softmax over key/value chunks: memory O(length x chunk) instead of O(length²)."""
    compute = _compute_dtype(q.dtype)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    qc = q.to(compute) * scale
    kv_len = k.shape[-2]
    bias = _scores_bias(attn_mask, is_causal, q.shape[-2], kv_len, compute, q.device)
    running_max = torch.full(q.shape[:-1], float("-inf"), dtype=compute, device=q.device)
    denominator = torch.zeros(q.shape[:-1], dtype=compute, device=q.device)
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=compute, device=q.device)
    for start in range(0, kv_len, chunk):
        stop = min(start + chunk, kv_len)
        scores = qc @ k[..., start:stop, :].to(compute).transpose(-2, -1)
        if bias is not None:
            scores = scores + bias[..., start:stop]
        new_max = torch.maximum(running_max, scores.amax(dim=-1))
        shift = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        weights = torch.exp(scores - shift.unsqueeze(-1))
        correction = torch.exp(running_max - shift)
        denominator = denominator * correction + weights.sum(dim=-1)
        acc = acc * correction.unsqueeze(-1) + weights @ v[..., start:stop, :].to(compute)
        running_max = new_max
    return (acc / denominator.unsqueeze(-1)).to(q.dtype)


def _fp8_round(x: Any) -> Any:
    scale = x.detach().abs().amax().clamp(min=1e-12) / FP8_MAX
    return (x / scale).to(torch.float8_e4m3fn).to(x.dtype) * scale


def quantized_attention(
    q: Any, k: Any, v: Any, attn_mask: Any = None, *, is_causal: bool = False, scale: float | None = None
) -> Any:
    """fp8-style attention: Q, K and V rounded to float8_e4m3fn (per-tensor scale). Changes numerics."""
    compute = _compute_dtype(q.dtype)
    q8, k8, v8 = (_fp8_round(t.to(compute)) for t in (q, k, v))
    return math_attention(q8, k8, v8, attn_mask, is_causal=is_causal, scale=scale).to(q.dtype)


def flash_attention(
    q: Any, k: Any, v: Any, attn_mask: Any = None, *, is_causal: bool = False, scale: float | None = None
) -> Any:
    """FlashAttention through SDPA restricted to the flash kernel (CUDA only)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)


def flash_available() -> bool:
    probe = getattr(torch.backends.cuda, "is_flash_attention_available", lambda: True)
    return bool(torch.cuda.is_available() and probe())


HALF = (torch.float16, torch.bfloat16)
ROWS = (
    ImplRecord(
        FAMILY,
        "flash",
        flash_attention,
        Spec.cuda_device() & Spec.dtype_in(*HALF) & axis("head_dim").le(256) & Spec.mask_free() & Spec.ndim(4),
        available=flash_available,
        priority=0,
        description="FlashAttention kernel via SDPA",
    ),
    ImplRecord(
        FAMILY,
        "quantized",
        quantized_attention,
        Spec.inference() & Spec.dtype_in(*HALF, torch.float32),
        priority=5,
        faithful=False,
        description="fp8-rounded Q/K/V (numerics change)",
    ),
    ImplRecord(
        FAMILY,
        "chunked",
        chunked_attention,
        Spec.no_grad() & Spec.mask_free() & axis("kv_len").ge(LONG_KV),
        priority=10,
        description=f"online softmax in chunks of {CHUNK} keys",
    ),
    ImplRecord(
        FAMILY,
        "sdpa",
        sdpa_attention,
        Spec.ndim(4) & Spec.dtype_in(*HALF, torch.float32),
        priority=20,
        description="torch.nn.functional.scaled_dot_product_attention",
    ),
    ImplRecord(
        FAMILY,
        "math",
        math_attention,
        Spec.always(),
        priority=100,
        description="reference softmax(QKᵀ)V in float32/float64",
    ),
)


def attention_context(
    q: Any,
    k: Any,
    v: Any,
    attn_mask: Any = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    fwd: str | None = None,
) -> CallContext:
    """The ``CallContext`` of an attention call (``kv_len`` is a family-specific axis)."""
    return CallContext(
        FAMILY,
        fwd,
        q.dtype,
        q.is_cuda,
        q.dim(),
        q.shape[-1],
        False,
        attn_mask is not None,
        torch.is_grad_enabled(),
        bool(is_causal),
        {"kv_len": k.shape[-2]},
        (q, k, v, attn_mask),
        {"is_causal": is_causal, "scale": scale},
    )


def attention(
    q: Any,
    k: Any,
    v: Any,
    attn_mask: Any = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    fwd: str | None = None,
    backend: Any = None,
) -> Any:
    """Attention through the dispatcher; ``backend`` is an explicit (strict) selection."""
    ctx = attention_context(q, k, v, attn_mask, is_causal=is_causal, scale=scale, fwd=fwd)
    return resolve(FAMILY, ctx, backend).record.obj(q, k, v, attn_mask, is_causal=is_causal, scale=scale)


def sample_attention(ctx: CallContext, generator: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Random inputs matching ``ctx``: 2 batches x 4 heads, 32 queries, ``kv_len`` keys (default 128)."""
    dtype = ctx.dtype or torch.float32
    device = "cuda" if ctx.device_cuda else "cpu"
    head_dim = ctx.head_dim or 64
    kv_len = int(ctx.extra.get("kv_len") or 128)
    q_len = min(32, kv_len)
    lead = (2, 4) if (ctx.ndim or 4) >= 4 else (8,)

    def rand(length: int) -> Any:
        return torch.randn((*lead, length, head_dim), generator=generator).to(device=device, dtype=dtype)

    q, k, v = rand(q_len), rand(kv_len), rand(kv_len)
    mask = None
    if ctx.has_mask:
        keep = torch.rand((q_len, kv_len), generator=generator) > 0.3
        keep[:, 0] = True  # every query sees at least one key
        mask = keep.to(device)
    return (q, k, v, mask), {}


def register() -> bool:
    """(Re-)register the attention family with its legacy single-value variable, unless the user
    registered a family of that name (then it is kept, and ``False`` says the demo was skipped)."""
    if not may_register_family(default_registry(), FAMILY):
        return False
    register_family(
        FAMILY,
        ROWS,
        "math",
        extractor=attention_context,
        sampler=sample_attention,
        tolerances=TOLERANCES,
        description="scaled dot-product attention over (batch, heads, length, head_dim)",
        origin=ORIGIN,
    )
    register_env_alias(FAMILY, "INSPECTOR_BACKEND")
    return True
