"""Operator dispatch: one selection mechanism for every op family.

A family registers an ordered decision table of ``ImplRecord`` rows. For each call,
``resolve`` picks a row: an explicit argument (strict) > an ``op_backend`` scope (strict) >
the process selection from ``set_op``/``INSPECTOR_OPS`` (soft) > ``profile=reference`` >
the first available, faithful row whose ``Spec`` accepts the ``CallContext`` > the fallback.
``trace``/``explain`` show every row's verdict from the same evaluator.
"""

from __future__ import annotations

from inspector.dispatch.clauses import ClauseCheck
from inspector.dispatch.compare import RowRun, run_rows
from inspector.dispatch.context import CallContext
from inspector.dispatch.errors import (
    DispatchError,
    ExplicitSelectionError,
    NoImplementationError,
    UnknownFamilyError,
    UnknownImplementationError,
)
from inspector.dispatch.overrides import current_overrides, get_override, op_backend
from inspector.dispatch.plugins import ENTRY_POINT_GROUP as FAMILY_ENTRY_POINT_GROUP
from inspector.dispatch.plugins import FamilyPlugin
from inspector.dispatch.recorder import Decision, DecisionCount, DecisionRecorder, record_decisions
from inspector.dispatch.records import ORIGINS, ImplRecord, Resolution
from inspector.dispatch.registry import (
    DispatchRegistry,
    OpFamily,
    default_registry,
    env_selection,
    families,
    get_family,
    invalidate,
    process_selection,
    register_env_alias,
    register_family,
    register_impl,
    reload_env,
    rows,
    set_op,
    unregister_family,
    unregister_impl,
)
from inspector.dispatch.registry import plugins as family_plugins
from inspector.dispatch.resolution import PlanResolution, context_for, resolve, resolve_plan
from inspector.dispatch.selection import ENV_VAR, parse_selections
from inspector.dispatch.spec import Axis, Spec, axis
from inspector.dispatch.steering import Steer
from inspector.dispatch.trace import PlanTrace, RowTrace, Trace, explain, explain_plan, trace, trace_plan
from inspector.dispatch.what_if import WhatIfCell, what_if

__all__ = [
    "Axis",
    "CallContext",
    "ClauseCheck",
    "Decision",
    "DecisionCount",
    "DecisionRecorder",
    "DispatchError",
    "DispatchRegistry",
    "ENV_VAR",
    "ExplicitSelectionError",
    "FAMILY_ENTRY_POINT_GROUP",
    "FamilyPlugin",
    "ImplRecord",
    "NoImplementationError",
    "ORIGINS",
    "OpFamily",
    "PlanResolution",
    "PlanTrace",
    "Resolution",
    "RowRun",
    "RowTrace",
    "Spec",
    "Steer",
    "Trace",
    "UnknownFamilyError",
    "UnknownImplementationError",
    "WhatIfCell",
    "axis",
    "context_for",
    "current_overrides",
    "default_registry",
    "env_selection",
    "explain",
    "explain_plan",
    "families",
    "family_plugins",
    "get_family",
    "get_override",
    "invalidate",
    "op_backend",
    "parse_selections",
    "process_selection",
    "record_decisions",
    "register_env_alias",
    "register_family",
    "register_impl",
    "reload_env",
    "resolve",
    "resolve_plan",
    "rows",
    "run_rows",
    "set_op",
    "trace",
    "trace_plan",
    "unregister_family",
    "unregister_impl",
    "what_if",
]
