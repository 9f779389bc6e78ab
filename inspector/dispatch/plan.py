"""A family's decision table, sorted, probed and compiled once until ``invalidate``.

NOTE [ Compiled chain ]
The automatic chain of a family is compiled into one function of ``ctx``: one ``if`` per
faithful, available row in priority order (the row's spec expression, see NOTE [ One
evaluator ]), then the fallback, then a call that raises ``NoImplementationError``. Each
``if`` returns a ``Resolution`` built at compile time, so the hot path allocates nothing.
Rows whose availability can change (``probe_each_call``) keep their probe inline; every
other probe ran once when the plan was built. Each ``if`` sits in its own ``try``: a spec that
raises rejects its row (``trace`` shows the exception as that row's failing clause) instead of
making every call of the family raise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from inspector.dispatch.clauses import namespace_binder, prologue
from inspector.dispatch.errors import NoImplementationError
from inspector.dispatch.records import ImplRecord, Resolution
from inspector.dispatch.spec import Spec

if TYPE_CHECKING:
    from inspector.dispatch.context import CallContext
    from inspector.dispatch.steering import Steer


class FamilyPlan:
    """Sorted rows, memoised availability and the compiled chain of one family."""

    def __init__(
        self,
        name: str,
        rows: Iterable[ImplRecord],
        fallback: ImplRecord,
        completer: Callable[[CallContext], CallContext] | None = None,
        steer: Steer | None = None,
    ) -> None:
        self.name = name
        self.completer = completer
        self.steer = steer  # the family's Steer, read by op_backend on its hot path
        self.rows: tuple[ImplRecord, ...] = tuple(sorted(rows, key=lambda r: r.priority))
        self.by_name: dict[str, ImplRecord] = {}
        for record in self.rows:
            if record.family != name:
                raise ValueError(f"Row {record.name!r} says family {record.family!r} but is registered in {name!r}")
            if record.name in self.by_name:
                raise ValueError(f"{name} implementation {record.name!r} already exists")
            self.by_name[record.name] = record
        self.fallback = self.by_name.get(fallback.name, fallback)
        self.by_name.setdefault(fallback.name, fallback)
        self._by_identity = {id(r.obj): r for r in self.by_name.values()}
        self._available = {r.name: r.is_available() for r in self.by_name.values() if not r.probe_each_call}
        self._resolutions: dict[tuple[str, str], Resolution] = {}
        # ``chain_as_is`` skips the completer, for callers whose contexts are complete already.
        self.chain_as_is: Callable[[CallContext], Resolution] = self._compile_chain(complete=False)
        self.chain: Callable[[CallContext], Resolution] = (
            self._compile_chain(complete=True) if completer is not None else self.chain_as_is
        )

    def complete(self, ctx: CallContext) -> CallContext:
        """``ctx`` with what the family's specs read derived from its axes (see ``register_family``)."""
        return ctx if self.completer is None else self.completer(ctx)

    @property
    def names(self) -> list[str]:
        return list(self.by_name)

    def is_available(self, record: ImplRecord) -> bool:
        memo = self._available.get(record.name)
        if memo is None or record.probe_each_call or self.by_name.get(record.name) is not record:
            return record.is_available()
        return memo

    def lookup(self, handle: Any) -> ImplRecord | None:
        """The row a selection handle names: by name for strings, by identity otherwise."""
        if isinstance(handle, str):
            return self.by_name.get(handle)
        if isinstance(handle, ImplRecord):
            return self.by_name.get(handle.name) if self.by_name.get(handle.name) is handle else None
        return self._by_identity.get(id(handle))

    def resolution(self, record: ImplRecord, origin: str) -> Resolution:
        """The (cached, for known rows) decision object for ``record`` chosen by ``origin``."""
        if self.by_name.get(record.name) is not record:
            return Resolution(record, origin)
        key = (record.name, origin)
        found = self._resolutions.get(key)
        if found is None:
            found = self._resolutions[key] = Resolution(record, origin)
        return found

    def capable(self, ctx: CallContext) -> list[str]:
        """Names of the rows that are available and whose spec accepts ``ctx``."""
        return [r.name for r in self.by_name.values() if self.is_available(r) and r.spec.matches(ctx)]

    def fallback_resolution(self, ctx: CallContext, origin: str) -> Resolution:
        if self.is_available(self.fallback) and self.fallback.spec.matches(ctx):
            return self.resolution(self.fallback, origin)
        return self.no_implementation(ctx)

    def no_implementation(self, ctx: CallContext) -> Resolution:
        reasons = []
        for record in self.by_name.values():
            if not self.is_available(record):
                reasons.append((record.name, "unavailable"))
            else:
                failing = "; ".join(str(c) for c in record.spec.failures(ctx)) or "not faithful (explicit-only)"
                reasons.append((record.name, failing))
        raise NoImplementationError(self.name, self.fallback.name, reasons, ctx.describe())

    def _compile_chain(self, complete: bool) -> Callable[[CallContext], Resolution]:
        namespace: dict[str, Any] = {}
        bind = namespace_binder(namespace)
        lines = ["def chain(ctx):"]
        if complete and self.completer is not None:
            lines.append(f"    ctx = {bind(self.completer)}(ctx)")
        lines += prologue([r.spec for r in self.by_name.values()], namespace)

        def branch(record: ImplRecord, origin: str) -> None:
            condition = record.spec.source(bind)
            if record.probe_each_call:
                condition = f"{bind(record.is_available)}() and {condition}"
            elif not self._available[record.name]:
                return
            lines.append("    try:")
            lines.append(f"        if {condition}: return {bind(self.resolution(record, origin))}")
            lines.append("    except Exception: pass")

        for record in self.rows:
            if record.faithful:
                branch(record, "chain")
        branch(self.fallback, "fallback")
        lines.append(f"    return {bind(self.no_implementation)}(ctx)")
        exec("\n".join(lines), namespace)
        chain: Callable[[CallContext], Resolution] = namespace["chain"]
        return chain


def adhoc_record(family: str, handle: Any) -> ImplRecord:
    """Wrap an unregistered object so it can be selected; it is probed via ``supports_call``."""
    kind = type(handle).__name__
    label = getattr(handle, "name", None)
    name = label if isinstance(label, str) and label else kind
    supports = getattr(handle, "supports_call", None)
    if callable(supports):
        spec = Spec.of(lambda ctx: supports(*ctx.raw, **ctx.raw_kwargs), f"{kind}.supports_call")
    else:
        spec = Spec.always()
    available = getattr(handle, "available", True)
    if not (callable(available) or isinstance(available, bool)):
        available = True
    return ImplRecord(family, name, handle, spec, available=available, probe_each_call=True)
