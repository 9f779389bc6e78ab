"""The CUDA rules, run on any machine: calls described with the facts of a given GPU.

On a GPU the differential test compares them with PyTorch itself (``-m cuda``); here each case is
a decision PyTorch's CUDA dispatch is known to make, with the device's capability and cuDNN
version written into the facts, and the first reason in PyTorch's words.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from inspector.dispatch import CallContext
from inspector.dispatch.torch_sdpa import cuda_rules
from inspector.dispatch.torch_sdpa.described import facts_from_axes
from inspector.dispatch.torch_sdpa.facts import BACKENDS, FACTS, CudaFacts, context_of
from inspector.dispatch.torch_sdpa.tables import SPECS

A100, H100, T4, P100, RTX4090 = (8, 0), (9, 0), (7, 5), (6, 0), (8, 9)
CUDNN_9_8 = 90800


def _call(
    sm: tuple[int, int],
    *,
    dtype: Any = torch.float16,
    head_dim: int = 64,
    ndim: int = 4,
    mask: bool = False,
    causal: bool = False,
    grad: bool = False,
    cudnn: int = CUDNN_9_8,
    deterministic: bool = False,
    offset: int = 0,
    **extra: Any,
) -> CallContext:
    """A call on a GPU of capability ``sm``: contiguous tensors of the described shapes."""
    ctx = CallContext(
        "torch_sdpa",
        dtype=dtype,
        ndim=ndim,
        head_dim=head_dim,
        has_mask=mask,
        causal=causal,
        grad_enabled=grad,
        extra=extra,
    )
    cpu = facts_from_axes(ctx)
    element = torch.empty((), dtype=dtype).element_size()
    numels = tuple(int(torch.Size(s).numel()) for s in cpu.shapes)
    cuda = CudaFacts(
        sm, cudnn, True, True, True, False, deterministic, False, False, (offset * element,) * 3, numels, element
    )  # type: ignore[arg-type]
    return context_of(cpu._replace(device="cuda", cuda=cuda, enabled=frozenset(BACKENDS)))


def _chosen(ctx: CallContext, order: tuple[str, ...] = cuda_rules.DEFAULT_ORDER) -> str:
    return next(name for name in order if SPECS[name].matches(ctx))


def _first_reason(backend: str, ctx: CallContext) -> str:
    return str(SPECS[backend].failures(ctx)[0].message)


@pytest.mark.parametrize(
    ("ctx", "expected"),
    [
        (_call(A100), "flash_attention"),
        (_call(A100, dtype=torch.bfloat16), "flash_attention"),
        (_call(A100, dropout_p=0.1, grad=True), "flash_attention"),
        (_call(A100, head_dim=60), "flash_attention"),
        (_call(A100, dtype=torch.float32), "efficient_attention"),
        (_call(A100, mask=True), "efficient_attention"),
        (_call(A100, head_dim=512), "efficient_attention"),
        (_call(A100, causal=True, kv_len=64), "efficient_attention"),
        (_call(T4), "efficient_attention"),
        (_call(P100), "efficient_attention"),
        (_call(T4, dtype=torch.bfloat16), "math"),
        (_call(A100, ndim=3), "math"),
        (_call(A100, dtype=torch.float64), "math"),
        (_call(A100, head_dim=62, dtype=torch.float32, mask=True), "math"),
        (_call(RTX4090, head_dim=200, grad=True), "efficient_attention"),
        (_call(RTX4090, head_dim=200), "flash_attention"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_cuda_rules_pick_what_pytorch_picks(ctx: CallContext, expected: str) -> None:
    assert _chosen(ctx) == expected


@pytest.mark.parametrize(
    ("backend", "ctx", "words"),
    [
        ("flash_attention", _call(T4), "Flash attention only supports gpu architectures in the range [sm80, sm121]."),
        ("flash_attention", _call(A100, mask=True), "Flash Attention does not support non-null attn_mask."),
        (
            "flash_attention",
            _call(A100, dtype=torch.float32),
            "Expected query, key and value to all be of dtype: {Half, BFloat16}.",
        ),
        (
            "flash_attention",
            _call(A100, head_dim=512),
            "Flash attention requires q,k,v to have the same last dimension and to be less than or equal to 256.",
        ),
        (
            "flash_attention",
            _call(A100, causal=True, kv_len=64),
            "Flash attention does not support the is_causal flag when seqlen_q != seqlen_k.",
        ),
        ("efficient_attention", _call(A100, head_dim=60), "divisible by 8."),
        ("efficient_attention", _call(A100, offset=2), "storage offsets * element_size to be aligned."),
        ("efficient_attention", _call(T4, dtype=torch.bfloat16), "Expected query, key and value to all be of dtype"),
        ("cudnn_attention", _call(A100, cudnn=8900), "cuDNN version too old to use cuDNN Attention (< v9.0.0)"),
        ("cudnn_attention", _call(H100, deterministic=True), "cuDNN SDPA is not deterministic."),
        ("cudnn_attention", _call(A100, dropout_p=0.1), "cuDNN dropout probability resolution is limited to 1/16."),
        ("cudnn_attention", _call(T4), "cuDNN MHA only supports gpu architectures in the range [sm80, sm121]."),
    ],
)
def test_cuda_rules_give_pytorchs_reasons(backend: str, ctx: CallContext, words: str) -> None:
    assert words in _first_reason(backend, ctx)


def test_the_gemm_alignment_of_the_memory_efficient_kernel_follows_the_device() -> None:
    def alignment(sm: tuple[int, int], dtype: Any) -> int:
        return cuda_rules.minimum_gemm_alignment(_call(sm, dtype=dtype).extra[FACTS])

    assert alignment(A100, torch.float16) == 8 and alignment(A100, torch.float32) == 4
    assert alignment(T4, torch.float16) == 8 and alignment(T4, torch.float32) == 1
    assert alignment(P100, torch.float16) == 1


def test_cudnn_goes_first_on_hopper_with_a_recent_cudnn_only() -> None:
    hopper = _call(H100, cudnn=91600).extra[FACTS]
    older = _call(H100, cudnn=91500).extra[FACTS]
    ampere = _call(A100, cudnn=91600).extra[FACTS]
    assert cuda_rules.prefers_cudnn(hopper) and not cuda_rules.prefers_cudnn(older)
    assert not cuda_rules.prefers_cudnn(ampere)
    assert _chosen(_call(H100, cudnn=91600), cuda_rules.CUDNN_FIRST_ORDER) == "cudnn_attention"
