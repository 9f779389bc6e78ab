"""Op families and their rows: registration, third-party rows, invalidation, snapshots."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from inspector.dispatch.context import CallContext
from inspector.dispatch.errors import UnknownFamilyError
from inspector.dispatch.plan import FamilyPlan
from inspector.dispatch.records import ImplRecord
from inspector.dispatch.spec import Spec
from inspector.dispatch.steering import Steer

Provider = Callable[[], Iterable[ImplRecord]]
Sampler = Callable[[CallContext, Any], tuple[tuple[Any, ...], dict[str, Any]]]
Completer = Callable[[CallContext], CallContext]


@dataclass(frozen=True)
class OpFamily:
    """What a family registered: where its rows come from and how to build and sample calls."""

    name: str
    provider: Provider
    fallback: Callable[[], ImplRecord]
    extractor: Callable[..., CallContext] | None = None
    sampler: Sampler | None = None
    tolerances: Mapping[Any, tuple[float, float]] = field(default_factory=dict)
    description: str = ""
    completer: Completer | None = None
    steer: Steer | None = None
    origin: str = ""


_FAMILIES: dict[str, OpFamily] = {}
_EXTERNAL: dict[str, dict[str, ImplRecord]] = {}
# Read without the lock on the hot path; entries are only ever replaced or removed whole.
_PLANS: dict[str, FamilyPlan] = {}
_LOCK = threading.RLock()


def _as_provider(provider: Provider | Iterable[ImplRecord]) -> Provider:
    if callable(provider):
        return provider
    rows = tuple(provider)
    return lambda: rows


def _as_fallback(fallback: ImplRecord | str | Callable[[], ImplRecord], provider: Provider) -> Callable[[], ImplRecord]:
    if isinstance(fallback, ImplRecord):
        return lambda: fallback
    if isinstance(fallback, str):
        name = fallback

        def by_name() -> ImplRecord:
            for record in provider():
                if record.name == name:
                    return record
            raise ValueError(f"Fallback {name!r} is not among the family's rows; pass the ImplRecord itself")

        return by_name
    if callable(fallback):
        return fallback
    raise TypeError(f"fallback must be an ImplRecord, a row name or a callable, got {type(fallback).__name__}")


def register_family(
    name: str,
    provider: Provider | Iterable[ImplRecord],
    fallback: ImplRecord | str | Callable[[], ImplRecord],
    *,
    extractor: Callable[..., CallContext] | None = None,
    sampler: Sampler | None = None,
    tolerances: Mapping[Any, tuple[float, float]] | None = None,
    description: str = "",
    completer: Completer | None = None,
    steer: Steer | None = None,
    origin: str | None = None,
) -> None:
    """Register (or replace) a family: its rows, its fallback, and optionally how to build a
    context from a real call (``extractor``) and random inputs for a context (``sampler``).

    ``completer`` derives what a family's specs read from a context built from axes alone (the
    command line, the panel, ``what_if``); ``steer`` makes ``op_backend`` selections of this
    family also act outside the inspector (see ``overrides.Steer``).
    """
    if not isinstance(name, str) or not name or name == "profile":
        raise ValueError(f"Family name must be a non-empty string other than 'profile', got {name!r}")
    rows = _as_provider(provider)
    if origin is None:
        origin = sys._getframe(1).f_globals.get("__name__", "")
    family = OpFamily(
        name, rows, _as_fallback(fallback, rows), extractor, sampler, dict(tolerances or {}), description,
        completer, steer, origin,
    )
    with _LOCK:
        _FAMILIES[name] = family
        _EXTERNAL.setdefault(name, {})
        _PLANS.pop(name, None)


def unregister_family(name: str) -> None:
    """Remove a family and its third-party rows (mostly for tests and notebooks)."""
    with _LOCK:
        _family(name)
        del _FAMILIES[name]
        _EXTERNAL.pop(name, None)
        _PLANS.pop(name, None)


def register_impl(record: ImplRecord) -> None:
    """Add a third-party row to an existing family; a name already in the table is an error.

    The row is checked here, not at the first call: it must be an ``ImplRecord`` with an integer
    priority, a ``Spec`` and a callable implementation (``TypeError`` otherwise).
    """
    _check_row(record)
    with _LOCK:
        plan = plan_for(record.family)
        if record.name in plan.by_name:
            raise ValueError(
                f"{record.family} implementation {record.name!r} already exists. "
                f"Rows: {plan.names}; unregister_impl() it first to replace it"
            )
        _EXTERNAL[record.family][record.name] = record
        _PLANS.pop(record.family, None)


def _check_row(record: Any) -> None:
    if not isinstance(record, ImplRecord):
        raise TypeError(
            f"register_impl takes an ImplRecord, got {type(record).__name__}; "
            "build one with ImplRecord(family, name, fn, spec, priority=...)"
        )
    if isinstance(record.priority, bool) or not isinstance(record.priority, int):
        raise TypeError(
            f"ImplRecord {record.family}/{record.name}: priority must be an int (lower runs first), "
            f"got {record.priority!r}"
        )
    if not isinstance(record.spec, Spec):
        raise TypeError(
            f"ImplRecord {record.family}/{record.name}: spec must be a Spec (e.g. Spec.eq('dtype', torch.float16) "
            f"or Spec.always()), got {type(record.spec).__name__}"
        )
    if not callable(record.obj):
        raise TypeError(
            f"ImplRecord {record.family}/{record.name}: the implementation must be callable, "
            f"got {type(record.obj).__name__}"
        )
    if not (callable(record.available) or isinstance(record.available, bool)):
        raise TypeError(
            f"ImplRecord {record.family}/{record.name}: available must be a bool or a zero-argument probe, "
            f"got {record.available!r}"
        )


def unregister_impl(family: str, name: str) -> None:
    """Remove a row added with ``register_impl``."""
    with _LOCK:
        _family(family)
        external = _EXTERNAL[family]
        if name not in external:
            raise KeyError(
                f"{family} has no third-party row {name!r}. Third-party rows: {sorted(external)} "
                "(rows from the family's own provider cannot be unregistered)"
            )
        del external[name]
        _PLANS.pop(family, None)


def invalidate(family: str | None = None) -> None:
    """Forget compiled tables (and availability probes) for one family or all of them."""
    with _LOCK:
        if family is None:
            _PLANS.clear()
        else:
            _family(family)
            _PLANS.pop(family, None)


def _family(name: str) -> OpFamily:
    family = _FAMILIES.get(name)
    if family is None:
        from inspector.dispatch.plugins import discover

        if discover():  # a plugin may register it (entry points are read once)
            family = _FAMILIES.get(name)
        if family is None:
            raise UnknownFamilyError(name, list(_FAMILIES))
    return family


def is_steered(name: str) -> bool:
    """Whether ``name`` mirrors another library's dispatch (it registered a ``Steer``): then only
    ``op_backend`` blocks, which steer that library too, select its rows (see ``selection``)."""
    family = _FAMILIES.get(name)
    return family is not None and family.steer is not None


def get_family(name: str) -> OpFamily:
    """The registered family record (frozen); ``UnknownFamilyError`` lists the known ones."""
    return _family(name)


def plan_for(name: str) -> FamilyPlan:
    """The family's compiled table, built now if ``invalidate`` (or registration) dropped it."""
    plan = _PLANS.get(name)
    if plan is not None:
        return plan
    with _LOCK:
        plan = _PLANS.get(name)
        if plan is None:
            family = _family(name)
            rows = [*family.provider(), *_EXTERNAL.get(name, {}).values()]
            plan = _PLANS[name] = FamilyPlan(name, rows, family.fallback(), family.completer, family.steer)
        return plan


def families() -> tuple[str, ...]:
    """Registered family names, sorted (plugins under ``inspector.op_families`` included)."""
    from inspector.dispatch.plugins import discover

    discover()
    return tuple(sorted(_FAMILIES))


def rows(family: str) -> tuple[ImplRecord, ...]:
    """The family's rows in priority order (a snapshot)."""
    return plan_for(family).rows


# What plugin discovery found: ``None`` until it has run (see ``plugins.discover``).
PLUGINS: list[Any] = [None]


@dataclass(frozen=True)
class RegistryState:
    """Everything registered, for ``testing.isolated_dispatch`` to restore."""

    families: Mapping[str, OpFamily]
    external: Mapping[str, Mapping[str, ImplRecord]]
    plugins: Any = None


def registry_state() -> RegistryState:
    with _LOCK:
        return RegistryState(
            MappingProxyType(dict(_FAMILIES)),
            MappingProxyType({k: MappingProxyType(dict(v)) for k, v in _EXTERNAL.items()}),
            PLUGINS[0],
        )


def restore_registry(state: RegistryState) -> None:
    with _LOCK:
        _FAMILIES.clear()
        _FAMILIES.update(state.families)
        _EXTERNAL.clear()
        _EXTERNAL.update({k: dict(v) for k, v in state.external.items()})
        _PLANS.clear()
        PLUGINS[0] = state.plugins
