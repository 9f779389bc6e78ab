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
from typing import TYPE_CHECKING, Any

from inspector.dispatch.errors import UnknownImplementationError
from inspector.dispatch.registry import REGISTRY, plan_for

if TYPE_CHECKING:
    from inspector.dispatch.steering import Steer

# NOTE [ Scope stack ]
# The ContextVar holds the innermost scope as ``[selections, token]`` (plus, for a scope that
# selects a steered family, the steers it entered, undone on exit): ``selections`` is the
# merged mapping in force (never mutated) and ``token`` the one that restores the enclosing
# scope. Leaving a scope resets the token found in the current scope, so the ``op_backend``
# object keeps no per-use state and one instance can be entered concurrently from many
# threads or tasks (a ``Token`` kept on the object would belong to whichever context entered
# last). ``reset`` is also cheaper than a second ``set``.
_PLANS = REGISTRY.plans  # read per construction (NOTE [ Dispatch state ])
Scope = list[Any]  # [selections: dict[str, Any], token: contextvars.Token, (entered steers)]
_OVERRIDES: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("inspector_op_overrides", default=None)


class op_backend:  # lower-case: used like a function, ``with op_backend(attention="math"):``
    """Select implementations per family for a block: ``with op_backend(attention="math"):``.

    Names are checked against the family's table here, eagerly (``ValueError`` for an unknown
    family or row); objects pass through and are probed at resolution. ``None`` clears an
    outer scope's selection for the block. Selections are strict: a selected row that cannot
    handle a call raises ``ExplicitSelectionError`` instead of falling back. A class rather
    than a generator because it sits on hot paths (entering and leaving costs well under 1 µs).
    One instance may be shared by threads and tasks (see NOTE [ Scope stack ]).
    """

    __slots__ = ("_handles", "_steers")

    def __init__(self, selections: Mapping[str, Any] | None = None, /, **handles: Any) -> None:
        if selections is not None:
            if not isinstance(selections, Mapping):
                raise TypeError(
                    "op_backend takes keyword selections, op_backend(attention='math'), or one mapping of them; "
                    f"got {type(selections).__name__}"
                )
            handles = {**selections, **handles}
        steers: list[tuple[Steer, Any]] | None = None
        for family, handle in handles.items():
            plan = _PLANS.get(family)
            if plan is None:
                if not isinstance(family, str):
                    raise TypeError(f"op_backend: family names are strings, got {family!r}")
                plan = plan_for(family)  # a family a plugin publishes is discovered here, else UnknownFamilyError
            if handle.__class__ is str:
                if handle not in plan.by_name:
                    raise UnknownImplementationError(family, handle, plan.names)
            elif handle is not None and plan.lookup(handle) is None and not _selectable(handle):
                raise TypeError(
                    f"op_backend({family}=...) takes a row name {plan.names}, a row's implementation, "
                    f"an ImplRecord, a callable or None; got {type(handle).__name__} {handle!r}"
                )
            if plan.steer is not None:
                steers = [*(steers or ()), (plan.steer, handle)]
        self._handles = handles
        self._steers = () if steers is None else tuple(steers)

    def __enter__(self) -> op_backend:
        current = _OVERRIDES.get()
        scope: Scope = [self._handles if current is None else {**current[0], **self._handles}, None]
        scope[1] = _OVERRIDES.set(scope)
        if self._steers:
            scope.append(_enter_steers(self._steers, scope))
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        scope = _OVERRIDES.get()
        if scope is None:
            raise RuntimeError("op_backend.__exit__ without a matching __enter__; use it as `with op_backend(...):`")
        _OVERRIDES.reset(scope[1])
        if self._steers:
            _exit_steers(scope[2])

    @property
    def handles(self) -> Mapping[str, Any]:
        return MappingProxyType(self._handles)

    def __repr__(self) -> str:
        inner = ", ".join(f"{family}={handle!r}" for family, handle in self._handles.items())
        return f"op_backend({inner})"


def _selectable(handle: Any) -> bool:
    """An unregistered object can be selected if it can be called or can say what it supports."""
    return callable(handle) or callable(getattr(handle, "supports_call", None))


def _enter_steers(steers: tuple[tuple[Steer, Any], ...], scope: Scope) -> list[tuple[Steer, Any]]:
    """Enter each steered family's selection; on failure undo what was entered and the scope."""
    entered: list[tuple[Steer, Any]] = []
    try:
        for steer, handle in steers:
            entered.append((steer, steer.enter(handle)))
    except BaseException:
        _exit_steers(entered)
        _OVERRIDES.reset(scope[1])
        raise
    return entered


def _exit_steers(entered: list[tuple[Steer, Any]]) -> None:
    """Undo entered steers innermost first; every one is undone even if another raises."""
    error: BaseException | None = None
    for steer, token in reversed(entered):
        try:
            steer.exit(token)
        except BaseException as exc:  # keep undoing the rest, then re-raise the first failure
            error = error or exc
    if error is not None:
        raise error


def current_overrides() -> Mapping[str, Any]:
    """The selections in force in this context (family -> name or object), read-only."""
    current = _OVERRIDES.get()
    selections = {} if current is None else current[0]
    return MappingProxyType({k: v for k, v in selections.items() if v is not None})


def get_override(family: str) -> Any:
    """The context selection for ``family`` here, or ``None``."""
    current = _OVERRIDES.get()
    return None if current is None else current[0].get(family)
