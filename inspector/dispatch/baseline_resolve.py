"""A straightforward ``resolve``, the baseline the dispatch benchmark compares ours with.

NOTE [ A straightforward resolve ]
The plain way to write this part's ``resolve`` does, on every call: look the family up, read
the ``op_backend`` overrides from a ``ContextVar`` holding a dict, read the environment
selection under a lock (``os.environ`` read again each time, parsed entries cached by the
variable's text, every alias variable read, unknown families dropped), read it a second time for
``profile``, re-run the family's row provider and sort its rows by priority, then walk them asking
each row's ``available()`` probe, its ``faithful`` flag and its ``Spec`` (a tree of closures, one
call per clause) until one accepts. ``StraightforwardDispatch`` does those steps, in that order,
over the rows of one of our families: its specs are the same clauses, each compiled alone and
joined by closures, so both sides answer the same question on the same ``CallContext``. It
exists only to be timed (``bench.hot_path``); nothing else calls it.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inspector.dispatch.context import CallContext
    from inspector.dispatch.records import ImplRecord
    from inspector.dispatch.spec import Spec


class ClosureSpec:
    """A predicate as one closure, combined by ``&``, ``|`` and ``~`` into closures."""

    __slots__ = ("_description", "_fn")

    def __init__(self, fn: Callable[[CallContext], Any], description: str) -> None:
        self._fn = fn
        self._description = description

    def matches(self, ctx: CallContext) -> bool:
        return bool(self._fn(ctx))

    def __and__(self, other: ClosureSpec) -> ClosureSpec:
        first, second = self._fn, other._fn
        return ClosureSpec(lambda ctx: first(ctx) and second(ctx), f"({self._description} and {other._description})")

    def __or__(self, other: ClosureSpec) -> ClosureSpec:
        first, second = self._fn, other._fn
        return ClosureSpec(lambda ctx: first(ctx) or second(ctx), f"({self._description} or {other._description})")

    def __invert__(self) -> ClosureSpec:
        inner = self._fn
        return ClosureSpec(lambda ctx: not inner(ctx), f"not({self._description})")

    @classmethod
    def of_spec(cls, spec: Spec) -> ClosureSpec:
        """The same clauses as ``spec``: each leaf compiled alone, the tree joined by closures."""
        kind, parts = spec._kind, spec._parts
        if kind == "and":
            joined = cls.of_spec(parts[0])
            for part in parts[1:]:
                joined = joined & cls.of_spec(part)
            return joined
        if kind == "or":
            joined = cls.of_spec(parts[0])
            for part in parts[1:]:
                joined = joined | cls.of_spec(part)
            return joined
        if kind == "not":
            return ~cls.of_spec(parts[0])
        return cls(spec._compiled(), spec.description)  # a leaf (or a switch, compiled whole)


class ProbedRow:
    """One row with ``available`` always a probe to call."""

    __slots__ = ("available", "faithful", "name", "obj", "priority", "spec")

    def __init__(self, record: ImplRecord) -> None:
        probe = record.available
        self.available: Callable[[], bool] = probe if callable(probe) else (lambda: bool(probe))
        self.name, self.obj, self.priority, self.faithful = record.name, record.obj, record.priority, record.faithful
        self.spec = ClosureSpec.of_spec(record.spec)


class StraightforwardDispatch:
    """One family resolved the straightforward way (NOTE [ A straightforward resolve ])."""

    def __init__(
        self,
        family: str,
        records: Iterable[ImplRecord],
        fallback: ImplRecord,
        *,
        env_var: str = "INSPECTOR_OPS",
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        rows = [ProbedRow(record) for record in records]
        self._table: dict[str, tuple[Callable[[], list[ProbedRow]], ProbedRow]] = {
            family: (lambda: list(rows), ProbedRow(fallback))
        }
        self._aliases = dict(aliases or {})
        self._env_var = env_var
        # a shared dict as the default, the straightforward way
        self._overrides: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("baseline", default={})  # noqa: B039
        self._env_lock = threading.Lock()
        self._env_cache: dict[tuple[str, str], dict[str, str] | None] = {}

    def _get_override(self, family: str) -> Any:
        return self._overrides.get().get(family)

    def _env_overrides(self) -> dict[str, str]:
        with self._env_lock:
            merged: dict[str, str] = {}
            raw = os.environ.get(self._env_var, "").strip()
            if raw:
                key = (self._env_var, raw)
                if key not in self._env_cache:
                    parsed = {}
                    for item in raw.split(","):
                        name, sep, value = item.strip().partition("=")
                        if sep and name.strip() and value.strip():
                            parsed[name.strip()] = value.strip()
                    self._env_cache[key] = parsed or None
                merged.update(self._env_cache[key] or {})
            for family, variable in self._aliases.items():
                value = os.environ.get(variable, "").strip()
                if value:
                    key = (variable, value)
                    if key not in self._env_cache:
                        self._env_cache[key] = {family: value.lower()}
                    merged.setdefault(family, (self._env_cache[key] or {})[family])
            for unknown in [f for f in merged if f not in self._table and f != "profile"]:
                merged.pop(unknown)
            return merged

    def resolve(self, family: str, ctx: CallContext) -> tuple[ProbedRow, str]:
        """The row for one call and its origin (selections by name only: what the benchmark times)."""
        found = self._table.get(family)
        if found is None:
            raise KeyError(f"no operator family registered under {family!r}")
        provider, fallback = found
        handle, origin = None, "chain"
        if self._get_override(family) is not None:
            handle, origin = self._get_override(family), "context"
        else:
            selected = self._env_overrides().get(family)
            if selected is not None:
                handle, origin = selected, "env"
        if handle is not None:
            for row in sorted(provider(), key=lambda r: r.priority):
                if row.name == handle and row.available() and row.spec.matches(ctx):
                    return row, origin
        if handle is None and self._env_overrides().get("profile") == "reference":
            return fallback, "profile"
        for row in sorted(provider(), key=lambda r: r.priority):
            if row.available() and row.faithful and row.spec.matches(ctx):
                return row, "chain"
        return fallback, "fallback"
