"""The handle consumers call verbs on: ``backend_for("npz").build(cfg, ctx)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from inspector.backends._verbs import RESERVED


class BackendProxy:
    """Forwards ``proxy.<verb>`` to the registered backend; anything else is a readable error.

    Wrapping, rather than handing out the module, is what turns a missing verb into
    :class:`MissingOperationError` with a "Supported by" hint instead of a bare
    ``AttributeError``. Private and dunder names stay ``AttributeError`` so ``hasattr``,
    ``copy`` and IPython's display probes behave as usual.

    Each backend gets its own subclass (see :func:`proxy_class`) whose verbs are properties,
    so fetching a verb is one descriptor call; only misses reach ``__getattr__``.
    """

    __slots__ = ("_missing", "_name", "_target")
    _verbs: ClassVar[frozenset[str]] = frozenset()
    _verb_order: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str, target: Any, missing: Callable[[str, str], NotImplementedError]) -> None:
        self._name = name
        self._target = target
        self._missing = missing

    def __repr__(self) -> str:
        return f"<BackendProxy name={self._name!r}>"

    def __getattr__(self, op: str) -> Any:
        if op.startswith("_"):
            raise AttributeError(f"{self!r} has no attribute {op!r}")
        raise self._missing(self._name, op)

    def __dir__(self) -> list[str]:
        return sorted({*self._verbs, *RESERVED})

    def supports(self, op: str) -> bool:
        """Does this backend publish the verb ``op``? Never raises."""
        return op in self._verbs


def _forward(verb: str) -> property:
    def get(self: BackendProxy) -> Any:
        return getattr(self._target, verb)

    return property(get, doc=f"The backend's {verb!r} verb.")


def proxy_class(verbs: tuple[str, ...]) -> type[BackendProxy]:
    """A ``BackendProxy`` subclass with one forwarding property per verb (made once per registration)."""
    namespace: dict[str, Any] = {verb: _forward(verb) for verb in verbs}
    namespace.update(__slots__=(), _verbs=frozenset(verbs), _verb_order=verbs, __module__=BackendProxy.__module__)
    return type("BackendProxy", (BackendProxy,), namespace)
