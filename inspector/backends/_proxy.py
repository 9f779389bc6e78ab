"""The handle consumers call verbs on: ``backend_for("npz").build(cfg, ctx)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class BackendProxy:
    """Forwards ``proxy.<verb>`` to the registered backend; anything else is a readable error.

    Wrapping, rather than handing out the module, is what turns a missing verb into
    :class:`MissingOperationError` with a "Supported by" hint instead of a bare
    ``AttributeError``. Private and dunder names stay ``AttributeError`` so ``hasattr``,
    ``copy`` and IPython's display probes behave as usual.
    """

    __slots__ = ("_missing", "_name", "_target", "_verbs")

    def __init__(
        self,
        name: str,
        target: Any,
        verbs: tuple[str, ...],
        missing: Callable[[str, str], NotImplementedError],
    ) -> None:
        self._name = name
        self._target = target
        self._verbs = verbs
        self._missing = missing

    def __repr__(self) -> str:
        return f"<BackendProxy name={self._name!r}>"

    def __getattr__(self, op: str) -> Any:
        if op.startswith("_"):
            raise AttributeError(f"{self!r} has no attribute {op!r}")
        if op in self._verbs:
            return getattr(self._target, op)
        raise self._missing(self._name, op)

    def __dir__(self) -> list[str]:
        return sorted({*self._verbs, "supports"})

    def supports(self, op: str) -> bool:
        """Does this backend publish the verb ``op``? Never raises."""
        return op in self._verbs
