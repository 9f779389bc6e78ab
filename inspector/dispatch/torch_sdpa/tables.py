"""The ``torch_sdpa`` decision tables: PyTorch's backends as rows, in PyTorch's order per device.

NOTE [ Priority orders ]
PyTorch tries its backends in an order that depends on the device: on CPU always flash, then
math; on CUDA the global order (``torch._C._get_sdp_priority_order()``, which
``sdpa_kernel(..., set_priority=True)`` changes, and which PyTorch sets cuDNN-first on its
first dispatch on sm 9.x/10.x with a recent cuDNN). A family's rows have one fixed order, so
the registered family uses this machine's order when it was built (PyTorch's default CUDA
order on a machine without a GPU), and ``predict``, ``trace_call``, ``trace_context`` (which
the command line, the panel and ``what_if_grid`` use) take a table compiled for the order
PyTorch uses for each call (cached per order). The rows, their specs and the evaluator are
the same in every table.

Every row but ``overrideable`` is available on every machine: whether a kernel exists for a
call is a clause of its spec (the CPU dispatch has no efficient or cuDNN kernel; a CUDA build
without flash says so), so a GPU described on a CPU machine is decided by PyTorch's CUDA rules.
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
from inspector.dispatch.resolution import decide_in
from inspector.dispatch.spec import Spec
from inspector.dispatch.torch_sdpa import checks, cpu_rules, cuda_rules, cudnn_rules
from inspector.dispatch.torch_sdpa.described import complete
from inspector.dispatch.torch_sdpa.facts import SdpaCall, facts_from_call
from inspector.dispatch.torch_sdpa.names import BACKENDS, CUDNN, EFFICIENT, FACTS, FAMILY, FLASH, MATH, OVERRIDEABLE

MEMBERS: dict[str, SDPBackend] = {name: getattr(SDPBackend, name.upper()) for name in BACKENDS}
BY_VALUE: dict[int, str] = {int(member.value): name for name, member in MEMBERS.items()}
CPU_ORDER = (*cpu_rules.CPU_ORDER, EFFICIENT, CUDNN, OVERRIDEABLE)


def _on_device(cpu: Spec, cuda: Spec) -> Spec:
    return Spec.switch("device", {"cpu": cpu, "cuda": cuda})


SPECS: dict[str, Spec] = {
    FLASH: _on_device(cpu_rules.FLASH_CPU, cuda_rules.FLASH_CUDA),
    EFFICIENT: _on_device(cpu_rules.cuda_only(EFFICIENT), cuda_rules.EFFICIENT_CUDA),
    CUDNN: _on_device(cpu_rules.cuda_only(CUDNN), cudnn_rules.CUDNN_CUDA),
    OVERRIDEABLE: _on_device(cpu_rules.cuda_only(OVERRIDEABLE), cuda_rules.OVERRIDEABLE_CUDA),
    MATH: checks.rule(
        "math_sdp_enabled",
        "('math' in @.enabled or @.device == 'meta')",
        required="math enabled",
        message="The math backend has been runtime disabled.",
        show=lambda f: (
            "meta tensors (PyTorch's meta kernel answers math)"
            if f.device == "meta"
            else "enabled: " + (", ".join(sorted(f.enabled)) or "none")
        ),
    )
    & cpu_rules.NO_DISPATCH_ERROR,
}
DESCRIPTIONS = {
    FLASH: "FlashAttention (CUDA), or PyTorch's CPU flash kernel",
    EFFICIENT: "memory-efficient attention (xFormers kernels, CUDA)",
    CUDNN: "cuDNN fused attention (CUDA, sm 8.0+)",
    OVERRIDEABLE: "an out-of-tree device's own kernel (PrivateUse1, XPU, HPU)",
    MATH: "the composite reference: softmax(QKᵀ)V in ATen ops",
}


@functools.lru_cache(maxsize=32)
def records(order: tuple[str, ...]) -> tuple[ImplRecord, ...]:
    """The family's rows with priorities from ``order`` (the same specs and objects every time).

    ``overrideable`` is consulted for out-of-tree devices only, never for CPU or CUDA tensors."""
    return tuple(
        ImplRecord(
            FAMILY,
            name,
            MEMBERS[name],
            SPECS[name],
            available=name != OVERRIDEABLE,
            priority=order.index(name),
            description=DESCRIPTIONS[name],
        )
        for name in order
    )


def _full(order: tuple[str, ...]) -> tuple[str, ...]:
    return (*order, *(name for name in BACKENDS if name not in order))


def cuda_order(facts: SdpaCall | None = None) -> tuple[str, ...]:
    """PyTorch's CUDA priority order now, as backend names (see NOTE [ Priority orders ])."""
    current = tuple(BY_VALUE[int(v)] for v in torch._C._get_sdp_priority_order() if int(v) in BY_VALUE)
    if (
        facts is not None
        and facts.cuda is not None
        and current == cuda_rules.DEFAULT_ORDER
        and cuda_rules.prefers_cudnn(facts)
    ):
        current = cuda_rules.CUDNN_FIRST_ORDER
    return _full(current)


def machine_order() -> tuple[str, ...]:
    """The order of the registered family: the CUDA order in force where a GPU exists, else PyTorch's
    default CUDA order, which decides CPU calls as the CPU order does (no CPU call can run
    efficient or cuDNN attention) and described CUDA calls as a GPU would, but for cuDNN-first."""
    return cuda_order() if torch.cuda.is_available() else _full(cuda_rules.DEFAULT_ORDER)


def order_for(facts: SdpaCall) -> tuple[str, ...]:
    return cuda_order(facts) if facts.device == "cuda" else CPU_ORDER


@functools.lru_cache(maxsize=16)
def plan_for_order(order: tuple[str, ...]) -> FamilyPlan:
    rows = records(order)
    return FamilyPlan(FAMILY, rows, rows[order.index(MATH)], complete)


def plan_for_facts(facts: SdpaCall) -> FamilyPlan:
    """The table compiled for the order PyTorch uses for this call."""
    return plan_for_order(CPU_ORDER if facts.device == "cpu" else order_for(facts))


def decide_call(ctx: Any) -> Any:
    """The ``Resolution`` for a complete context under every tier (strict ``op_backend`` included)."""
    return decide_in(plan_for_facts(ctx.extra[FACTS]), ctx)


def choose(facts: SdpaCall) -> SDPBackend:
    """The backend the ported rules choose for ``facts`` (``ERROR`` where none can run)."""
    # The rules read only ``extra``: a bare context is enough here and costs a third of a full one.
    ctx = CallContext(
        FAMILY, None, None, False, None, None, False, False, True, False, {"device": facts.device, FACTS: facts}
    )
    try:
        chosen: SDPBackend = plan_for_facts(facts).chain_as_is(ctx).record.obj
    except NoImplementationError:
        return SDPBackend.ERROR
    return chosen


def predict_by_rules(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    gpu: Any = None,
) -> SDPBackend:
    """The backend PyTorch will run, from the call's full facts and the ported rules."""
    return choose(facts_from_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, gpu=gpu))
