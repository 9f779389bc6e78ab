"""The context tier: ``op_backend(...)`` scopes held in one ``ContextVar``.

A scope's selections are visible to the code it encloses and to nothing else: another thread
or asyncio task starts from its own context and does not see them. To carry a selection into
a thread, run the thread's work under ``contextvars.copy_context().run`` or enter
``op_backend`` inside it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from inspector.dispatch.errors import UnknownFamilyError, UnknownImplementationError
from inspector.dispatch.registry import _FAMILIES, _PLANS, plan_for

# The mapping stored here is never mutated: entering a scope stores a merged copy.
_OVERRIDES: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "inspector_op_overrides", default=None
)


class op_backend:  # lower-case: used like a function, ``with op_backend(attention="math"):``
    """Select implementations per family for a block: ``with op_backend(attention="math"):``.

    Names are checked against the family's table here, eagerly (``ValueError`` for an unknown
    family or row); objects pass through and are probed at resolution. ``None`` clears an
    outer scope's selection for the block. Selections are strict: a selected row that cannot
    handle a call raises ``ExplicitSelectionError`` instead of falling back. A class rather
    than a generator because it sits on hot paths (entering and leaving costs well under 1 µs).
    """

    __slots__ = ("_handles", "_outer", "_token")

    def __init__(self, **handles: Any) -> None:
        for family, handle in handles.items():
            plan = _PLANS.get(family)
            if plan is None:
                if family not in _FAMILIES:
                    raise UnknownFamilyError(family, list(_FAMILIES))
                plan = plan_for(family)
            if handle.__class__ is str and handle not in plan.by_name:
                raise UnknownImplementationError(family, handle, plan.names)
        self._handles = handles
        self._token: contextvars.Token[dict[str, Any] | None] | None = None
        self._outer: list[contextvars.Token[dict[str, Any] | None]] | None = None

    def __enter__(self) -> op_backend:
        current = _OVERRIDES.get()
        token = _OVERRIDES.set({**current, **self._handles} if current else self._handles)
        if self._token is not None:  # the same object entered again while still active
            if self._outer is None:
                self._outer = []
            self._outer.append(self._token)
        self._token = token
        return self

    def __exit__(self, *exc_info: object) -> None:
        token = self._token
        self._token = self._outer.pop() if self._outer else None
        _OVERRIDES.reset(token)  # type: ignore[arg-type]

    @property
    def handles(self) -> Mapping[str, Any]:
        return MappingProxyType(self._handles)

    def __repr__(self) -> str:
        inner = ", ".join(f"{family}={handle!r}" for family, handle in self._handles.items())
        return f"op_backend({inner})"


def current_overrides() -> Mapping[str, Any]:
    """The selections in force in this context (family -> name or object), read-only."""
    current = _OVERRIDES.get()
    return MappingProxyType({k: v for k, v in (current or {}).items() if v is not None})


def get_override(family: str) -> Any:
    """The context selection for ``family`` here, or ``None``."""
    current = _OVERRIDES.get()
    return None if current is None else current.get(family)
