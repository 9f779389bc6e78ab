"""PyTorch's SDPA checks as clauses, named after the ``sdp_utils`` functions, in PyTorch's words.

Each check is a ``Spec`` clause over the call's ``SdpaCall`` facts: its name is the PyTorch
function that makes the check, its message is the warning PyTorch prints when the check fails
(``sdp_utils_cpp.h``, ``sdp_utils_cpp.cpp``, ``cuda/sdp_utils.cpp``), and ``show`` renders the
actual values. PyTorch stops at the first failing check; a trace evaluates them all, so every
check stays well defined (vacuously true) when an earlier one, such as "4-D inputs", already
failed and the values it would read do not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from inspector.dispatch.context import CallContext, format_value
from inspector.dispatch.spec import Spec
from inspector.dispatch.torch_sdpa.facts import FACTS, SdpaCall

READ = f"ctx.extra[{FACTS!r}]"
# Every check reads the facts through names bound once per evaluation (see ``spec.prologue``):
# the facts, and the three tuples most checks index into.
BINDINGS = (("_sdpa", READ), ("_shp", f"{READ}.shapes"), ("_str", f"{READ}.strides"), ("_dty", f"{READ}.dtypes"))
_SHORT = (("_sdpa.shapes", "_shp"), ("_sdpa.strides", "_str"), ("_sdpa.dtypes", "_dty"))
Facts = Callable[[CallContext], SdpaCall]


def facts(ctx: CallContext) -> SdpaCall:
    value: SdpaCall = ctx.extra[FACTS]
    return value


def rule(
    name: str,
    test: str | Callable[[SdpaCall], bool],
    *,
    required: str,
    message: str | Callable[[SdpaCall], str],
    show: Callable[[SdpaCall], str],
    constants: tuple[Any, ...] = (),
) -> Spec:
    """A clause: ``test`` is an expression over ``@`` (the facts; ``{0}``... are ``constants``)
    or a function of the facts."""
    if callable(test):
        template, constants = "{0}(_sdpa)", (test,)
    else:
        template = test.replace("@", "_sdpa")
        for long, short in _SHORT:
            template = template.replace(long, short)
    words = (lambda ctx: message(facts(ctx))) if callable(message) else message
    return Spec._rule(
        name,
        template,
        constants=constants,
        axes=(FACTS,),
        required=required,
        message=words,
        show=lambda ctx: show(facts(ctx)),
        bindings=BINDINGS,
    )


def all_of(clauses: Iterable[Spec]) -> Spec:
    """The conjunction of ``clauses``, in order (traces list them in this order)."""
    items = list(clauses)
    spec = items[0]
    for clause in items[1:]:
        spec = spec & clause
    return spec


def dims(shape: Iterable[int]) -> str:
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def qkv(values: tuple[Any, Any, Any], what: str) -> str:
    q, k, v = (format_value(x) for x in values)
    return f"Query{what}: {q}, Key{what}: {k}, Value{what}: {v}"


def sizes(f: SdpaCall) -> str:
    q, k, v = (dims(s) for s in f.shapes)
    return f"Query.sizes(): {q}, Key.sizes(): {k}, Value.sizes(): {v}"


def _dense(f: SdpaCall) -> bool:
    return not f.nested


# -- flags ----------------------------------------------------------------------------------
def runtime_enabled(backend: str, check: str, words: str) -> Spec:
    return rule(
        check,
        f"{backend!r} in @.enabled",
        required=f"{backend} enabled",
        message=words,
        show=lambda f: "enabled: " + (", ".join(sorted(f.enabled)) or "none"),
    )


# -- sdp_utils_cpp.h -----------------------------------------------------------------------
CHECK_NESTED_TENSOR = rule(
    "check_nested_tensor",
    "not @.nested",
    required="dense (not nested) inputs",
    message="Both fused kernels of cpp version currently do not support Nested Tensor inputs.",
    show=lambda f: "nested inputs" if f.nested else "dense inputs",
)

CHECK_FOR_DROPOUT = rule(
    "check_for_dropout",
    "not (@.dropout_p > 0.0)",
    required="dropout_p == 0",
    message="Both fused kernels do not support non-zero dropout.",
    show=lambda f: f"dropout_p: {f.dropout_p:g}",
)

CHECK_TENSOR_SHAPES = rule(
    "check_tensor_shapes",
    "len(@.shapes[0]) == 4 and len(@.shapes[1]) == 4 and len(@.shapes[2]) == 4",
    required="4-D query, key and value",
    message="All fused kernels requires query, key and value to be 4 dimensional",
    show=lambda f: qkv(tuple(len(s) for s in f.shapes), " dim"),  # type: ignore[arg-type]
)

CHECK_FOR_ATTN_MASK = rule(
    "check_for_attn_mask",
    "@.mask_shape is None",
    required="no attn_mask",
    message="Flash Attention does not support non-null attn_mask.",
    show=lambda f: "no attn_mask" if f.mask_shape is None else f"attn_mask {dims(f.mask_shape)}",
)


def _compatible(mask_dim: int, target: int) -> bool:
    return mask_dim == target or mask_dim == 1


def attn_mask_shape_ok(f: SdpaCall) -> bool:
    """``check_attn_mask_shape``: a 2-D or 4-D mask broadcastable to (batch, heads, q_len, kv_len)."""
    mask = f.mask_shape
    if mask is None or not f.dense4d:
        return True
    if f.mask_requires_grad or len(mask) < 2:
        return False
    q, k, _ = f.shapes
    if not (_compatible(mask[-2], q[2]) and _compatible(mask[-1], k[2])):
        return False
    if len(mask) == 2:
        return True
    return len(mask) == 4 and _compatible(mask[0], q[0]) and _compatible(mask[1], q[1])


CHECK_ATTN_MASK_SHAPE = rule(
    "check_attn_mask_shape",
    "(@.mask_shape is None or {0}(@))",
    constants=(attn_mask_shape_ok,),
    required="mask 2-D (q_len|1, kv_len|1) or 4-D (batch|1, heads|1, q_len|1, kv_len|1), not requiring grad",
    message=lambda f: (
        "attn_mask requires grad"
        if f.mask_requires_grad
        else "Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  x {KV_seq_len, 1}); "
        "4d - ({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1}  x {KV_seq_len, 1})"
    ),
    show=lambda f: (
        "no attn_mask"
        if f.mask_shape is None
        else (
            f"attn_mask {dims(f.mask_shape)}{' requires grad' if f.mask_requires_grad else ''} for "
            f"query {dims(f.shapes[0])}, key {dims(f.shapes[1])}"
        )
    ),
)


CHECK_NONZERO_SEQUENCE_LENGTHS = rule(
    "check_nonzero_sequence_lengths_dense",
    "(@.nested or len(@.shapes[0]) < 2 or len(@.shapes[1]) < 2 or (@.shapes[0][-2] != 0 and @.shapes[1][-2] != 0))",
    required="seq_len_q > 0 and seq_len_kv > 0",
    message="All fused kernels do not support zero seq_len_q or seq_len_kv.",
    show=lambda f: f"seq_len_q: {f.shapes[0][-2]}, seq_len_kv: {f.shapes[1][-2]}" if _dense(f) else "nested",
)


def last_dim_stride_check(ignore_singleton_dim: bool, cpu: bool) -> Spec:
    """``check_last_dim_stride_equals_1_dense<ignore_singleton_dim>``; CPU ignores the mask's stride."""

    def ok(f: SdpaCall) -> bool:
        strides = f.strides
        if strides is None:
            return True
        q, k, v = strides
        if not q or not k or not v:
            return True
        unit = q[-1] == 1 and k[-1] == 1 and v[-1] == 1
        if ignore_singleton_dim and not unit:
            unit = f.shapes[0][-1] == 1
        return unit and (cpu or f.mask_last_stride is None or f.mask_last_stride == 1)

    def show(f: SdpaCall) -> str:
        if f.strides is None:
            return "nested inputs"
        text = qkv(tuple(s[-1] if s else None for s in f.strides), ".stride(-1)")  # type: ignore[arg-type]
        if f.mask_last_stride is not None:
            text += f", Attn_mask.stride(-1): {f.mask_last_stride}"
        return text

    unit = "(@.strides[0][-1] == 1 and @.strides[1][-1] == 1 and @.strides[2][-1] == 1)"
    test: Any = ok
    if cpu and not ignore_singleton_dim:
        test = f"(@.strides is None or not (@.strides[0] and @.strides[1] and @.strides[2]) or {unit})"
    return rule(
        "check_last_dim_stride_equals_1_dense",
        test,
        required="stride 1 in the last dimension of query, key and value" + ("" if cpu else " (and of attn_mask)"),
        message="All fused kernels require the last dimension of the input to have stride 1.",
        show=show,
    )


def tensor_dtype_check(name: str, allowed: tuple[Any, ...] | Callable[[SdpaCall], tuple[Any, ...]]) -> Spec:
    """``check_tensor_dtype``: query, key and value share one of the ``allowed`` dtypes."""

    def allowed_for(f: SdpaCall) -> tuple[Any, ...]:
        return allowed(f) if callable(allowed) else allowed

    fixed = frozenset(allowed) if not callable(allowed) else None

    def ok(f: SdpaCall) -> bool:
        q, k, v = f.dtypes
        return q == k and q == v and q in (fixed if fixed is not None else allowed_for(f))

    def words(f: SdpaCall) -> str:
        return (
            "Expected query, key and value to all be of dtype: {"
            + ", ".join(SCALAR_NAMES.get(d, format_value(d)) for d in allowed_for(f))
            + "}."
        )

    shown = (
        "one of {" + ", ".join(format_value(d) for d in allowed) + "}"
        if not callable(allowed)
        else "of a dtype this device supports"
    )
    test: Any = ok
    if fixed is not None:
        test = "(@.dtypes[0] == @.dtypes[1] == @.dtypes[2] and @.dtypes[0] in {0})"
    return rule(
        name,
        test,
        required=f"query, key and value all {shown}",
        message=words,
        show=lambda f: qkv(f.dtypes, " dtype"),
        constants=(fixed,) if fixed is not None else (),
    )


def batch_and_heads_check(supports_gqa: bool, requires_same_num_heads: bool = True) -> tuple[Spec, Spec]:
    """``check_batch_size_and_num_heads_dense<supports_gqa, requires_same_num_heads>`` as two
    clauses: the batch sizes agree, then the head counts (grouped-query rules with ``enable_gqa``)."""

    def same_batch(f: SdpaCall) -> bool:
        if not f.dense4d:
            return True
        q, k, v = f.shapes
        return q[0] == k[0] == v[0]

    def heads_ok(f: SdpaCall) -> bool:
        if not f.dense4d or not same_batch(f):
            return True
        qs, ks, vs = f.shapes
        q, k, v = qs[1], ks[1], vs[1]
        if f.enable_gqa and supports_gqa:
            if requires_same_num_heads and k != v:
                return False
            return bool(k) and q % k == 0 and (requires_same_num_heads or (bool(v) and q % v == 0))
        return q == k == v

    def heads_words(f: SdpaCall) -> str:
        if f.enable_gqa and supports_gqa:
            _, k, v = (s[-3] for s in f.shapes)
            if requires_same_num_heads and k != v:
                return "Both fused kernels require key and value to have the same num_heads and batch_size"
            return "The number of heads in key/value must divide number of heads in query."
        return "For dense input, both fused kernels require query, key and value to have the same num_heads."

    heads_required = "key/value heads divide query heads (enable_gqa)" if supports_gqa else "the same num_heads"
    return (
        rule(
            "check_batch_size_and_num_heads_dense",
            "(not @.dense4d or @.shapes[0][0] == @.shapes[1][0] == @.shapes[2][0])",
            required="the same batch_size",
            message="For dense inputs, both fused kernels require query, key and value to have the same batch_size.",
            show=sizes,
        ),
        rule(
            "check_batch_size_and_num_heads_dense",
            "(not @.dense4d or (@.shapes[0][1] == @.shapes[1][1] == @.shapes[2][1] and not @.enable_gqa) or {0}(@))",
            constants=(heads_ok,),
            required=f"the same num_heads, or with enable_gqa {heads_required}",
            message=heads_words,
            show=sizes,
        ),
    )


def same_head_dim(f: SdpaCall) -> bool:
    q, k, v = f.shapes
    if not q or not k or not v:
        return True
    return q[-1] == k[-1] == v[-1]


def head_dims(f: SdpaCall) -> str:
    return qkv(tuple(s[-1] if s else None for s in f.shapes), ".size(-1)")  # type: ignore[arg-type]


FLOATING = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
# How PyTorch's C++ messages name dtypes (c10::ScalarType).
SCALAR_NAMES = {
    torch.float32: "Float",
    torch.float64: "Double",
    torch.bfloat16: "BFloat16",
    torch.float16: "Half",
    torch.float8_e4m3fn: "Float8_e4m3fn",
}
