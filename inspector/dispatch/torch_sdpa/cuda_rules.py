"""PyTorch's CUDA SDPA dispatch (``cuda/sdp_utils.cpp``): flash, memory-efficient and cuDNN.

Each ``can_use_*`` function of PyTorch is a list of checks; here each list is a conjunction of
clauses in the same order, over the call's facts (device capability, cuDNN version, build and
determinism flags are facts too, read once per device). The ROCm variants of these rules
(AOTriton, CK) are not ported: on a ROCm build the CUDA rules are shown as they read.
"""

from __future__ import annotations

import math
import os

import torch

from inspector.dispatch.spec import Spec
from inspector.dispatch.torch_sdpa import checks
from inspector.dispatch.torch_sdpa.facts import CUDNN, EFFICIENT, FLASH, MATH, OVERRIDEABLE, CudaFacts, SdpaCall

HALF = (torch.float16, torch.bfloat16)
DEFAULT_ORDER = (FLASH, EFFICIENT, MATH, CUDNN, OVERRIDEABLE)
CUDNN_FIRST_ORDER = (CUDNN, FLASH, EFFICIENT, MATH, OVERRIDEABLE)


def _cuda(f: SdpaCall) -> CudaFacts:
    assert f.cuda is not None, "CUDA rules read CUDA facts"
    return f.cuda


def _sm_in(f: SdpaCall, low: tuple[int, int], high: tuple[int, int]) -> bool:
    return low <= _cuda(f).sm <= high


def _sm(f: SdpaCall) -> str:
    major, minor = _cuda(f).sm
    return f"sm {major}.{minor}"


def _last(f: SdpaCall, index: int) -> int:
    return int(f.shapes[index][-1]) if f.shapes[index] else 0


def _is_half(f: SdpaCall) -> bool:
    return f.dtypes[0] in HALF


def minimum_gemm_alignment(f: SdpaCall) -> int:
    """The element alignment the memory-efficient kernel needs for this dtype and device."""
    major = _cuda(f).sm[0]
    use_tensor_cores = major >= 8 or (major >= 7 and _is_half(f))
    alignment = 4 if major >= 8 else 1
    if use_tensor_cores:
        alignment = max(alignment, 128 // (16 if _is_half(f) else 32))
    return alignment


def _applies_dense_4d(f: SdpaCall) -> bool:
    return f.dense4d


# -- flash ---------------------------------------------------------------------------------
def _head_dim_flash(f: SdpaCall) -> bool:
    if any(not s for s in f.shapes):
        return True
    return checks.same_head_dim(f) and _last(f, 0) <= 256


def _head_dim_flash_nested(f: SdpaCall) -> bool:
    if not f.nested or any(not s for s in f.shapes):
        return True
    return checks.same_head_dim(f) and _last(f, 0) % 8 == 0 and _last(f, 0) <= 256


def _flash_grad_head_dim(f: SdpaCall) -> bool:
    if not (f.requires_grad and (_sm_in(f, (8, 6), (8, 9)) or _sm_in(f, (12, 0), (12, 1)))):
        return True
    head_dim = _last(f, 0)
    return head_dim <= 192 or (not f.dropout_p > 0.0 and head_dim > 224)


def _causal_square(f: SdpaCall) -> bool:
    if not f.is_causal or f.nested or any(len(s) < 2 for s in f.shapes[:2]):
        return True
    return f.shapes[0][-2] == f.shapes[1][-2]


def _flash_dtypes(f: SdpaCall) -> tuple[torch.dtype, ...]:
    cuda = _cuda(f)
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


def _built(name: str, attribute: str, words: str) -> Spec:
    return checks.rule(
        name, f"@.cuda.{attribute}", required="a build with this kernel", message=words,
        show=lambda f: f"{attribute} = {getattr(_cuda(f), attribute)}",
    )


_flash_batch, _flash_heads = checks.batch_and_heads_check(supports_gqa=True)
FLASH_CLAUSES = (
    _built("can_use_flash_attention", "flash_built", "Torch was not compiled with flash attention."),
    checks.runtime_enabled(FLASH, "check_runtime_disabled_flash", "Flash attention has been runtime disabled."),
    checks.CHECK_TENSOR_SHAPES,
    checks.CHECK_FOR_ATTN_MASK,
    checks.rule(
        "check_head_dim_size_flash", _head_dim_flash, required="the same last dimension for q, k, v, at most 256",
        message="Flash attention requires q,k,v to have the same last dimension and to be less than or equal to 256.",
        show=checks.head_dims,
    ),
    checks.rule(
        "check_flash_attention_hardware_support", lambda f: _sm_in(f, (8, 0), (12, 1)), required="sm 8.0 to 12.1",
        message="Flash attention only supports gpu architectures in the range [sm80, sm121].", show=_sm,
    ),
    checks.rule(
        "check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120", _flash_grad_head_dim,
        required="head_dim <= 192 (or > 224 without dropout) when training on sm 8.6-8.9 or 12.x",
        message="Flash attention currently doesn't support training with head_dim ∈ (192, 224] or "
                "(head_dim ∈ (224, 256] and dropout > 0.0) on gpu architectures in the range[sm86, sm89].",
        show=lambda f: (
            f"head_dim: {_last(f, 0)}, dropout_p: {f.dropout_p:g}, requires_grad: {f.requires_grad}, {_sm(f)}"
        ),
    ),
    checks.rule(
        "check_flash_causal_non_square_seqlens", _causal_square, required="seqlen_q == seqlen_k with is_causal",
        message="Flash attention does not support the is_causal flag when seqlen_q != seqlen_k.",
        show=lambda f: f"is_causal: {f.is_causal}, seqlen_q: {f.shapes[0][-2]}, seqlen_k: {f.shapes[1][-2]}",
    ),
    checks.tensor_dtype_check("check_dtypes_flash_attention", _flash_dtypes),
    checks.rule(
        "check_batch_size_nested", _batch_nested, required="broadcastable batch sizes (nested inputs)",
        message="Both fused kernels require query, key and value to have broadcastable batch size.",
        show=checks.sizes,
    ),
    checks.rule(
        "check_head_dim_size_flash_nested", _head_dim_flash_nested,
        required="nested: the same last dimension, a multiple of 8, at most 256",
        message="For NestedTensor inputs, Flash attention requires q,k,v to have the same last dimension and to be "
                "a multiple of 8 and less than or equal to 256.",
        show=checks.head_dims,
    ),
    _flash_batch,
    _flash_heads,
    checks.CHECK_NONZERO_SEQUENCE_LENGTHS,
    checks.last_dim_stride_check(ignore_singleton_dim=True, cpu=False),
)


# -- memory-efficient ------------------------------------------------------------------------
def _head_dim_mem_efficient(f: SdpaCall) -> bool:
    if any(not s for s in f.shapes):
        return True
    q, k, v = _last(f, 0), _last(f, 1), _last(f, 2)
    alignment = minimum_gemm_alignment(f)
    return q == k and q % alignment == 0 and q > 0 and v % alignment == 0 and v > 0


def _pointer_alignment(f: SdpaCall) -> bool:
    cuda = _cuda(f)
    if f.nested or cuda.sm[0] < 8:
        return True
    alignment_bytes = minimum_gemm_alignment(f) * cuda.element_size
    return all(n == 0 or offset % alignment_bytes == 0
               for offset, n in zip(cuda.storage_offset_bytes, cuda.numels, strict=True))


def _mem_efficient_dtypes(f: SdpaCall) -> tuple[torch.dtype, ...]:
    if _cuda(f).sm[0] >= 8:
        return (torch.float16, torch.float32, torch.bfloat16)
    return (torch.float16, torch.float32)


_efficient_batch, _efficient_heads = checks.batch_and_heads_check(supports_gqa=True)
EFFICIENT_CLAUSES = (
    _built("can_use_mem_efficient_attention", "mem_efficient_built",
           "Torch was not compiled with memory efficient attention."),
    checks.runtime_enabled(EFFICIENT, "check_runtime_disabled_mem_efficient",
                           "Memory Efficient attention has been runtime disabled."),
    checks.rule(
        "check_mem_efficient_hardware_support", lambda f: _sm_in(f, (5, 0), (12, 1)), required="sm 5.0 to 12.1",
        message="Mem Efficient Attention only supports gpu architectures in the range [sm50, sm121].", show=_sm,
    ),
    checks.CHECK_TENSOR_SHAPES,
    checks.rule(
        "check_head_dim_size_mem_efficient", _head_dim_mem_efficient,
        required="q and k share the last dimension; q and v last dimensions divisible by the GEMM alignment",
        message=lambda f: f"Mem efficient attention requires last dimension of inputs to be divisible by "
                          f"{minimum_gemm_alignment(f)}.",
        show=checks.head_dims,
    ),
    checks.rule(
        "check_data_ptr_alignment_mem_efficient", _pointer_alignment,
        required="storage offsets aligned to the GEMM alignment (sm 8.0 and newer)",
        message="Mem efficient attention on sm80 or newer requires q, k, and v storage offsets * element_size to be "
                "aligned.",
        show=lambda f: f"storage offsets (bytes): {_cuda(f).storage_offset_bytes}",
    ),
    checks.rule(
        "check_requires_grad_and_nested", lambda f: not (f.nested and f.requires_grad), required="no training with NT",
        message="Memory efficient attention currently doesn't support training with NT inputs.",
        show=lambda f: f"nested: {f.nested}, requires_grad: {f.requires_grad}",
    ),
    checks.rule(
        "check_batch_size_nested", _batch_nested, required="broadcastable batch sizes (nested inputs)",
        message="Both fused kernels require query, key and value to have broadcastable batch size.",
        show=checks.sizes,
    ),
    checks.CHECK_NONZERO_SEQUENCE_LENGTHS,
    checks.last_dim_stride_check(ignore_singleton_dim=False, cpu=False),
    _efficient_batch,
    _efficient_heads,
    checks.tensor_dtype_check("check_tensor_dtype", _mem_efficient_dtypes),
)


# -- cuDNN ---------------------------------------------------------------------------------
def _cudnn_head_dim_limit(f: SdpaCall) -> int:
    cuda = _cuda(f)
    major, minor = cuda.sm
    sm90_or_sm10x = (major == 9 and minor == 0) or major == 10
    unsupported_sm107 = major == 10 and minor == 7 and cuda.cudnn_version <= 92500
    if sm90_or_sm10x and not unsupported_sm107 and cuda.cudnn_version > 92200:
        return 256
    if sm90_or_sm10x and cuda.cudnn_version >= 91100 and _last(f, 0) == 192 and _last(f, 2) == 128:
        return 192
    return 128


def _cudnn_shapes_problem(f: SdpaCall) -> str:
    """``check_cudnn_tensor_shapes``: the first problem, or ``""``."""
    if not _applies_dense_4d(f):
        return ""
    cuda = _cuda(f)
    (b, h, s_q, d_qk), (_, _, s_k, _) = f.shapes[0], f.shapes[1]
    d_v = f.shapes[2][3]
    if b > 65535 or h > 65535:
        return "cuDNN SDPA does not support batch size or num_heads greater than 65535."
    if cuda.cudnn_version < 8903:
        return "SDPA fprop requires cudnn 8.9.3 or higher"
    if cuda.cudnn_version < 8906 and f.dropout_p != 0.0:
        return "Dropout reference is only supported on 8.9.6 onwards."
    limit = _cudnn_head_dim_limit(f)
    if not (d_qk <= limit and d_v <= limit):
        return f"head_dim should be no more than {limit}"
    if d_qk % 8 or d_v % 8:
        return "head_dim should be a multiple of 8"
    if cuda.cudnn_version < 8906 and s_k % 64:
        return "not-multiple-of-64 seq_kv is not supported below 8.9.6"
    if cuda.cudnn_version < 90000:
        if s_q < 64:
            return "s_q less than 64 is not supported before cudnn 9.0.0"
        if f.dropout_p != 0.0 and (s_q % 64 or s_k % 64):
            return "s_q not a multiple of 64 with padding/dropout is not supported with cudnn version 9.0.0"
    if s_k == 1:
        return "cudnn SDPA does not support key/value sequence length 1."
    if f.dropout_p != 0.0 and s_q == 1:
        return "cudnn SDPA does not support query sequence length 1 with dropout."
    return ""


def _cudnn_backward_head_dims(f: SdpaCall) -> bool:
    if not f.requires_grad or not _applies_dense_4d(f):
        return True
    cuda = _cuda(f)
    major, minor = cuda.sm
    sm90_or_sm10x = (major == 9 and minor == 0) or major == 10
    unsupported_sm107 = major == 10 and minor == 7 and cuda.cudnn_version <= 92500
    if not (cuda.cudnn_version > 92200 and sm90_or_sm10x and not unsupported_sm107):
        return True
    d_qk, d_v = _last(f, 0), _last(f, 2)
    return (d_qk <= 128 and d_v <= 128) or (d_qk == 192 and d_v == 128) or (d_qk == 256 and d_v == 256)


def _cudnn_nested(f: SdpaCall) -> bool:
    if not f.nested:
        return True
    enabled = os.environ.get("TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED", "").lower() in ("1", "true", "on", "yes")
    return enabled and _cuda(f).sm[0] in (9, 10)


_cudnn_batch, _cudnn_heads = checks.batch_and_heads_check(supports_gqa=True, requires_same_num_heads=False)
CUDNN_CLAUSES = (
    _built("can_use_cudnn_attention", "cudnn_built", "Torch was not compiled with cuDNN attention."),
    checks.rule(
        "can_use_cudnn_attention", "@.cuda.cudnn_version >= 90000", required="cuDNN 9.0.0 or newer",
        message="cuDNN version too old to use cuDNN Attention (< v9.0.0)",
        show=lambda f: f"cuDNN {_cuda(f).cudnn_version}",
    ),
    checks.rule(
        "can_use_cudnn_attention", "not (@.dropout_p > 0.0 and 91100 < @.cuda.cudnn_version < 91400)",
        required="no dropout on cuDNN 9.11-9.13",
        message="cuDNN version does not support droppout in SDPA (9.11 - 9.13).",
        show=lambda f: f"dropout_p: {f.dropout_p:g}, cuDNN {_cuda(f).cudnn_version}",
    ),
    checks.runtime_enabled(CUDNN, "check_runtime_disabled_cudnn", "cuDNN attention has been runtime disabled."),
    checks.rule(
        "check_for_nested_inputs", _cudnn_nested, required="dense inputs (nested needs the experimental switch)",
        message="Experimental cuDNN SDPA nested tensor support is not enabled.",
        show=lambda f: "nested inputs" if f.nested else "dense inputs",
    ),
    checks.CHECK_TENSOR_SHAPES,
    checks.rule(
        "check_cudnn_deterministic", "not (@.cuda.deterministic and not @.cuda.deterministic_warn_only)",
        required="deterministic algorithms off (or warn-only)", message="cuDNN SDPA is not deterministic.",
        show=lambda f: f"deterministic: {_cuda(f).deterministic}, warn_only: {_cuda(f).deterministic_warn_only}",
    ),
    checks.tensor_dtype_check(
        "check_dtypes_low_precision", lambda f: HALF if _cuda(f).sm[0] >= 8 else (torch.float16,)
    ),
    checks.CHECK_ATTN_MASK_SHAPE,
    checks.rule(
        "check_cudnn_hardware_support", lambda f: _sm_in(f, (8, 0), (12, 1)), required="sm 8.0 to 12.1",
        message="cuDNN MHA only supports gpu architectures in the range [sm80, sm121].", show=_sm,
    ),
    checks.rule(
        "check_cudnn_dropout", lambda f: math.floor(f.dropout_p * 16.0) == f.dropout_p * 16.0,
        required="dropout_p a multiple of 1/16",
        message="cuDNN dropout probability resolution is limited to 1/16.",
        show=lambda f: f"dropout_p: {f.dropout_p:g}",
    ),
    checks.CHECK_NONZERO_SEQUENCE_LENGTHS,
    checks.last_dim_stride_check(ignore_singleton_dim=True, cpu=False),
    _cudnn_batch,
    _cudnn_heads,
    checks.rule(
        "check_cudnn_tensor_shapes", lambda f: not _cudnn_shapes_problem(f),
        required="shapes, head dims and sequence lengths cuDNN supports",
        message=lambda f: _cudnn_shapes_problem(f) or "cuDNN tensor shapes",
        show=checks.sizes,
    ),
    checks.rule(
        "check_cudnn_d256_bprop_head_dim", _cudnn_backward_head_dims,
        required="backward-capable head dims on sm 9.0/10.x",
        message="cuDNN SDPA on SM 9.0/10.x does not support backward with these head dimensions.",
        show=checks.head_dims,
    ),
)

FLASH_CUDA = checks.all_of(FLASH_CLAUSES)
EFFICIENT_CUDA = checks.all_of(EFFICIENT_CLAUSES)
CUDNN_CUDA = checks.all_of(CUDNN_CLAUSES)

OVERRIDEABLE_CUDA = checks.rule(
    "select_sdp_backend", "False", required="a device with an overrideable backend (PrivateUse1, XPU, HPU)",
    message="PyTorch's CUDA dispatch raises 'Invalid backend' if it reaches the overrideable backend.",
    show=lambda f: f"{f.device} tensors",
)


def prefers_cudnn(f: SdpaCall) -> bool:
    """Whether PyTorch puts cuDNN first on this device the first time it dispatches (sm 9.x/10.x)."""
    if os.environ.get("TORCH_CUDNN_SDPA_DEPRIORITIZED", "").lower() in ("1", "true", "on", "yes"):
        return False
    cuda = _cuda(f)
    major, minor = cuda.sm
    cuda_version = tuple(int(x) for x in (torch.version.cuda or "0.0").split(".")[:2])
    if cuda_version < (13, 0):
        return cuda.cudnn_version > 91500 and major in (9, 10) and minor in (0, 3)
    return cuda.cudnn_version > 91500 and major in (9, 10)


__all__ = [
    "CUDNN_CUDA", "CUDNN_FIRST_ORDER", "DEFAULT_ORDER", "EFFICIENT_CUDA", "FLASH_CUDA", "MATH",
    "OVERRIDEABLE_CUDA", "prefers_cudnn",
]
