"""The ``torch_sdpa`` family: registration, and the trace of a real or described call.

The rows and their order live in ``tables`` (NOTE [ Priority orders ]); this module registers
them as a family, and turns a call (real tensors, optionally planned for another GPU with
``gpu=``) or a described context into a ``Trace`` labelled with what it is: PyTorch's rules for
that GPU, not measured here, when the GPU is not this machine's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from inspector.dispatch.registry import register_family
from inspector.dispatch.torch_sdpa.described import complete
from inspector.dispatch.torch_sdpa.facts import SdpaCall, context_of, facts_from_call
from inspector.dispatch.torch_sdpa.names import FACTS, FAMILY, MATH
from inspector.dispatch.torch_sdpa.steering import TORCH_STEER
from inspector.dispatch.torch_sdpa.tables import machine_order, order_for, plan_for_order, records
from inspector.dispatch.trace import Trace, trace_in

ORIGIN = "inspector.dispatch.torch_sdpa"


def register(*, replace: bool = False) -> bool:
    """(Re-)register ``torch_sdpa`` in the dispatch registry (importing the package does it once).

    A family of that name that someone else registered is kept (``inspector.examples.skipped()``
    says so) unless ``replace``; ``predict``, ``trace_call`` and ``watch`` describe PyTorch either
    way. Returns whether the inspector's family is registered now.
    """
    from inspector._free_names import may_register_family
    from inspector.dispatch.registry import REGISTRY

    if not replace and not may_register_family(REGISTRY, FAMILY, origin=ORIGIN):
        return False
    register_family(
        FAMILY,
        lambda: records(machine_order()),
        MATH,
        extractor=context_from_call,
        completer=complete,
        steer=TORCH_STEER,
        description="PyTorch's own scaled_dot_product_attention backends, as PyTorch picks them",
        origin=ORIGIN,
    )
    return True


def ensure_registered() -> None:
    """Register ``torch_sdpa`` if it is not registered now (e.g. after a test emptied the registry)."""
    from inspector.dispatch.registry import REGISTRY

    if REGISTRY.registered_family(FAMILY) is None:
        register()


def ours() -> bool:
    """Whether the registered ``torch_sdpa`` family is this one (a user's own one is kept)."""
    from inspector.dispatch import families, get_family

    return FAMILY in families() and get_family(FAMILY).origin == ORIGIN


def context_from_call(
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
) -> Any:
    """The ``CallContext`` of one ``F.scaled_dot_product_attention`` call (its facts in ``extra``);
    ``gpu`` plans the same call on another GPU (``"h100"``, ``(9, 0)``, a ``GpuProfile``).

    >>> import torch
    >>> q = torch.randn(2, 8, 128, 64)
    >>> context_from_call(q, q, q).extra["sdpa"].device
    'cpu'
    >>> context_from_call(q, q, q, gpu="h100").extra["sdpa"].cuda.sm
    (9, 0)
    """
    facts = facts_from_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, gpu=gpu)
    return context_of(facts)


def labelled(trace: Trace, facts: SdpaCall) -> Trace:
    """``trace`` with a note saying whose rules answered, when the call is on a GPU."""
    if facts.cuda is None:
        return trace
    return dataclasses.replace(trace, notes=(*trace.notes, facts.cuda.rules_label()))


def trace_call(
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
) -> Trace:
    """Every backend's verdict for this call, each failing check as required vs actual, in the
    words PyTorch uses; the decision is PyTorch's rules (plus any ``op_backend`` selection of
    ``torch_sdpa`` in force, which is strict). ``gpu`` plans the call on another GPU."""
    facts = facts_from_call(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, gpu=gpu)
    return labelled(trace_in(plan_for_order(order_for(facts)), context_of(facts)), facts)


def trace_context(ctx: Any, explicit: Any = None) -> Trace:
    """``trace_call`` for a context (from ``context_from_call``, or described by axes)."""
    completed = complete(ctx)
    facts = completed.extra[FACTS]
    return labelled(trace_in(plan_for_order(order_for(facts)), completed, explicit), facts)
