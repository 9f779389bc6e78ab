"""The ``torch_sdpa`` family: PyTorch's SDPA backends as rows, ``predict_by_rules`` and ``trace_call``.

NOTE [ Priority orders ]
PyTorch tries its backends in an order that depends on the device: on CPU always flash, then
math; on CUDA the global order (``torch._C._get_sdp_priority_order()``, which
``sdpa_kernel(..., set_priority=True)`` changes, and which PyTorch sets cuDNN-first on its
first dispatch on sm 9.x/10.x with a recent cuDNN). A family's rows have one fixed order, so
the registered family uses this machine's order when it was built, and ``predict``/``trace_call``
use a table compiled for the order in force for each call (cached per order). The rows, their
specs and the evaluator are the same in every table.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch.nn.attention import SDPBackend

from inspector.dispatch.context import CallContext
from inspector.dispatch.errors import NoImplementationError
from inspector.dispatch.plan import FamilyPlan
from inspector.dispatch.records import ImplRecord
from inspector.dispatch.registry import register_family
from inspector.dispatch.resolution import decide_in
from inspector.dispatch.spec import Spec
from inspector.dispatch.torch_sdpa import checks, cpu_rules, cuda_rules
from inspector.dispatch.torch_sdpa.facts import (
    BACKENDS,
    CUDNN,
    EFFICIENT,
    FACTS,
    FAMILY,
    FLASH,
    MATH,
    OVERRIDEABLE,
    SdpaCall,
    complete,
    context_of,
    facts_from_call,
)
from inspector.dispatch.trace import Trace, trace_in

MEMBERS: dict[str, SDPBackend] = {name: getattr(SDPBackend, name.upper()) for name in BACKENDS}
BY_VALUE: dict[int, str] = {int(member.value): name for name, member in MEMBERS.items()}
CPU_ORDER = (*cpu_rules.CPU_ORDER, EFFICIENT, CUDNN, OVERRIDEABLE)


def _on_device(cpu: Spec, cuda: Spec) -> Spec:
    return Spec.switch("device", {"cpu": cpu, "cuda": cuda})


SPECS: dict[str, Spec] = {
    FLASH: _on_device(cpu_rules.FLASH_CPU, cuda_rules.FLASH_CUDA),
    EFFICIENT: _on_device(cpu_rules.cuda_only(EFFICIENT), cuda_rules.EFFICIENT_CUDA),
    CUDNN: _on_device(cpu_rules.cuda_only(CUDNN), cuda_rules.CUDNN_CUDA),
    OVERRIDEABLE: _on_device(cpu_rules.cuda_only(OVERRIDEABLE), cuda_rules.OVERRIDEABLE_CUDA),
    MATH: checks.rule(
        "math_sdp_enabled", "('math' in @.enabled or @.device == 'meta')", required="math enabled",
        message="The math backend has been runtime disabled.",
        show=lambda f: "meta tensors (PyTorch's meta kernel answers math)" if f.device == "meta" else
        "enabled: " + (", ".join(sorted(f.enabled)) or "none"),
    ) & cpu_rules.NO_DISPATCH_ERROR,
}
DESCRIPTIONS = {
    FLASH: "FlashAttention (CUDA), or PyTorch's CPU flash kernel",
    EFFICIENT: "memory-efficient attention (xFormers kernels, CUDA)",
    CUDNN: "cuDNN fused attention (CUDA, sm 8.0+)",
    OVERRIDEABLE: "an out-of-tree device's own kernel (PrivateUse1, XPU, HPU)",
    MATH: "the composite reference: softmax(QKᵀ)V in ATen ops",
}


def _available(name: str) -> bool:
    if name in (FLASH, MATH):
        return True
    if name == OVERRIDEABLE:
        return False  # consulted for out-of-tree devices only, never for CPU or CUDA tensors
    return bool(torch.cuda.is_available())


@functools.lru_cache(maxsize=32)
def records(order: tuple[str, ...]) -> tuple[ImplRecord, ...]:
    """The family's rows with priorities from ``order`` (the same specs and objects every time)."""
    return tuple(
        ImplRecord(FAMILY, name, MEMBERS[name], SPECS[name], available=_available(name), priority=order.index(name),
                   description=DESCRIPTIONS[name])
        for name in order
    )


def _full(order: tuple[str, ...]) -> tuple[str, ...]:
    return (*order, *(name for name in BACKENDS if name not in order))


def cuda_order(facts: SdpaCall | None = None) -> tuple[str, ...]:
    """PyTorch's CUDA priority order now, as backend names (see NOTE [ Priority orders ])."""
    current = tuple(BY_VALUE[int(v)] for v in torch._C._get_sdp_priority_order() if int(v) in BY_VALUE)
    if facts is not None and facts.cuda is not None and current == cuda_rules.DEFAULT_ORDER \
            and cuda_rules.prefers_cudnn(facts):
        current = cuda_rules.CUDNN_FIRST_ORDER
    return _full(current)


def machine_order() -> tuple[str, ...]:
    """The order of the registered family: CUDA's where a GPU exists, else CPU's."""
    return cuda_order() if torch.cuda.is_available() else CPU_ORDER


def order_for(facts: SdpaCall) -> tuple[str, ...]:
    return cuda_order(facts) if facts.device == "cuda" else CPU_ORDER


@functools.lru_cache(maxsize=16)
def plan_for_order(order: tuple[str, ...]) -> FamilyPlan:
    rows = records(order)
    return FamilyPlan(FAMILY, rows, rows[order.index(MATH)], complete)


ORIGIN = "inspector.dispatch.torch_sdpa"


def register(*, replace: bool = False) -> bool:
    """(Re-)register ``torch_sdpa`` in the dispatch registry (importing the package does it once).

    A family of that name that someone else registered is kept (``inspector.examples.skipped()``
    says so) unless ``replace``; ``predict``, ``trace_call`` and ``watch`` describe PyTorch either
    way. Returns whether the inspector's family is registered now.
    """
    from inspector._free_names import may_register_family
    from inspector.dispatch.registry import REGISTRY
    from inspector.dispatch.torch_sdpa.steering import TORCH_STEER

    if not replace and not may_register_family(REGISTRY, FAMILY, origin=ORIGIN):
        return False
    register_family(
        FAMILY, lambda: records(machine_order()), MATH, extractor=context_from_call, completer=complete,
        steer=TORCH_STEER, description="PyTorch's own scaled_dot_product_attention backends, as PyTorch picks them",
        origin=ORIGIN,
    )
    return True


def ensure_registered() -> None:
    """Register ``torch_sdpa`` if it is not registered now (e.g. after a test emptied the registry)."""
    from inspector.dispatch.registry import REGISTRY

    if REGISTRY.registered_family(FAMILY) is None:
        register()


def context_from_call(
    query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
    scale: float | None = None, enable_gqa: bool = False,
) -> Any:
    """The ``CallContext`` of one ``F.scaled_dot_product_attention`` call (its facts in ``extra``).

    >>> q = torch.randn(2, 8, 128, 64)
    >>> context_from_call(q, q, q).extra["sdpa"].device
    'cpu'
    """
    facts = facts_from_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return context_of(facts)


def predict_by_rules(
    query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
    scale: float | None = None, enable_gqa: bool = False,
) -> SDPBackend:
    """The backend PyTorch will run, from the call's full facts and the ported rules: what
    ``predict`` answers for every call (see NOTE [ The quick CPU path ])."""
    facts = facts_from_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    plan = plan_for_order(CPU_ORDER if facts.device == "cpu" else order_for(facts))
    # The rules read only ``extra``: a bare context is enough here and costs a third of a full one.
    ctx = CallContext(FAMILY, None, None, False, None, None, False, False, True, False,
                      {"device": facts.device, FACTS: facts})
    try:
        chosen: SDPBackend = plan.chain_as_is(ctx).record.obj
    except NoImplementationError:
        return SDPBackend.ERROR
    return chosen


def trace_call(
    query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
    scale: float | None = None, enable_gqa: bool = False,
) -> Trace:
    """Every backend's verdict for this call, each failing check as required vs actual, in the
    words PyTorch uses; the decision is the one ``predict`` makes (plus any ``op_backend``
    selection of ``torch_sdpa`` in force, which is strict)."""
    facts = facts_from_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return trace_in(plan_for_order(order_for(facts)), context_of(facts))


def trace_context(ctx: Any, explicit: Any = None) -> Trace:
    """``trace_call`` for a context (from ``context_from_call``, or described by axes)."""
    completed = complete(ctx)
    return trace_in(plan_for_order(order_for(completed.extra["sdpa"])), completed, explicit)


def decide_call(ctx: Any) -> Any:
    """The ``Resolution`` for a complete context under every tier (strict ``op_backend`` included)."""
    return decide_in(plan_for_order(order_for(ctx.extra["sdpa"])), ctx)
