"""Resolution: explicit > context > process selection > profile > chain > fallback.

``decide`` is the one decision procedure; ``resolve`` is ``decide`` plus the opt-in recorder,
and ``trace`` calls ``decide`` too, so what the inspector shows is what runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from inspector.dispatch.errors import ExplicitSelectionError, UnknownImplementationError
from inspector.dispatch.overrides import _OVERRIDES
from inspector.dispatch.plan import FamilyPlan, adhoc_record
from inspector.dispatch.recorder import ACTIVE, note_all
from inspector.dispatch.records import Resolution
from inspector.dispatch.registry import REGISTRY, get_family, is_steered, plan_for
from inspector.dispatch.selection import ENV_VAR, PROFILE

if TYPE_CHECKING:
    from inspector.dispatch.context import CallContext

# The hot path reads these registry containers through names bound once (NOTE [ Dispatch state ]).
_PLANS = REGISTRY.plans
_TIER = REGISTRY.tier


def decide(family: str, ctx: CallContext, explicit: Any = None) -> Resolution:
    """Choose the row for one call without recording it (see module docstring for the order)."""
    plan = _PLANS.get(family)
    if plan is None:
        plan = plan_for(family)
    return decide_in(plan, ctx, explicit)


def decide_in(plan: FamilyPlan, ctx: CallContext, explicit: Any = None) -> Resolution:
    """``decide`` over a given compiled table (a family may keep tables for other orders)."""
    family = plan.name
    if plan.completer is not None:
        ctx = plan.completer(ctx)
    if explicit is not None:
        return select_strict(plan, ctx, explicit, "explicit")
    scope = _OVERRIDES.get()
    if scope is not None:
        handle = scope[0].get(family)
        if handle is not None:
            return select_strict(plan, ctx, handle, "context")
    if not _TIER.idle and not is_steered(family):  # a steered family takes no process-wide selection
        return _process_tier(plan, ctx, _TIER.seeded())
    return plan.chain(ctx)


def resolve(family: str, ctx: CallContext, explicit: Any = None) -> Resolution:
    """The implementation for one call of ``family`` and the tier that chose it.

    ``explicit`` (a row name, a registered object or any object with ``supports_call``) and
    an ``op_backend`` selection are strict: ``ExplicitSelectionError`` when incapable. An
    unknown family raises ``UnknownFamilyError`` (a ``KeyError``).
    """
    # The common case (nothing selected anywhere) is decide() inlined: this is the hot path.
    plan = _PLANS.get(family)
    if explicit is None and plan is not None and _TIER.idle and _OVERRIDES.get() is None:
        result = plan.chain(ctx)
    else:
        result = decide(family, ctx, explicit)
    if ACTIVE:
        note_all(result, ctx)
    return result


class PlanResolution(dict[str, Resolution]):
    """``resolve_plan``'s answer: family -> ``Resolution`` (a dict), shown as one line or a table."""

    def __repr__(self) -> str:
        return "<PlanResolution: " + ", ".join(f"{f}={r.name} ({r.origin})" for f, r in self.items()) + ">"

    def _repr_html_(self) -> str:
        from inspector._display import html_table

        return html_table(("family", "row", "origin"), [(f, r.name, r.origin) for f, r in self.items()])


def resolve_plan(contexts: Mapping[str, CallContext]) -> PlanResolution:
    """Resolve several families under the same selections (one decision snapshot)."""
    return PlanResolution((family, resolve(family, ctx)) for family, ctx in contexts.items())


def context_for(family: str, *args: Any, **kwargs: Any) -> CallContext:
    """Build the family's ``CallContext`` from a real call's arguments (its registered extractor)."""
    extractor = get_family(family).extractor
    if extractor is None:
        raise TypeError(
            f"Family {family!r} has no context extractor; build CallContext({family!r}, ...) by hand "
            "or pass extractor= to register_family"
        )
    return extractor(*args, **kwargs)


def select_strict(plan: FamilyPlan, ctx: CallContext, handle: Any, origin: str) -> Resolution:
    record = plan.lookup(handle)
    if record is None:
        if isinstance(handle, str):
            raise UnknownImplementationError(plan.name, handle, plan.names)
        record = adhoc_record(plan.name, handle)
    available = plan.is_available(record)
    if available and record.spec.matches(ctx):
        return plan.resolution(record, origin)
    failures = record.spec.failures(ctx)
    raise ExplicitSelectionError(plan.name, record.name, origin, failures, available, plan.capable(ctx), ctx.describe())


def _process_tier(plan: FamilyPlan, ctx: CallContext, selection: dict[str, str]) -> Resolution:
    warn_once = REGISTRY.notices.warn_once
    name = selection.get(plan.name)
    if name is not None:
        record = plan.by_name.get(name)
        if record is None:
            warn_once(
                f"{ENV_VAR}: {plan.name}={name!r} is not registered (rows: {plan.names}); ignoring it",
                key=f"unknown:{plan.name}:{name}",
            )
        elif not plan.is_available(record):
            warn_once(
                f"{ENV_VAR}: {plan.name}={name!r} is unavailable on this machine; the chain decides instead",
                key=f"unavailable:{plan.name}:{name}",
            )
        elif record.spec.matches(ctx):
            return plan.resolution(record, "env")
        else:
            reasons = "; ".join(str(c) for c in record.spec.failures(ctx))
            warn_once(
                f"{ENV_VAR}: {plan.name}={name!r} cannot handle a call ({reasons}); the chain decides "
                "for such calls (warned once)",
                key=f"incapable:{plan.name}:{name}",
            )
        return plan.chain(ctx)
    if selection.get(PROFILE) == "reference":
        return plan.fallback_resolution(ctx, "profile")
    return plan.chain(ctx)
