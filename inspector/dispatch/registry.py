"""The dispatch registry: op families and their rows, compiled tables, plugins, the process tier.

NOTE [ Dispatch state ]
Everything the dispatch engine knows lives on one ``DispatchRegistry``: the families, the rows
third parties added, the compiled table of each family (``plans``), what plugin discovery
found, the process tier (``tier``: ``set_op`` and ``INSPECTOR_OPS``), the running decision
recorders and the warn-once memory. The module-level functions (``register_family``,
``families``, ``set_op``...) are the methods of the default instance, ``REGISTRY``, as the
data backends' functions are their default registry's. ``resolve`` reads ``plans``,
``tier.idle`` and ``recorders`` through names bound once at import; so those containers are
only ever changed in place, never replaced (``restore_state`` clears and refills them), and a
test isolates the whole engine with ``save_state``/``restore_state`` (``testing.isolated_dispatch``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from inspector.dispatch.context import CallContext
from inspector.dispatch.errors import UnknownFamilyError
from inspector.dispatch.notices import Notices
from inspector.dispatch.plan import FamilyPlan
from inspector.dispatch.plugins import FamilyPlugin, load_family_plugins
from inspector.dispatch.records import ImplRecord
from inspector.dispatch.selection import ProcessTier, TierState
from inspector.dispatch.spec import Spec

if TYPE_CHECKING:
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


class RegistryState(NamedTuple):
    """Everything a registry holds, for ``restore_state`` (NOTE [ Dispatch state ])."""

    families: Mapping[str, OpFamily]
    external: Mapping[str, Mapping[str, ImplRecord]]
    plugins: tuple[FamilyPlugin, ...] | None
    tier: TierState
    recorders: tuple[Any, ...] = ()
    last_stopped: tuple[Any, ...] = ()
    notices: frozenset[str] = frozenset()


class DispatchRegistry:
    """Op families, their rows and compiled tables, plugins, the process tier (NOTE [ Dispatch state ]).

    The module-level functions use the default instance (``default_registry()``).
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._families: dict[str, OpFamily] = {}
        self._external: dict[str, dict[str, ImplRecord]] = {}
        self.plans: dict[str, FamilyPlan] = {}  # read without the lock on the hot path; entries replaced whole
        self._plugins: tuple[FamilyPlugin, ...] | None = None  # None until discovery has run
        self._discovery = threading.RLock()
        self.recorders: list[Any] = []  # the running DecisionRecorders, read by resolve on every call
        self.last_stopped: list[Any] = []  # the recorder stopped last (at most one)
        self.notices = Notices()
        self.tier = ProcessTier(self)

    def __repr__(self) -> str:
        return f"<DispatchRegistry families={sorted(self._families)}>"

    # -- families and rows ------------------------------------------------------------------------
    def register_family(
        self,
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
            name,
            rows,
            _as_fallback(fallback, rows),
            extractor,
            sampler,
            dict(tolerances or {}),
            description,
            completer,
            steer,
            origin,
        )
        with self._lock:
            self._families[name] = family
            self._external.setdefault(name, {})
            self.plans.pop(name, None)

    def unregister_family(self, name: str) -> None:
        """Remove a family and its third-party rows (mostly for tests and notebooks)."""
        with self._lock:
            self.get_family(name)
            del self._families[name]
            self._external.pop(name, None)
            self.plans.pop(name, None)

    def register_impl(self, record: ImplRecord) -> None:
        """Add a third-party row to an existing family; a name already in the table is an error.

        The row is checked here, not at the first call: it must be an ``ImplRecord`` with an integer
        priority, a ``Spec`` and a callable implementation (``TypeError`` otherwise).
        """
        _check_row(record)
        with self._lock:
            plan = self.plan_for(record.family)
            if record.name in plan.by_name:
                raise ValueError(
                    f"{record.family} implementation {record.name!r} already exists. "
                    f"Rows: {plan.names}; unregister_impl() it first to replace it"
                )
            self._external[record.family][record.name] = record
            self.plans.pop(record.family, None)

    def unregister_impl(self, family: str, name: str) -> None:
        """Remove a row added with ``register_impl``."""
        with self._lock:
            self.get_family(family)
            external = self._external[family]
            if name not in external:
                raise KeyError(
                    f"{family} has no third-party row {name!r}. Third-party rows: {sorted(external)} "
                    "(rows from the family's own provider cannot be unregistered)"
                )
            del external[name]
            self.plans.pop(family, None)

    def invalidate(self, family: str | None = None) -> None:
        """Forget compiled tables (and availability probes) for one family or all of them."""
        with self._lock:
            if family is None:
                self.plans.clear()
            else:
                self.get_family(family)
                self.plans.pop(family, None)

    def get_family(self, name: str) -> OpFamily:
        """The registered family record (frozen); ``UnknownFamilyError`` lists the known ones.

        A family not registered yet may come from a plugin: the entry points are read first.
        """
        family = self._families.get(name)
        if family is None:
            if self.discover():
                family = self._families.get(name)
            if family is None:
                raise UnknownFamilyError(name, list(self._families))
        return family

    def registered(self) -> tuple[str, ...]:
        """The names registered now, sorted (no plugin discovery: see ``families``)."""
        return tuple(sorted(self._families))

    def registered_family(self, name: str) -> OpFamily | None:
        """The family registered under ``name`` now, or ``None`` (no plugin discovery)."""
        return self._families.get(name)

    def family_records(self) -> tuple[OpFamily, ...]:
        """Every registered family's record, by name (no plugin discovery)."""
        return tuple(self._families[name] for name in sorted(self._families))

    def is_steered(self, name: str) -> bool:
        """Whether ``name`` mirrors another library's dispatch (it registered a ``Steer``): then only
        ``op_backend`` blocks, which steer that library too, select its rows (see ``selection``)."""
        family = self._families.get(name)
        return family is not None and family.steer is not None

    def plan_for(self, name: str) -> FamilyPlan:
        """The family's compiled table, built now if ``invalidate`` (or registration) dropped it."""
        plan = self.plans.get(name)
        if plan is not None:
            return plan
        with self._lock:
            plan = self.plans.get(name)
            if plan is None:
                family = self.get_family(name)
                rows = [*family.provider(), *self._external.get(name, {}).values()]
                plan = self.plans[name] = FamilyPlan(name, rows, family.fallback(), family.completer, family.steer)
            return plan

    def families(self) -> tuple[str, ...]:
        """Registered family names, sorted (plugins under ``inspector.op_families`` included)."""
        self.discover()
        return self.registered()

    def rows(self, family: str) -> tuple[ImplRecord, ...]:
        """The family's rows in priority order (a snapshot)."""
        return self.plan_for(family).rows

    # -- plugins (NOTE [ Family plugins ] in plugins.py) ------------------------------------------
    def discover(self) -> bool:
        """Load the entry points once; ``True`` if this call loaded them (so a lookup may retry)."""
        if self._plugins is not None:
            return False
        with self._discovery:
            if self._plugins is not None:
                return False
            self._plugins = ()  # loading a plugin may look families up: do not recurse
            self._plugins = load_family_plugins(self.registered)
            return True

    def plugins(self) -> tuple[FamilyPlugin, ...]:
        """What each ``inspector.op_families`` entry point did (discovering them now if needed)."""
        self.discover()
        return self._plugins or ()

    def forget_plugins(self) -> None:
        """Read the entry points again at the next lookup, as a fresh process would."""
        with self._discovery:
            self._plugins = None

    # -- isolation (testing.isolated_dispatch) ----------------------------------------------------
    def save_state(self) -> RegistryState:
        """Everything this registry holds (NOTE [ Dispatch state ])."""
        with self._lock:
            return RegistryState(
                MappingProxyType(dict(self._families)),
                MappingProxyType({k: MappingProxyType(dict(v)) for k, v in self._external.items()}),
                self._plugins,
                self.tier.save_state(),
                tuple(self.recorders),
                tuple(self.last_stopped),
                self.notices.seen(),
            )

    def restore_state(self, state: RegistryState) -> None:
        """Put back what ``save_state`` saw; every container is refilled in place."""
        with self._lock:
            self._families.clear()
            self._families.update(state.families)
            self._external.clear()
            self._external.update({k: dict(v) for k, v in state.external.items()})
            self.plans.clear()
            self._plugins = state.plugins
            self.tier.restore_state(state.tier)
            self.recorders[:] = state.recorders
            self.last_stopped[:] = state.last_stopped
            self.notices.reset(state.notices)

    def fresh_state(self, *, keep_families: bool = True) -> RegistryState:
        """What a test starts from: the families kept (or none), the environment not read yet, no
        recorders, no warnings given; the plugins and aliases as they are."""
        saved = self.save_state()
        kept = saved if keep_families else saved._replace(families={}, external={})
        unseeded = TierState(None, saved.tier.aliases)
        return kept._replace(tier=unseeded, recorders=(), last_stopped=(), notices=frozenset())


REGISTRY = DispatchRegistry()


def default_registry() -> DispatchRegistry:
    """The registry behind the module-level functions (``register_family``, ``resolve``, ``set_op``...)."""
    return REGISTRY


register_family = REGISTRY.register_family
unregister_family = REGISTRY.unregister_family
register_impl = REGISTRY.register_impl
unregister_impl = REGISTRY.unregister_impl
invalidate = REGISTRY.invalidate
get_family = REGISTRY.get_family
is_steered = REGISTRY.is_steered
plan_for = REGISTRY.plan_for
families = REGISTRY.families
rows = REGISTRY.rows
plugins = REGISTRY.plugins
set_op = REGISTRY.tier.set_op
reload_env = REGISTRY.tier.reload_env
register_env_alias = REGISTRY.tier.register_env_alias
process_selection = REGISTRY.tier.process_selection
env_selection = REGISTRY.tier.env_selection
seeded = REGISTRY.tier.seeded
