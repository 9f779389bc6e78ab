"""PyTorch's CPU SDPA dispatch (``sdp_utils_cpp.cpp``): the CPU flash kernel, else math.

``use_flash_attention_cpp`` runs these checks in this order; the CPU build has no efficient,
cuDNN or overrideable kernel, and the CPU order (flash, then math) ignores the global
priority order that ``sdpa_kernel(..., set_priority=True)`` sets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.dispatch.torch_sdpa import checks
from inspector.dispatch.torch_sdpa.facts import FLASH, MATH, SdpaCall, context_of

if TYPE_CHECKING:
    from inspector.dispatch.spec import Spec

CPU_ORDER = (FLASH, MATH)

_same_batch, _heads = checks.batch_and_heads_check(supports_gqa=True)

FLASH_CLAUSES = (
    checks.runtime_enabled(FLASH, "check_runtime_disabled_flash", "Flash attention has been runtime disabled."),
    checks.CHECK_NESTED_TENSOR,
    checks.CHECK_FOR_DROPOUT,
    checks.CHECK_TENSOR_SHAPES,
    _same_batch,
    _heads,
    checks.CHECK_ATTN_MASK_SHAPE,
    checks.rule(
        "check_head_dim_size_cpp",
        "(not (@.shapes[0] and @.shapes[1] and @.shapes[2]) or @.shapes[0][-1] == @.shapes[1][-1] == @.shapes[2][-1])",
        required="the same last dimension for q, k and v",
        message="Flash attention requires q,k,v to have the same last dimension.",
        show=checks.head_dims,
    ),
    checks.CHECK_NONZERO_SEQUENCE_LENGTHS,
    checks.last_dim_stride_check(ignore_singleton_dim=False, cpu=True),
    checks.tensor_dtype_check("check_tensor_dtype", checks.FLOATING),
)

FLASH_CPU = checks.all_of(FLASH_CLAUSES)
_BEFORE_MASK = checks.all_of(FLASH_CLAUSES[: FLASH_CLAUSES.index(checks.CHECK_ATTN_MASK_SHAPE)])


def dispatch_raises(f: SdpaCall) -> bool:
    """PyTorch's CPU dispatch itself raises (IndexError) when the flash checks reach a mask with
    fewer than 2 dimensions: then no backend runs, math included."""
    if f.device != "cpu" or f.mask_shape is None or len(f.mask_shape) >= 2:
        return False
    return _BEFORE_MASK.matches(context_of(f))


NO_DISPATCH_ERROR = checks.rule(
    "check_attn_mask_shape",
    "@.mask_shape is None or len(@.mask_shape) >= 2 or not {0}(@)",
    constants=(dispatch_raises,),
    required="an attn_mask with at least 2 dimensions (when flash is tried)",
    message="PyTorch's dispatch raises IndexError reading the attn_mask's last two dimensions.",
    show=lambda f: f"attn_mask {checks.dims(f.mask_shape or ())}",
)


def cuda_only(backend: str) -> Spec:
    """The CPU case of a backend that only CUDA has: one clause that says so."""
    return checks.rule(
        "select_sdp_backend_cpp",
        "False",
        required="a CUDA device",
        message=f"PyTorch's CPU dispatch has no {backend} kernel: it tries {FLASH}, then {MATH}.",
        show=lambda f: f"{f.device} tensors",
    )
