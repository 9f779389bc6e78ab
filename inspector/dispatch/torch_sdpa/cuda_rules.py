"""PyTorch's CUDA SDPA dispatch (``cuda/sdp_utils.cpp``): flash and memory-efficient (cuDNN: ``cudnn_rules``).

Each ``can_use_*`` function of PyTorch is a list of checks; here each list is a conjunction of
clauses in the same order, over the call's facts (device capability, cuDNN version, build and
determinism flags are facts too, read once per device). The ROCm variants of these rules
(AOTriton, CK) are not ported: on a ROCm build the CUDA rules are shown as they read.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import torch

from inspector.dispatch.torch_sdpa import checks
from inspector.dispatch.torch_sdpa.facts import CUDNN, EFFICIENT, FLASH, MATH, OVERRIDEABLE, CudaFacts, SdpaCall

if TYPE_CHECKING:
    from inspector.dispatch.spec import Spec

HALF = (torch.float16, torch.bfloat16)
DEFAULT_ORDER = (FLASH, EFFICIENT, MATH, CUDNN, OVERRIDEABLE)
CUDNN_FIRST_ORDER = (CUDNN, FLASH, EFFICIENT, MATH, OVERRIDEABLE)


def cuda_of(f: SdpaCall) -> CudaFacts:
    assert f.cuda is not None, "CUDA rules read CUDA facts"
    return f.cuda


def sm_in(f: SdpaCall, low: tuple[int, int], high: tuple[int, int]) -> bool:
    return low <= cuda_of(f).sm <= high


def sm_text(f: SdpaCall) -> str:
    major, minor = cuda_of(f).sm
    return f"sm {major}.{minor}"


def last_dim(f: SdpaCall, index: int) -> int:
    return int(f.shapes[index][-1]) if f.shapes[index] else 0


def _is_half(f: SdpaCall) -> bool:
    return f.dtypes[0] in HALF


def minimum_gemm_alignment(f: SdpaCall) -> int:
    """The element alignment the memory-efficient kernel needs for this dtype and device."""
    major = cuda_of(f).sm[0]
    use_tensor_cores = major >= 8 or (major >= 7 and _is_half(f))
    alignment = 4 if major >= 8 else 1
    if use_tensor_cores:
        alignment = max(alignment, 128 // (16 if _is_half(f) else 32))
    return alignment


def dense_4d(f: SdpaCall) -> bool:
    return f.dense4d


# -- flash ---------------------------------------------------------------------------------
def _head_dim_flash(f: SdpaCall) -> bool:
    if any(not s for s in f.shapes):
        return True
    return checks.same_head_dim(f) and last_dim(f, 0) <= 256


def _head_dim_flash_nested(f: SdpaCall) -> bool:
    if not f.nested or any(not s for s in f.shapes):
        return True
    return checks.same_head_dim(f) and last_dim(f, 0) % 8 == 0 and last_dim(f, 0) <= 256


def _flash_grad_head_dim(f: SdpaCall) -> bool:
    if not (f.requires_grad and (sm_in(f, (8, 6), (8, 9)) or sm_in(f, (12, 0), (12, 1)))):
        return True
    head_dim = last_dim(f, 0)
    return head_dim <= 192 or (not f.dropout_p > 0.0 and head_dim > 224)


def _causal_square(f: SdpaCall) -> bool:
    if not f.is_causal or f.nested or any(len(s) < 2 for s in f.shapes[:2]):
        return True
    return f.shapes[0][-2] == f.shapes[1][-2]


def _flash_dtypes(f: SdpaCall) -> tuple[torch.dtype, ...]:
    cuda = cuda_of(f)
    if cuda.sm[0] >= 9 and cuda.fa3_enabled:
        return (torch.float8_e4m3fn, *HALF)
    return HALF if cuda.sm[0] >= 8 else (torch.float16,)


def _batch_nested(f: SdpaCall) -> bool:
    if not f.nested:
        return True
    batches = [s[0] for s in f.shapes]
    if len(set(batches)) == 1:
        return True
    if f.requires_grad:
        return False
    top = max(batches)
    return all(b in (1, top) for b in batches)


def _nested_seq_problem(f: SdpaCall) -> str:
    """``check_for_seq_len_0_nested_tensor``: the first problem of nested inputs, or ``""``."""
    if not f.nested:
        return ""
    for name, shape, seq in zip(("query", "key", "value"), f.shapes, f.nested_seq or (None,) * 3, strict=True):
        if seq is None:
            continue
        if len(shape) > 1 and shape[1] == -1:
            return f"Fused kernels do not support ragged num_head_dims, {name} has a ragged num_heads."
        if seq[0] == 0:
            return f"Fused kernels do not support seq_len == 0, {name} has a seq len of 0."
    heads = [s[1] if len(s) > 1 else 1 for s in f.shapes]
    if len(set(heads)) > 1:
        if f.requires_grad:
            return "Both fused kernels do not support training with broadcasted NT inputs."
        if any(h not in (1, max(heads)) for h in heads):
            return "Both fused kernels require query, key and value to have broadcastable num heads."
    return ""


CHECK_SEQ_LEN_0_NESTED = checks.rule(
    "check_for_seq_len_0_nested_tensor",
    lambda f: not _nested_seq_problem(f),
    required="nested inputs: no empty sequence, no ragged or unbroadcastable head counts",
    message=lambda f: _nested_seq_problem(f) or "nested inputs",
    show=checks.sizes,
)


def built(name: str, attribute: str, words: str) -> Spec:
    return checks.rule(
        name,
        f"@.cuda.{attribute}",
        required="a build with this kernel",
        message=words,
        show=lambda f: f"{attribute} = {getattr(cuda_of(f), attribute)}",
    )


_flash_batch, _flash_heads = checks.batch_and_heads_check(supports_gqa=True)
FLASH_CLAUSES = (
    built("can_use_flash_attention", "flash_built", "Torch was not compiled with flash attention."),
    checks.runtime_enabled(FLASH, "check_runtime_disabled_flash", "Flash attention has been runtime disabled."),
    checks.CHECK_TENSOR_SHAPES,
    checks.CHECK_FOR_ATTN_MASK,
    checks.rule(
        "check_head_dim_size_flash",
        _head_dim_flash,
        required="the same last dimension for q, k, v, at most 256",
        message="Flash attention requires q,k,v to have the same last dimension and to be less than or equal to 256.",
        show=checks.head_dims,
    ),
    checks.rule(
        "check_flash_attention_hardware_support",
        lambda f: sm_in(f, (8, 0), (12, 1)),
        required="sm 8.0 to 12.1",
        message="Flash attention only supports gpu architectures in the range [sm80, sm121].",
        show=sm_text,
    ),
    checks.rule(
        "check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120",
        _flash_grad_head_dim,
        required="head_dim <= 192 (or > 224 without dropout) when training on sm 8.6-8.9 or 12.x",
        message="Flash attention currently doesn't support training with head_dim ∈ (192, 224] or "
        "(head_dim ∈ (224, 256] and dropout > 0.0) on gpu architectures in the range[sm86, sm89].",
        show=lambda f: (
            f"head_dim: {last_dim(f, 0)}, dropout_p: {f.dropout_p:g}, requires_grad: {f.requires_grad}, {sm_text(f)}"
        ),
    ),
    checks.rule(
        "check_flash_causal_non_square_seqlens",
        _causal_square,
        required="seqlen_q == seqlen_k with is_causal",
        message="Flash attention does not support the is_causal flag when seqlen_q != seqlen_k.",
        show=lambda f: f"is_causal: {f.is_causal}, seqlen_q: {f.shapes[0][-2]}, seqlen_k: {f.shapes[1][-2]}",
    ),
    checks.tensor_dtype_check("check_dtypes_flash_attention", _flash_dtypes),
    checks.rule(
        "check_batch_size_nested",
        _batch_nested,
        required="broadcastable batch sizes (nested inputs)",
        message="Both fused kernels require query, key and value to have broadcastable batch size.",
        show=checks.sizes,
    ),
    checks.rule(
        "check_head_dim_size_flash_nested",
        _head_dim_flash_nested,
        required="nested: the same last dimension, a multiple of 8, at most 256",
        message="For NestedTensor inputs, Flash attention requires q,k,v to have the same last dimension and to be "
        "a multiple of 8 and less than or equal to 256.",
        show=checks.head_dims,
    ),
    CHECK_SEQ_LEN_0_NESTED,
    _flash_batch,
    _flash_heads,
    checks.CHECK_NONZERO_SEQUENCE_LENGTHS,
    checks.last_dim_stride_check(ignore_singleton_dim=True, cpu=False),
)


# -- memory-efficient ------------------------------------------------------------------------
def _head_dim_mem_efficient(f: SdpaCall) -> bool:
    if any(not s for s in f.shapes):
        return True
    q, k, v = last_dim(f, 0), last_dim(f, 1), last_dim(f, 2)
    alignment = minimum_gemm_alignment(f)
    return q == k and q % alignment == 0 and q > 0 and v % alignment == 0 and v > 0


def _pointer_alignment(f: SdpaCall) -> bool:
    cuda = cuda_of(f)
    if f.nested or cuda.sm[0] < 8:
        return True
    alignment_bytes = minimum_gemm_alignment(f) * cuda.element_size
    return all(
        n == 0 or offset % alignment_bytes == 0
        for offset, n in zip(cuda.storage_offset_bytes, cuda.numels, strict=True)
    )


def _mem_efficient_dtypes(f: SdpaCall) -> tuple[torch.dtype, ...]:
    if cuda_of(f).sm[0] >= 8:
        return (torch.float16, torch.float32, torch.bfloat16)
    return (torch.float16, torch.float32)


_efficient_batch, _efficient_heads = checks.batch_and_heads_check(supports_gqa=True)
EFFICIENT_CLAUSES = (
    built(
        "can_use_mem_efficient_attention",
        "mem_efficient_built",
        "Torch was not compiled with memory efficient attention.",
    ),
    checks.runtime_enabled(
        EFFICIENT, "check_runtime_disabled_mem_efficient", "Memory Efficient attention has been runtime disabled."
    ),
    checks.rule(
        "check_mem_efficient_hardware_support",
        lambda f: sm_in(f, (5, 0), (12, 1)),
        required="sm 5.0 to 12.1",
        message="Mem Efficient Attention only supports gpu architectures in the range [sm50, sm121].",
        show=sm_text,
    ),
    checks.CHECK_TENSOR_SHAPES,
    checks.rule(
        "check_head_dim_size_mem_efficient",
        _head_dim_mem_efficient,
        required="q and k share the last dimension; q and v last dimensions divisible by the GEMM alignment",
        message=lambda f: (
            f"Mem efficient attention requires last dimension of inputs to be divisible by {minimum_gemm_alignment(f)}."
        ),
        show=checks.head_dims,
    ),
    checks.rule(
        "check_data_ptr_alignment_mem_efficient",
        _pointer_alignment,
        required="storage offsets aligned to the GEMM alignment (sm 8.0 and newer)",
        message="Mem efficient attention on sm80 or newer requires q, k, and v storage offsets * element_size to be "
        "aligned.",
        show=lambda f: f"storage offsets (bytes): {cuda_of(f).storage_offset_bytes}",
    ),
    checks.rule(
        "check_requires_grad_and_nested",
        lambda f: not (f.nested and f.requires_grad),
        required="no training with NT",
        message="Memory efficient attention currently doesn't support training with NT inputs.",
        show=lambda f: f"nested: {f.nested}, requires_grad: {f.requires_grad}",
    ),
    checks.rule(
        "check_batch_size_nested",
        _batch_nested,
        required="broadcastable batch sizes (nested inputs)",
        message="Both fused kernels require query, key and value to have broadcastable batch size.",
        show=checks.sizes,
    ),
    CHECK_SEQ_LEN_0_NESTED,
    checks.CHECK_NONZERO_SEQUENCE_LENGTHS,
    checks.last_dim_stride_check(ignore_singleton_dim=False, cpu=False),
    _efficient_batch,
    _efficient_heads,
    checks.tensor_dtype_check("check_tensor_dtype", _mem_efficient_dtypes),
)


FLASH_CUDA = checks.all_of(FLASH_CLAUSES)
EFFICIENT_CUDA = checks.all_of(EFFICIENT_CLAUSES)

OVERRIDEABLE_CUDA = checks.rule(
    "select_sdp_backend",
    "False",
    required="a device with an overrideable backend (PrivateUse1, XPU, HPU)",
    message="PyTorch's CUDA dispatch raises 'Invalid backend' if it reaches the overrideable backend.",
    show=lambda f: f"{f.device} tensors",
)


def prefers_cudnn(f: SdpaCall) -> bool:
    """Whether PyTorch puts cuDNN first on this device the first time it dispatches (sm 9.x/10.x)."""
    if os.environ.get("TORCH_CUDNN_SDPA_DEPRIORITIZED", "").lower() in ("1", "true", "on", "yes"):
        return False
    cuda = cuda_of(f)
    major, minor = cuda.sm
    if cuda.cuda_version < (13, 0):
        return cuda.cudnn_version > 91500 and major in (9, 10) and minor in (0, 3)
    return cuda.cudnn_version > 91500 and major in (9, 10)


__all__ = [
    "CUDNN_FIRST_ORDER",
    "DEFAULT_ORDER",
    "EFFICIENT_CUDA",
    "FLASH_CUDA",
    "MATH",
    "OVERRIDEABLE_CUDA",
    "prefers_cudnn",
]
