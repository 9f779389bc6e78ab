"""The next step to a faster backend: PyTorch's failing checks turned into what to change.

For a call that did not get PyTorch's fastest backend, ``next_step(trace)`` takes the backends
PyTorch tried before the one it chose, in order, and says what would let the first of them
run: "to get flash_attention here: set dropout_p=0 and use a 2-D or 4-D mask". A check no
change to the call can pass (the GPU's architecture, the build) is said as a fact instead.
"""

from __future__ import annotations

from collections.abc import Callable

from inspector.dispatch.spec import ClauseCheck
from inspector.dispatch.torch_sdpa.facts import FACTS, SdpaCall
from inspector.dispatch.trace import MATCH, Trace

Advice = Callable[[SdpaCall, ClauseCheck], str]


def _heads(f: SdpaCall, _check: ClauseCheck) -> str:
    q, k, v = (s[1] if len(s) == 4 else None for s in f.shapes)
    if not f.enable_gqa and q and k and k == v and q % k == 0:
        return "pass enable_gqa=True (the key/value heads divide the query heads)"
    return "give key and value the same number of heads, one that divides the query's"


def _attn_mask(f: SdpaCall, _check: ClauseCheck) -> str:
    if f.mask_dtype is not None and f.mask_dtype.is_floating_point:
        return "drop the float mask and pass is_causal=True (if the mask is causal)"
    return "drop the mask and pass is_causal=True (if the mask is causal)"


def _causal_lengths(f: SdpaCall, _check: ClauseCheck) -> str:
    if f.shapes[0] and len(f.shapes[0]) >= 2 and f.shapes[0][-2] == 1:
        return "pass is_causal=False for a one-token query (it may attend to every cached key)"
    return "give query and key the same length, or mask instead of is_causal"


def _dtype(f: SdpaCall, check: ClauseCheck) -> str:
    message = str(check.message)
    wanted = message[message.find("{") + 1 : message.find("}")] if "{" in message else ""
    return f"use one dtype for q, k and v among {{{wanted}}}" if wanted else "use a dtype the kernel takes"


ADVICE: dict[str, Advice] = {
    "check_for_dropout": lambda f, c: "set dropout_p=0 (the module's eval(), or attention dropout 0)",
    "check_tensor_shapes": lambda f, c: "pass 4-D (batch, heads, seq_len, head_dim) tensors",
    "check_nested_tensor": lambda f, c: "pass dense tensors instead of nested ones",
    "check_attn_mask_shape": lambda f, c: (
        "detach the mask"
        if f.mask_requires_grad
        else "use a 2-D (q_len, kv_len) or 4-D (batch|1, heads|1, q_len, kv_len) mask"
    ),
    "check_for_attn_mask": _attn_mask,
    "check_head_dim_size_cpp": lambda f, c: "give q, k and v the same head dim",
    "check_head_dim_size_flash": lambda f, c: "give q, k and v the same head dim, at most 256",
    "check_head_dim_size_mem_efficient": lambda f, c: f"pad the head dims ({c.message.split('by ')[-1].rstrip('.')})",
    "check_nonzero_sequence_lengths_dense": lambda f, c: "skip calls with an empty sequence",
    "check_last_dim_stride_equals_1_dense": lambda f, c: "make the last dimension contiguous (.contiguous())",
    "check_data_ptr_alignment_mem_efficient": lambda f, c: "start q, k and v at aligned offsets (.contiguous())",
    "check_tensor_dtype": _dtype,
    "check_dtypes_flash_attention": _dtype,
    "check_dtypes_low_precision": _dtype,
    "check_batch_size_and_num_heads_dense": lambda f, c: (
        _heads(f, c) if "heads" in str(c.message) else "give query, key and value the same batch size"
    ),
    "check_flash_causal_non_square_seqlens": _causal_lengths,
    "check_runtime_disabled_flash": lambda f, c: (
        "enable flash (leave the sdpa_kernel block, or torch.backends.cuda.enable_flash_sdp(True))"
    ),
    "check_runtime_disabled_mem_efficient": lambda f, c: (
        "enable it (torch.backends.cuda.enable_mem_efficient_sdp(True))"
    ),
    "check_runtime_disabled_cudnn": lambda f, c: "enable it (torch.backends.cuda.enable_cudnn_sdp(True))",
    "check_cudnn_deterministic": lambda f, c: "turn off torch.use_deterministic_algorithms (or warn_only=True)",
    "check_cudnn_dropout": lambda f, c: "use a dropout_p that is a multiple of 1/16",
    "check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120": lambda f, c: (
        "keep head_dim at most 192 when training on this GPU"
    ),
}
# Checks that no change to the call can pass: said as facts, not as steps.
FIXED = {
    "select_sdp_backend_cpp",
    "select_sdp_backend",
    "can_use_flash_attention",
    "can_use_mem_efficient_attention",
    "check_flash_attention_hardware_support",
    "check_mem_efficient_hardware_support",
    "check_cudnn_hardware_support",
    "can_use_cudnn_attention",
}


def steps(facts: SdpaCall, failing: tuple[ClauseCheck, ...]) -> tuple[list[str], list[str]]:
    """(what to change, what cannot change) for one backend's failing checks."""
    changes, fixed = [], []
    for check in failing:
        advice = ADVICE.get(check.clause)
        if check.clause in FIXED or advice is None:
            fixed.append(str(check.message).rstrip("."))
        else:
            text = advice(facts, check)
            if text not in changes:
                changes.append(text)
    return changes, fixed


def next_step(trace: Trace) -> str:
    """What would get PyTorch a faster backend for this call (``""`` when it has its fastest)."""
    facts: SdpaCall | None = trace.context.extra.get(FACTS)
    if facts is None or trace.chosen is None:
        return ""
    blocked = []
    for row in trace.rows:
        if row.name == trace.chosen:
            break
        if not row.available or row.verdict == MATCH:
            continue
        changes, fixed = steps(facts, row.failing)
        if changes and not fixed:
            return f"to get {row.name} here: " + " and ".join(changes)
        if fixed:
            blocked.append(f"{row.name}: {fixed[0]}")
    return ("no faster backend can run here (" + "; ".join(blocked) + ")") if blocked else ""
