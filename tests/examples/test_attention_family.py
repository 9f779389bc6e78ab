"""Every attention row is checked against the reference on random inputs, within stated tolerances."""

from __future__ import annotations

import pytest
import torch

from inspector.dispatch import CallContext, ExplicitSelectionError, op_backend, run_rows
from inspector.examples import attention, attention_context
from inspector.examples.attention import (
    QUANTIZED_TOLERANCE,
    TOLERANCES,
    chunked_attention,
    math_attention,
    quantized_attention,
    sample_attention,
    sdpa_attention,
)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def inputs(dtype: torch.dtype, kv_len: int = 96, q_len: int = 24, head_dim: int = 32, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 3, q_len, head_dim, generator=generator).to(dtype)
    k = torch.randn(2, 3, kv_len, head_dim, generator=generator).to(dtype)
    v = torch.randn(2, 3, kv_len, head_dim, generator=generator).to(dtype)
    return q, k, v


def assert_close(got: torch.Tensor, want: torch.Tensor, tolerance: tuple[float, float]) -> None:
    atol, rtol = tolerance
    torch.testing.assert_close(got.double(), want.double(), atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("masking", ["none", "bool", "float", "causal"])
@pytest.mark.parametrize("row", [sdpa_attention, chunked_attention])
def test_faithful_rows_match_the_reference(row, dtype: torch.dtype, masking: str) -> None:
    q, k, v = inputs(dtype)
    mask, causal = None, masking == "causal"
    if masking == "bool":
        mask = torch.rand(24, 96, generator=torch.Generator().manual_seed(1)) > 0.3
        mask[:, 0] = True
    elif masking == "float":
        mask = torch.randn(24, 96, generator=torch.Generator().manual_seed(2)).to(dtype)
    got = row(q, k, v, mask, is_causal=causal)
    assert got.dtype == dtype and got.shape == q.shape
    assert_close(got, math_attention(q, k, v, mask, is_causal=causal), TOLERANCES[dtype])


def test_chunked_crosses_chunk_boundaries_exactly() -> None:
    q, k, v = inputs(torch.float64, kv_len=1100)
    torch.testing.assert_close(chunked_attention(q, k, v, chunk=256), math_attention(q, k, v), atol=1e-10, rtol=1e-10)


def test_math_reference_matches_a_direct_softmax_in_float64() -> None:
    q, k, v = inputs(torch.float64)
    want = torch.softmax(q @ k.transpose(-2, -1) / 32**0.5, dim=-1) @ v
    torch.testing.assert_close(math_attention(q, k, v), want)
    assert_close(sdpa_attention(*inputs(torch.float64)), want, TOLERANCES[torch.float64])


@pytest.mark.parametrize("dtype", DTYPES)
def test_quantized_stays_within_its_stated_tolerance_but_changes_numerics(dtype: torch.dtype) -> None:
    q, k, v = inputs(dtype)
    reference = math_attention(q, k, v)
    got = quantized_attention(q, k, v)
    assert_close(got, reference, QUANTIZED_TOLERANCE)
    if dtype == torch.float32:  # visibly outside the faithful tolerance: that is why it is unfaithful
        assert (got - reference).abs().max() > TOLERANCES[torch.float32][0] * 10


def test_mask_and_is_causal_together_are_refused_like_sdpa() -> None:
    q, k, v = inputs(torch.float32)
    with pytest.raises(ValueError, match="not both"):
        math_attention(q, k, v, torch.ones(24, 96, dtype=torch.bool), is_causal=True)


def test_attention_op_dispatches_by_context() -> None:
    q, k, v = inputs(torch.float32, kv_len=2048)
    with torch.no_grad():
        ctx = attention_context(q, k, v)
        assert ctx.extra["kv_len"] == 2048 and not ctx.grad_enabled
        assert_close(attention(q, k, v), math_attention(q, k, v), TOLERANCES[torch.float32])
    with op_backend(attention="chunked"), pytest.raises(ExplicitSelectionError, match="grad_enabled"):
        attention(q, k, v)  # grad is on: the chunked row declines
    out = attention(q, k, v, backend="math")
    assert out.shape == q.shape


def test_run_rows_compares_every_capable_row_with_the_reference() -> None:
    ctx = CallContext(
        "attention", fwd="prefill", dtype=torch.float32, ndim=4, head_dim=64, grad_enabled=False, extra={"kv_len": 1024}
    )
    runs = {r.row: r for r in run_rows("attention", ctx, repeats=1)}
    assert runs["math"].status == "reference"
    assert runs["flash"].status == "skipped" and "unavailable" in runs["flash"].detail
    for name in ("sdpa", "chunked"):
        assert runs[name].status == "ok" and runs[name].within_tolerance, runs[name]
    assert runs["quantized"].status == "ok" and runs["quantized"].within_tolerance is False
    assert not runs["quantized"].faithful


def test_run_rows_skips_rows_that_cannot_handle_the_context_and_says_why() -> None:
    ctx = CallContext("attention", dtype=torch.float64, ndim=4, head_dim=32, has_mask=True)
    runs = {r.row: r for r in run_rows("attention", ctx, repeats=1)}
    assert runs["sdpa"].status == "skipped" and "dtype" in runs["sdpa"].detail
    assert runs["chunked"].status == "skipped" and "has_mask" in runs["chunked"].detail


def test_sampler_builds_inputs_that_produce_the_same_context() -> None:
    ctx = CallContext("attention", dtype=torch.bfloat16, ndim=4, head_dim=32, has_mask=True, extra={"kv_len": 64})
    args, kwargs = sample_attention(ctx, torch.Generator().manual_seed(0))
    rebuilt = attention_context(*args, **kwargs)
    assert (rebuilt.dtype, rebuilt.head_dim, rebuilt.has_mask, rebuilt.extra["kv_len"]) == (
        torch.bfloat16,
        32,
        True,
        64,
    )


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_flash_matches_the_reference_on_cuda(dtype: torch.dtype) -> None:
    from inspector.examples.attention import flash_attention

    q, k, v = (t.cuda() for t in inputs(dtype, head_dim=64))
    with torch.no_grad():
        ctx = attention_context(q, k, v)
        assert attention(q, k, v, backend="flash").dtype == dtype
    from inspector.dispatch import resolve

    assert resolve("attention", ctx).name == "flash"
    assert_close(flash_attention(q, k, v), math_attention(q, k, v), TOLERANCES[dtype])
