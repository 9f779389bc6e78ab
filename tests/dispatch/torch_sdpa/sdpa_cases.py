"""Generated SDPA calls for the differential tests: every axis PyTorch's dispatch reads."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.nn.attention import SDPBackend

DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
ALL_BACKENDS = (
    SDPBackend.MATH,
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.CUDNN_ATTENTION,
    SDPBackend.OVERRIDEABLE,
)
# None: no restriction; otherwise every non-empty subset, as sdpa_kernel lists.
RESTRICTIONS: tuple[tuple[SDPBackend, ...] | None, ...] = (
    None,
    *(combo for n in range(1, len(ALL_BACKENDS) + 1) for combo in itertools.combinations(ALL_BACKENDS, n)),
)


@dataclass
class Case:
    """One call: how to build its tensors, its options and the flags to run it under."""

    seed: int
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    restriction: tuple[SDPBackend, ...] | None = None
    grad_mode: bool = True
    label: str = ""

    def __repr__(self) -> str:
        return f"Case(seed={self.seed}, {self.label})"


def _tensor(shape: tuple[int, ...], dtype: Any, device: str, rng: random.Random, layout: str, grad: bool) -> Any:
    if layout == "transposed" and len(shape) >= 2 and shape[-1] > 1 and shape[-2] > 1:
        t = torch.empty((*shape[:-2], shape[-1], shape[-2]), dtype=dtype, device=device).transpose(-1, -2)
    elif layout == "packed" and len(shape) >= 1:
        t = torch.empty((*shape[:-1], 3 * shape[-1]), dtype=dtype, device=device)[..., shape[-1] : 2 * shape[-1]]
    elif layout == "offset" and len(shape) >= 1:
        t = torch.empty((*shape[:-1], shape[-1] + 1), dtype=dtype, device=device)[..., 1:]
    elif layout == "bhsd_from_bshd" and len(shape) == 4:
        b, h, s, d = shape
        t = torch.empty((b, s, h, d), dtype=dtype, device=device).transpose(1, 2)
    else:
        t = torch.empty(shape, dtype=dtype, device=device)
    if grad and t.is_floating_point():
        t.requires_grad_(True)
    return t


def generate(count: int, device: str = "cpu", seed: int = 20261201) -> list[Case]:
    """``count`` calls drawn over dtypes, head dims, ranks, masks, causality, dropout, scale, GQA,
    strides, grad and every ``sdpa_kernel`` restriction list (a seeded, reproducible draw)."""
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        cases.append(_one(index, rng, device))
    return cases


def _one(index: int, rng: random.Random, device: str) -> Case:
    if rng.random() < 0.3:
        return _clean(index, rng, device)
    dtype = rng.choice(DTYPES)
    head_dim = rng.choice((8, 16, 24, 32, 40, 64, 72, 80, 96, 128, 160, 192, 200, 224, 256, 288, 512))
    value_dim = head_dim if rng.random() < 0.8 else rng.choice((8, 32, 64, 128, 256, 512))
    key_dim = head_dim if rng.random() < 0.93 else rng.choice((16, 64, 128))
    ndim = rng.choice((4, 4, 4, 4, 3, 3, 5, 2))
    batch = rng.choice((1, 2, 3))
    heads = rng.choice((1, 2, 4, 8))
    gqa = rng.random() < 0.2
    kv_heads = heads
    if gqa or rng.random() < 0.1:
        kv_heads = rng.choice((1, 2, 3, 4, heads))
    v_heads = kv_heads if rng.random() < 0.9 else rng.choice((1, 2, heads))
    q_len = rng.choice((0, 1, 2, 7, 16, 33)) if rng.random() < 0.15 else rng.choice((4, 8, 16, 32))
    kv_len = q_len if rng.random() < 0.6 else rng.choice((0, 1, 5, 16, 64))
    k_batch = batch if rng.random() < 0.92 else rng.choice((1, batch + 1))

    def shape(b: int, h: int, length: int, dim: int) -> tuple[int, ...]:
        full = (b, h, length, dim)
        if ndim == 4:
            return full
        if ndim == 3:
            return (b * h, length, dim)
        if ndim == 2:
            return (length, dim)
        return (1, *full)

    layouts = ("contiguous",) * 6 + ("transposed", "packed", "offset", "bhsd_from_bshd")
    grad_inputs = rng.random() < 0.35
    q = _tensor(shape(batch, heads, q_len, head_dim), dtype, device, rng, rng.choice(layouts), grad_inputs)
    k_dtype = dtype if rng.random() < 0.95 else rng.choice(DTYPES)
    k = _tensor(
        shape(k_batch, kv_heads, kv_len, key_dim),
        k_dtype,
        device,
        rng,
        rng.choice(layouts),
        grad_inputs and rng.random() < 0.5,
    )
    v = _tensor(
        shape(k_batch, v_heads, kv_len, value_dim),
        dtype,
        device,
        rng,
        rng.choice(layouts),
        grad_inputs and rng.random() < 0.5,
    )

    mask = None
    mask_kind = rng.choice(("none", "none", "none", "bool", "float", "bool4d", "float4d", "broadcast", "bad", "3d"))
    if mask_kind != "none":
        mask_dtype = torch.bool if "bool" in mask_kind or rng.random() < 0.5 else dtype
        if mask_kind in ("bool", "float"):
            mask_shape: tuple[int, ...] = (q_len, kv_len)
        elif mask_kind in ("bool4d", "float4d"):
            mask_shape = (batch, heads, q_len, kv_len)
        elif mask_kind == "broadcast":
            mask_shape = (1, 1, rng.choice((1, q_len)), rng.choice((1, kv_len)))
        elif mask_kind == "3d":
            mask_shape = (heads, q_len, kv_len)
        else:
            mask_shape = (batch + 1, heads, q_len + 1, kv_len)
        mask = torch.empty(mask_shape, dtype=mask_dtype, device=device)
        if mask_dtype != torch.bool and rng.random() < 0.15:
            mask.requires_grad_(True)
        if rng.random() < 0.1 and len(mask_shape) >= 2 and mask_shape[-1] > 1 and mask_shape[-2] > 1:
            mask = mask.transpose(-1, -2).contiguous().transpose(-1, -2)
    dropout = rng.choice((0.0, 0.0, 0.0, 0.1, 0.5, 0.0625))
    causal = rng.random() < 0.25 and mask is None
    kwargs: dict[str, Any] = {}
    if rng.random() < 0.2:
        kwargs["scale"] = rng.choice((0.125, 1.0))
    if gqa or rng.random() < 0.05:
        kwargs["enable_gqa"] = True
    restriction = rng.choice(RESTRICTIONS) if rng.random() < 0.45 else None
    grad_mode = rng.random() < 0.8
    label = (
        f"q{tuple(q.shape)} k{tuple(k.shape)} v{tuple(v.shape)} {dtype} mask={mask_kind} dropout={dropout} "
        f"causal={causal} {kwargs} restriction={restriction} grad_mode={grad_mode}"
    )
    return Case(index, (q, k, v, mask, dropout, causal), kwargs, restriction, grad_mode, label)


def _clean(index: int, rng: random.Random, device: str) -> Case:
    """A call every fused kernel could take, but for one varied axis: keeps the flash outcomes common."""
    dtype = rng.choice(DTYPES)
    head_dim = rng.choice((8, 16, 32, 64, 128, 256, 512))
    shape = (rng.choice((1, 2)), rng.choice((1, 4, 8)), rng.choice((1, 16, 64)), head_dim)
    grad = rng.random() < 0.3
    q, k, v = (_tensor(shape, dtype, device, rng, "contiguous", grad) for _ in range(3))
    kwargs: dict[str, Any] = {"scale": 0.5} if rng.random() < 0.2 else {}
    causal = rng.random() < 0.3
    restriction = rng.choice(RESTRICTIONS) if rng.random() < 0.3 else None
    label = f"clean q{shape} {dtype} causal={causal} grad={grad} {kwargs} restriction={restriction}"
    return Case(index, (q, k, v, None, 0.0, causal), kwargs, restriction, rng.random() < 0.8, label)


def pytorch_choice(case: Case) -> SDPBackend:
    """What PyTorch itself chooses for the case (``ERROR`` where it refuses)."""
    try:
        return SDPBackend(torch._fused_sdp_choice(*case.args, **case.kwargs))
    except RuntimeError:
        return SDPBackend.ERROR
