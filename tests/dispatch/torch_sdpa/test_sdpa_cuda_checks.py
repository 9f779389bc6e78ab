"""Each CUDA check of PyTorch's ``cuda/sdp_utils.cpp``, on the cases its code documents, from this CPU machine.

Calls are described on a GPU profile (``gpu=``), or built from real CPU tensors planned on one
(``context_from_call(..., gpu=...)``) where a check reads strides, storage offsets or nested
sizes. Each case names the check, the outcome and PyTorch's own words for a failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import torch

from inspector.dispatch import CallContext
from inspector.dispatch.torch_sdpa import cuda_rules, gpu_profile, trace_call
from inspector.dispatch.torch_sdpa.described import complete
from inspector.dispatch.torch_sdpa.family import context_from_call
from inspector.dispatch.torch_sdpa.names import FACTS
from inspector.dispatch.torch_sdpa.tables import SPECS

if TYPE_CHECKING:
    from inspector.dispatch.spec import ClauseCheck

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
A100, H100, T4, A10, B200 = (8, 0), (9, 0), (7, 5), (8, 6), (10, 0)


def described(
    gpu: Any,
    *,
    dtype: Any = torch.float16,
    head_dim: int = 64,
    ndim: int = 4,
    mask: bool = False,
    causal: bool = False,
    grad: bool = False,
    **extra: Any,
) -> CallContext:
    ctx = CallContext(
        "torch_sdpa",
        dtype=dtype,
        ndim=ndim,
        head_dim=head_dim,
        has_mask=mask,
        causal=causal,
        grad_enabled=grad,
        device_cuda=True,
        extra={"gpu": gpu, **extra},
    )
    return complete(ctx)


def with_cuda(ctx: CallContext, **changes: Any) -> CallContext:
    """``ctx`` with some of its CUDA facts changed (a flag the profile does not carry)."""
    facts = ctx.extra[FACTS]
    return ctx._replace(extra={**ctx.extra, FACTS: facts._replace(cuda=facts.cuda._replace(**changes))})


def failing(backend: str, ctx: CallContext) -> list[ClauseCheck]:
    return list(SPECS[backend].failures(ctx))


def assert_fails(backend: str, ctx: CallContext, check: str, words: str) -> None:
    failures = failing(backend, ctx)
    assert failures, f"{backend} accepted the call"
    first = failures[0]
    assert first.clause == check and words in first.message, f"{first.clause}: {first.message}"


def assert_passes(backend: str, ctx: CallContext, check: str | None = None) -> None:
    names = [c.clause for c in failing(backend, ctx)]
    assert (check not in names) if check else names == [], names


# -- flash ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sm", [(8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0), (12, 1)])
def test_flash_runs_on_sm80_to_sm121(sm: tuple[int, int]) -> None:
    assert_passes("flash_attention", described(sm, grad=False), "check_flash_attention_hardware_support")


@pytest.mark.parametrize("sm", [(7, 5), (7, 0), (6, 1), (12, 2)])
def test_flash_refuses_other_architectures(sm: tuple[int, int]) -> None:
    assert_fails(
        "flash_attention",
        described(sm),
        "check_flash_attention_hardware_support",
        "Flash attention only supports gpu architectures in the range [sm80, sm121].",
    )


@pytest.mark.parametrize(
    ("dtype", "ok"), [(torch.float16, True), (torch.bfloat16, True), (torch.float32, False), (torch.float64, False)]
)
def test_flash_takes_half_precision_only(dtype: Any, ok: bool) -> None:
    ctx = described(A100, dtype=dtype)
    if ok:
        assert_passes("flash_attention", ctx)
    else:
        assert_fails(
            "flash_attention",
            ctx,
            "check_dtypes_flash_attention",
            "Expected query, key and value to all be of dtype: {Half, BFloat16}.",
        )


def test_flash_takes_float8_only_with_fa3_on_sm90() -> None:
    ctx = described(H100, dtype=torch.float8_e4m3fn)
    assert_fails("flash_attention", ctx, "check_dtypes_flash_attention", "{Half, BFloat16}")
    assert_passes("flash_attention", with_cuda(ctx, fa3_enabled=True), "check_dtypes_flash_attention")
    assert_fails(
        "flash_attention",
        with_cuda(described(A100, dtype=torch.float8_e4m3fn), fa3_enabled=True),
        "check_dtypes_flash_attention",
        "{Half, BFloat16}",
    )


@pytest.mark.parametrize(
    ("head_dim", "value_head_dim", "ok"), [(256, None, True), (257, None, False), (64, 32, False), (8, None, True)]
)
def test_flash_needs_equal_head_dims_up_to_256(head_dim: int, value_head_dim: int | None, ok: bool) -> None:
    ctx = described(A100, head_dim=head_dim, value_head_dim=value_head_dim)
    if ok:
        assert_passes("flash_attention", ctx)
    else:
        assert_fails(
            "flash_attention",
            ctx,
            "check_head_dim_size_flash",
            "Flash attention requires q,k,v to have the same last dimension and to be less than or equal to 256.",
        )


def test_flash_takes_no_mask_and_four_dimensions() -> None:
    assert_fails(
        "flash_attention",
        described(A100, mask=True),
        "check_for_attn_mask",
        "Flash Attention does not support non-null attn_mask.",
    )
    assert_fails(
        "flash_attention",
        described(A100, ndim=3),
        "check_tensor_shapes",
        "All fused kernels requires query, key and value to be 4 dimensional",
    )


@pytest.mark.parametrize(
    ("causal", "seq", "kv", "ok"),
    [(True, 16, 32, False), (True, 32, 32, True), (False, 16, 32, True), (True, 1, 64, False)],
)
def test_flash_refuses_is_causal_with_unequal_lengths(causal: bool, seq: int, kv: int, ok: bool) -> None:
    ctx = described(A100, causal=causal, seq_len=seq, kv_len=kv)
    if ok:
        assert_passes("flash_attention", ctx)
    else:
        assert_fails(
            "flash_attention",
            ctx,
            "check_flash_causal_non_square_seqlens",
            "Flash attention does not support the is_causal flag when seqlen_q != seqlen_k.",
        )


@pytest.mark.parametrize(
    ("sm", "head_dim", "dropout", "grad", "ok"),
    [
        ((8, 6), 200, 0.0, True, False),
        ((8, 6), 192, 0.0, True, True),
        ((8, 9), 232, 0.0, True, True),
        ((8, 9), 232, 0.25, True, False),
        ((8, 0), 200, 0.0, True, True),
        ((12, 0), 200, 0.0, True, False),
        ((8, 6), 200, 0.0, False, True),
    ],
)
def test_flash_training_with_large_head_dims_on_sm86_to_89_and_sm120(
    sm: tuple[int, int], head_dim: int, dropout: float, grad: bool, ok: bool
) -> None:
    ctx = described(sm, head_dim=head_dim, dropout_p=dropout, grad=grad)
    check = "check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120"
    if ok:
        assert_passes("flash_attention", ctx, check)
    else:
        assert_fails(
            "flash_attention",
            ctx,
            check,
            "Flash attention currently doesn't support training with head_dim ∈ (192, 224]",
        )


def test_grouped_query_heads_need_enable_gqa_and_heads_that_divide() -> None:
    assert_passes("flash_attention", described(A100, heads=8, kv_heads=2, enable_gqa=True))
    assert_fails(
        "flash_attention",
        described(A100, heads=8, kv_heads=2),
        "check_batch_size_and_num_heads_dense",
        "For dense input, both fused kernels require query, key and value to have the same num_heads.",
    )
    assert_fails(
        "flash_attention",
        described(A100, heads=8, kv_heads=3, enable_gqa=True),
        "check_batch_size_and_num_heads_dense",
        "The number of heads in key/value must divide number of heads in query.",
    )
    q, k, v = (
        torch.empty(1, 8, 16, 64, dtype=torch.half),
        torch.empty(1, 2, 16, 64, dtype=torch.half),
        torch.empty(1, 4, 16, 64, dtype=torch.half),
    )
    assert_fails(
        "flash_attention",
        context_from_call(q, k, v, enable_gqa=True, gpu="a100"),
        "check_batch_size_and_num_heads_dense",
        "Both fused kernels require key and value to have the same num_heads and batch_size",
    )
    # cuDNN takes key and value heads that differ, as long as each divides the query's
    assert_passes(
        "cudnn_attention",
        context_from_call(q, k, v, enable_gqa=True, gpu="h100"),
        "check_batch_size_and_num_heads_dense",
    )


def test_empty_sequences_and_strides_are_refused_by_every_fused_kernel() -> None:
    for backend in ("flash_attention", "efficient_attention", "cudnn_attention"):
        assert_fails(
            backend,
            described(H100, seq_len=0),
            "check_nonzero_sequence_lengths_dense",
            "All fused kernels do not support zero seq_len_q or seq_len_kv.",
        )
    q = torch.empty(1, 4, 64, 16, dtype=torch.half).transpose(-1, -2)  # last dimension has stride 64
    for backend in ("flash_attention", "efficient_attention"):
        assert_fails(
            backend,
            context_from_call(q, q, q, gpu="a100"),
            "check_last_dim_stride_equals_1_dense",
            "All fused kernels require the last dimension of the input to have stride 1.",
        )
    one = torch.empty(1, 4, 1, 16, dtype=torch.half).transpose(-1, -2)  # head_dim 1: flash ignores its stride
    assert_passes(
        "flash_attention", context_from_call(one, one, one, gpu="a100"), "check_last_dim_stride_equals_1_dense"
    )


def test_runtime_flags_and_the_build_decide_first() -> None:
    assert_fails(
        "flash_attention",
        described(A100, enabled="math"),
        "check_runtime_disabled_flash",
        "Flash attention has been runtime disabled.",
    )
    assert_fails(
        "flash_attention",
        described(gpu_profile("a100")._replace(flash_built=False)),
        "can_use_flash_attention",
        "Torch was not compiled with flash attention.",
    )
    assert_fails(
        "efficient_attention",
        described(A100, enabled="math"),
        "check_runtime_disabled_mem_efficient",
        "Memory Efficient attention has been runtime disabled.",
    )
    assert_fails(
        "cudnn_attention",
        described(H100, enabled="math"),
        "check_runtime_disabled_cudnn",
        "cuDNN attention has been runtime disabled.",
    )


def _nested(head_dim: int, lengths: tuple[int, ...] = (5, 9), dtype: Any = torch.half) -> Any:
    return torch.nested.nested_tensor([torch.empty(4, n, head_dim, dtype=dtype) for n in lengths])


def test_nested_inputs_follow_the_nested_checks() -> None:
    q = _nested(16)
    assert trace_call(q, q, q, gpu="a100").chosen == "flash_attention"
    odd = _nested(12)
    assert_fails(
        "flash_attention",
        context_from_call(odd, odd, odd, gpu="a100"),
        "check_head_dim_size_flash_nested",
        "For NestedTensor inputs, Flash attention requires q,k,v to have the same last dimension and to be "
        "a multiple of 8",
    )
    empty = _nested(16, (0, 9))
    assert_fails(
        "flash_attention",
        context_from_call(empty, empty, empty, gpu="a100"),
        "check_for_seq_len_0_nested_tensor",
        "Fused kernels do not support seq_len == 0, query has a seq len of 0.",
    )
    trained = _nested(16).requires_grad_(True)
    assert_fails(
        "efficient_attention",
        context_from_call(trained, trained, trained, gpu="a100"),
        "check_requires_grad_and_nested",
        "Memory efficient attention currently doesn't support training with NT inputs.",
    )


def test_cudnn_takes_nested_inputs_only_when_switched_on_and_on_sm90_or_sm100(monkeypatch: pytest.MonkeyPatch) -> None:
    long = _nested(64, (130, 200))
    assert_fails(
        "cudnn_attention",
        context_from_call(long, long, long, gpu="h100"),
        "check_for_nested_inputs",
        "Experimental cuDNN SDPA nested tensor support is not enabled.",
    )
    monkeypatch.setenv("TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED", "1")
    assert_fails(
        "cudnn_attention",
        context_from_call(long, long, long, gpu="a100"),
        "check_for_nested_inputs",
        "cuDNN SDPA supports nested tensors on SM 9.0, SM 10.0.",
    )
    assert_passes("cudnn_attention", context_from_call(long, long, long, gpu="h100"), "check_for_nested_inputs")
    short = _nested(64, (100, 128))
    assert_fails(
        "cudnn_attention",
        context_from_call(short, short, short, gpu="h100"),
        "check_cudnn_query_seq_len_nested",
        "cuDNN attention does not support nested tensor query sequence length <= 128.",
    )


# -- memory-efficient ------------------------------------------------------------------------
@pytest.mark.parametrize(("sm", "ok"), [((5, 0), True), ((3, 7), False), ((12, 1), True), ((12, 2), False)])
def test_efficient_runs_on_sm50_to_sm121(sm: tuple[int, int], ok: bool) -> None:
    ctx = described(sm, dtype=torch.float32)
    if ok:
        assert_passes("efficient_attention", ctx, "check_mem_efficient_hardware_support")
    else:
        assert_fails(
            "efficient_attention",
            ctx,
            "check_mem_efficient_hardware_support",
            "Mem Efficient Attention only supports gpu architectures in the range [sm50, sm121].",
        )


@pytest.mark.parametrize(
    ("sm", "dtype", "head_dim", "ok"),
    [
        (A100, torch.float16, 60, False),
        (A100, torch.float32, 60, True),
        (A100, torch.float32, 62, False),
        (T4, torch.float32, 61, True),
        (T4, torch.float16, 60, False),
        ((6, 0), torch.float16, 61, True),
    ],
)
def test_efficient_head_dims_follow_the_gemm_alignment(
    sm: tuple[int, int], dtype: Any, head_dim: int, ok: bool
) -> None:
    ctx = described(sm, dtype=dtype, head_dim=head_dim)
    if ok:
        assert_passes("efficient_attention", ctx, "check_head_dim_size_mem_efficient")
    else:
        assert_fails(
            "efficient_attention",
            ctx,
            "check_head_dim_size_mem_efficient",
            "Mem efficient attention requires last dimension of inputs to be divisible by",
        )


def test_efficient_needs_aligned_storage_offsets_from_sm80() -> None:
    base = torch.empty(1, 2, 16, 65, dtype=torch.half)
    shifted = base[..., 1:]  # storage offset 1 element: 2 bytes, not the 16 an fp16 GEMM needs on sm 8.0
    assert_fails(
        "efficient_attention",
        context_from_call(shifted, shifted, shifted, gpu="a100"),
        "check_data_ptr_alignment_mem_efficient",
        "Mem efficient attention on sm80 or newer requires q, k, and v storage offsets * element_size to be aligned",
    )
    assert_passes(
        "efficient_attention",
        context_from_call(shifted, shifted, shifted, gpu="t4"),
        "check_data_ptr_alignment_mem_efficient",
    )


@pytest.mark.parametrize(
    ("sm", "dtype", "ok"),
    [
        (T4, torch.bfloat16, False),
        (A100, torch.bfloat16, True),
        (T4, torch.float32, True),
        (A100, torch.float64, False),
    ],
)
def test_efficient_dtypes_follow_the_capability(sm: tuple[int, int], dtype: Any, ok: bool) -> None:
    ctx = described(sm, dtype=dtype)
    if ok:
        assert_passes("efficient_attention", ctx)
    else:
        assert_fails(
            "efficient_attention", ctx, "check_tensor_dtype", "Expected query, key and value to all be of dtype"
        )


def test_efficient_takes_a_mask_and_grouped_query_heads() -> None:
    assert_passes("efficient_attention", described(A100, mask=True, heads=8, kv_heads=2, enable_gqa=True))


# -- cuDNN ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cudnn", "dropout", "check", "words"),
    [
        ("8.9.7", 0.0, "can_use_cudnn_attention", "cuDNN version too old to use cuDNN Attention (< v9.0.0)"),
        ("9.12.0", 0.125, "can_use_cudnn_attention", "cuDNN version does not support droppout in SDPA (9.11 - 9.13)."),
        ("9.0.0", 0.1, "check_cudnn_dropout", "cuDNN dropout probability resolution is limited to 1/16."),
    ],
)
def test_cudnn_version_and_dropout_gates(cudnn: str, dropout: float, check: str, words: str) -> None:
    assert_fails("cudnn_attention", described(H100, cudnn=cudnn, dropout_p=dropout), check, words)


def test_cudnn_passes_where_those_gates_do_not_apply() -> None:
    assert_passes("cudnn_attention", described(H100, cudnn="9.14.0", dropout_p=0.125))
    assert_passes("cudnn_attention", described(A100, cudnn="9.0.0"))


def test_cudnn_refuses_what_its_own_checks_document() -> None:
    assert_fails(
        "cudnn_attention",
        described(T4),
        "check_cudnn_hardware_support",
        "cuDNN MHA only supports gpu architectures in the range [sm80, sm121].",
    )
    assert_fails(
        "cudnn_attention",
        described(H100, dtype=torch.float32),
        "check_dtypes_low_precision",
        "Expected query, key and value to all be of dtype: {Half, BFloat16}.",
    )
    assert_fails(
        "cudnn_attention",
        with_cuda(described(H100), deterministic=True),
        "check_cudnn_deterministic",
        "cuDNN SDPA is not deterministic.",
    )
    assert_passes("cudnn_attention", with_cuda(described(H100), deterministic=True, deterministic_warn_only=True))
    assert_fails(
        "cudnn_attention",
        described(H100, mask=True, mask_shape="3d"),
        "check_attn_mask_shape",
        "Please use the following attn mask shapes",
    )


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"head_dim": 256}, "head_dim should be no more than 128"),
        ({"head_dim": 68}, "head_dim should be a multiple of 8"),
        ({"kv_len": 1}, "cudnn SDPA does not support key/value sequence length 1."),
        (
            {"seq_len": 1, "kv_len": 64, "dropout_p": 0.125},
            "cudnn SDPA does not support query sequence length 1 with dropout.",
        ),
        ({"batch": 70000}, "cuDNN SDPA does not support batch size or num_heads greater than 65535."),
    ],
)
def test_cudnn_tensor_shapes(changes: dict[str, Any], words: str) -> None:
    head_dim = changes.pop("head_dim", 64)
    assert_fails("cudnn_attention", described(H100, head_dim=head_dim, **changes), "check_cudnn_tensor_shapes", words)


def test_cudnn_head_dims_up_to_256_need_sm90_a_recent_cudnn_and_its_frontend() -> None:
    d256 = gpu_profile("h100", cudnn="9.23.0")._replace(cudnn_d256=True)
    assert_passes("cudnn_attention", described(d256, head_dim=256))
    assert_fails(
        "cudnn_attention",
        described(gpu_profile("a100", cudnn="9.23.0")._replace(cudnn_d256=True), head_dim=256),
        "check_cudnn_tensor_shapes",
        "no more than 128",
    )
    assert_passes("cudnn_attention", described(H100, cudnn="9.11.0", head_dim=192, value_head_dim=128))
    assert_fails(
        "cudnn_attention",
        described(d256, head_dim=192, grad=True),
        "check_cudnn_d256_bprop_head_dim",
        "cuDNN SDPA on SM 9.0/10.x does not support backward with these head dimensions.",
    )
    assert_passes("cudnn_attention", described(d256, head_dim=256, grad=True))


@pytest.mark.parametrize(
    ("gpu", "cudnn", "cuda", "first"),
    [
        ("h100", 91501, (13, 0), True),
        ("h100", 91500, (13, 0), False),
        ("a100", 91501, (13, 0), False),
        ("b200", 91501, (13, 0), True),
        ((10, 3), 91600, (12, 8), True),
        ((12, 0), 91600, (13, 0), False),
        ((9, 0), 91600, (12, 8), True),
    ],
)
def test_cudnn_goes_first_on_sm90_and_sm100_with_a_recent_cudnn(
    gpu: Any, cudnn: int, cuda: tuple[int, int], first: bool
) -> None:
    profile = gpu_profile(gpu, cudnn=cudnn)._replace(cuda_version=cuda)
    assert cuda_rules.prefers_cudnn(described(profile).extra[FACTS]) is first


def test_deprioritised_cudnn_stays_in_the_default_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_CUDNN_SDPA_DEPRIORITIZED", "1")
    assert not cuda_rules.prefers_cudnn(described(H100).extra[FACTS])


# -- every preset on a fixed set of calls ------------------------------------------------------
CALLS = {  # what a model does, described
    "bf16 causal training": {"dtype": torch.bfloat16, "causal": True, "grad": True},
    "fp16 bool mask": {"dtype": torch.float16, "mask": True},
    "fp32": {"dtype": torch.float32},
    "bf16 head_dim 256 training": {"dtype": torch.bfloat16, "head_dim": 256, "grad": True},
    "bf16 one-token decode": {"dtype": torch.bfloat16, "seq_len": 1, "kv_len": 1024},
}
EXPECTED = {  # by the rules read from sdp_utils.cpp (cuDNN 9.15.1, CUDA 13.0, every backend enabled)
    "t4": ("math", "efficient_attention", "efficient_attention", "math", "math"),
    "a100": ("flash_attention", "efficient_attention", "efficient_attention", "flash_attention", "flash_attention"),
    "a10": ("flash_attention", "efficient_attention", "efficient_attention", "flash_attention", "flash_attention"),
    "a6000": ("flash_attention", "efficient_attention", "efficient_attention", "flash_attention", "flash_attention"),
    "3090": ("flash_attention", "efficient_attention", "efficient_attention", "flash_attention", "flash_attention"),
    "l4": ("flash_attention", "efficient_attention", "efficient_attention", "flash_attention", "flash_attention"),
    "4090": ("flash_attention", "efficient_attention", "efficient_attention", "flash_attention", "flash_attention"),
    "h100": ("cudnn_attention", "cudnn_attention", "efficient_attention", "flash_attention", "cudnn_attention"),
    "h200": ("cudnn_attention", "cudnn_attention", "efficient_attention", "flash_attention", "cudnn_attention"),
    "b200": ("cudnn_attention", "cudnn_attention", "efficient_attention", "flash_attention", "cudnn_attention"),
}


@pytest.mark.parametrize("preset", list(EXPECTED))
def test_every_preset_answers_the_fixed_calls(preset: str) -> None:
    from inspector.dispatch.torch_sdpa.family import trace_context

    got = tuple(trace_context(described(preset, **dict(options))).chosen for options in CALLS.values())
    assert got == EXPECTED[preset]
