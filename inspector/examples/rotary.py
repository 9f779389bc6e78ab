"""The embedded rotary family: rotate interleaved feature pairs by position-dependent angles.

``x`` is ``(..., length, head_dim)`` with an even ``head_dim``; ``angles`` is
``(length, head_dim // 2)`` (see ``rotary_angles``). Two rows: ``fused`` multiplies complex
numbers in one kernel for float32/float64, ``torch`` is the real-arithmetic reference and
the fallback.
"""

from __future__ import annotations

from typing import Any

import torch

from inspector._free_names import ORIGIN, may_register_family
from inspector.dispatch import CallContext, ImplRecord, Spec, default_registry, register_family, resolve

FAMILY = "rotary"
TOLERANCES = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-6, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}


def rotary_angles(length: int, head_dim: int, base: float = 10000.0, device: Any = None) -> Any:
    """Angles ``position x inv_freq`` of shape ``(length, head_dim // 2)`` (RoFormer frequencies)."""
    if head_dim % 2:
        raise ValueError(f"rotary embeddings rotate feature pairs: head_dim must be even, got {head_dim}")
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim)
    positions = torch.arange(length, dtype=torch.float64, device=device)
    return torch.outer(positions, inv_freq).float()


def rotary_reference(x: Any, angles: Any) -> Any:
    """Reference: (x₁, x₂) -> (x₁cosθ - x₂sinθ, x₁sinθ + x₂cosθ) per pair, in float32 or wider."""
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    xc = x.to(compute)
    first, second = xc[..., 0::2], xc[..., 1::2]
    cos, sin = angles.to(compute).cos(), angles.to(compute).sin()
    rotated = torch.stack((first * cos - second * sin, first * sin + second * cos), dim=-1)
    return rotated.flatten(-2).to(x.dtype)


def rotary_fused(x: Any, angles: Any) -> Any:
    """One complex multiply: view pairs as complex numbers and multiply by e^{iθ}."""
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
    turns = torch.polar(torch.ones_like(angles, dtype=x.dtype), angles.to(x.dtype))
    return torch.view_as_real(pairs * turns).flatten(-2)


ROWS = (
    ImplRecord(
        FAMILY,
        "fused",
        rotary_fused,
        Spec.dtype_in(torch.float32, torch.float64),
        priority=10,
        description="complex multiply (float32/float64)",
    ),
    ImplRecord(FAMILY, "torch", rotary_reference, Spec.always(), priority=100, description="real-arithmetic reference"),
)


def rotary_context(x: Any, angles: Any) -> CallContext:
    return CallContext(
        FAMILY,
        None,
        x.dtype,
        x.is_cuda,
        x.dim(),
        x.shape[-1],
        False,
        False,
        torch.is_grad_enabled(),
        raw=(x, angles),
    )


def apply_rotary(x: Any, angles: Any, *, backend: Any = None) -> Any:
    """Rotary embedding through the dispatcher; ``backend`` is an explicit (strict) selection."""
    return resolve(FAMILY, rotary_context(x, angles), backend).record.obj(x, angles)


def sample_rotary(ctx: CallContext, generator: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Random ``x`` of shape (2, 4, 32, head_dim) and matching angles."""
    dtype = ctx.dtype or torch.float32
    device = "cuda" if ctx.device_cuda else "cpu"
    head_dim = ctx.head_dim or 64
    x = torch.randn((2, 4, 32, head_dim), generator=generator).to(device=device, dtype=dtype)
    return (x, rotary_angles(32, head_dim, device=device)), {}


def register() -> bool:
    """(Re-)register the rotary family unless the user registered one of that name."""
    if not may_register_family(default_registry(), FAMILY):
        return False
    register_family(
        FAMILY,
        ROWS,
        "torch",
        extractor=rotary_context,
        sampler=sample_rotary,
        tolerances=TOLERANCES,
        description="rotary position embedding over (..., length, head_dim)",
        origin=ORIGIN,
    )
    return True
