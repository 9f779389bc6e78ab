"""PyTorch's cuDNN attention checks (``can_use_cudnn_attention`` in ``cuda/sdp_utils.cpp``), in its order.

The cuDNN version gates read the runtime version PyTorch reports (``torch.backends.cudnn.version()``,
``91501`` for 9.15.1), and head dims of 256 on sm 9.0/10.x also need a cuDNN frontend that takes
them, a build fact (``GpuProfile.cudnn_d256``).
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

import torch

from inspector.dispatch.torch_sdpa import checks
from inspector.dispatch.torch_sdpa.cuda_rules import HALF, built, cuda_of, dense_4d, last_dim, sm_in, sm_text
from inspector.dispatch.torch_sdpa.names import CUDNN

if TYPE_CHECKING:
    from inspector.dispatch.torch_sdpa.facts import SdpaCall


# -- cuDNN ---------------------------------------------------------------------------------
def _cudnn_head_dim_limit(f: SdpaCall) -> int:
    cuda = cuda_of(f)
    major, minor = cuda.sm
    sm90_or_sm10x = (major == 9 and minor == 0) or major == 10
    unsupported_sm107 = major == 10 and minor == 7 and cuda.cudnn_version <= 92500
    if sm90_or_sm10x and not unsupported_sm107 and cuda.cudnn_version > 92200 and cuda.cudnn_d256:
        return 256
    if sm90_or_sm10x and cuda.cudnn_version >= 91100 and last_dim(f, 0) == 192 and last_dim(f, 2) == 128:
        return 192
    return 128


def _cudnn_shapes_problem(f: SdpaCall) -> str:
    """``check_cudnn_tensor_shapes``: the first problem, or ``""``."""
    if not dense_4d(f):
        return ""
    cuda = cuda_of(f)
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
    if not f.requires_grad or not dense_4d(f):
        return True
    cuda = cuda_of(f)
    major, minor = cuda.sm
    sm90_or_sm10x = (major == 9 and minor == 0) or major == 10
    unsupported_sm107 = major == 10 and minor == 7 and cuda.cudnn_version <= 92500
    if not (cuda.cudnn_version > 92200 and cuda.cudnn_d256 and sm90_or_sm10x and not unsupported_sm107):
        return True
    d_qk, d_v = last_dim(f, 0), last_dim(f, 2)
    return (d_qk <= 128 and d_v <= 128) or (d_qk == 192 and d_v == 128) or (d_qk == 256 and d_v == 256)


def _cudnn_nested_enabled(f: SdpaCall) -> bool:
    if not f.nested:
        return True
    return os.environ.get("TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED", "").lower() in ("1", "true", "on", "yes")


def _cudnn_query_seq_nested(f: SdpaCall) -> bool:
    seq = (f.nested_seq or (None,))[0]
    return not f.nested or seq is None or seq[1] > 128


_cudnn_batch, _cudnn_heads = checks.batch_and_heads_check(supports_gqa=True, requires_same_num_heads=False)
CUDNN_CLAUSES = (
    built("can_use_cudnn_attention", "cudnn_built", "Torch was not compiled with cuDNN attention."),
    checks.rule(
        "can_use_cudnn_attention",
        "@.cuda.cudnn_version >= 90000",
        required="cuDNN 9.0.0 or newer",
        message="cuDNN version too old to use cuDNN Attention (< v9.0.0)",
        show=lambda f: f"cuDNN {cuda_of(f).cudnn_version}",
    ),
    checks.rule(
        "can_use_cudnn_attention",
        "not (@.dropout_p > 0.0 and 91100 < @.cuda.cudnn_version < 91400)",
        required="no dropout on cuDNN 9.11-9.13",
        message="cuDNN version does not support droppout in SDPA (9.11 - 9.13).",
        show=lambda f: f"dropout_p: {f.dropout_p:g}, cuDNN {cuda_of(f).cudnn_version}",
    ),
    checks.runtime_enabled(CUDNN, "check_runtime_disabled_cudnn", "cuDNN attention has been runtime disabled."),
    checks.rule(
        "check_for_nested_inputs",
        _cudnn_nested_enabled,
        required="dense inputs (nested needs TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED=1)",
        message="Experimental cuDNN SDPA nested tensor support is not enabled.",
        show=lambda f: "nested inputs" if f.nested else "dense inputs",
    ),
    checks.rule(
        "check_for_nested_inputs",
        lambda f: not f.nested or cuda_of(f).sm[0] in (9, 10),
        required="nested inputs only on sm 9.x/10.x",
        message="cuDNN SDPA supports nested tensors on SM 9.0, SM 10.0.",
        show=sm_text,
    ),
    checks.CHECK_TENSOR_SHAPES,
    checks.rule(
        "check_cudnn_deterministic",
        "not (@.cuda.deterministic and not @.cuda.deterministic_warn_only)",
        required="deterministic algorithms off (or warn-only)",
        message="cuDNN SDPA is not deterministic.",
        show=lambda f: f"deterministic: {cuda_of(f).deterministic}, warn_only: {cuda_of(f).deterministic_warn_only}",
    ),
    checks.tensor_dtype_check(
        "check_dtypes_low_precision", lambda f: HALF if cuda_of(f).sm[0] >= 8 else (torch.float16,)
    ),
    checks.CHECK_ATTN_MASK_SHAPE,
    checks.rule(
        "check_cudnn_hardware_support",
        lambda f: sm_in(f, (8, 0), (12, 1)),
        required="sm 8.0 to 12.1",
        message="cuDNN MHA only supports gpu architectures in the range [sm80, sm121].",
        show=sm_text,
    ),
    checks.rule(
        "check_cudnn_dropout",
        lambda f: math.floor(f.dropout_p * 16.0) == f.dropout_p * 16.0,
        required="dropout_p a multiple of 1/16",
        message="cuDNN dropout probability resolution is limited to 1/16.",
        show=lambda f: f"dropout_p: {f.dropout_p:g}",
    ),
    checks.CHECK_NONZERO_SEQUENCE_LENGTHS,
    checks.last_dim_stride_check(ignore_singleton_dim=True, cpu=False),
    _cudnn_batch,
    _cudnn_heads,
    checks.rule(
        "check_cudnn_tensor_shapes",
        lambda f: not _cudnn_shapes_problem(f),
        required="shapes, head dims and sequence lengths cuDNN supports",
        message=lambda f: _cudnn_shapes_problem(f) or "cuDNN tensor shapes",
        show=checks.sizes,
    ),
    checks.rule(
        "check_cudnn_d256_bprop_head_dim",
        _cudnn_backward_head_dims,
        required="backward-capable head dims on sm 9.0/10.x",
        message="cuDNN SDPA on SM 9.0/10.x does not support backward with these head dimensions.",
        show=checks.head_dims,
    ),
    checks.rule(
        "check_cudnn_query_seq_len_nested",
        _cudnn_query_seq_nested,
        required="nested query sequences longer than 128",
        message="cuDNN attention does not support nested tensor query sequence length <= 128.",
        show=lambda f: f"nested query sequence lengths: {(f.nested_seq or (None,))[0]}",
    ),
)

CUDNN_CUDA = checks.all_of(CUDNN_CLAUSES)
