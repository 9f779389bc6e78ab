"""One way to isolate a registry for a test or a notebook experiment: save its state, run, put it back.

Every engine part keeps what registration changes on one object with ``save_state()`` and
``restore_state(state)``: the dispatch registry, the data backends' registry and RPC's backend
table. ``restoring(registry)`` is the one context manager over any of them; each part's helper
(``isolated_dispatch``, ``isolated_registry``, ``scoped_backends``) is a thin wrapper that also
says what a block starts from. It swaps process-wide state, so do not use it while other threads
use the registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

__all__ = ["Restorable", "restoring"]


class Restorable(Protocol):
    def save_state(self) -> Any: ...

    def restore_state(self, state: Any) -> None: ...


R = TypeVar("R", bound=Restorable)


@contextmanager
def restoring(registry: R) -> Iterator[R]:
    """Run the block, then restore ``registry`` to what it held before, even after an exception."""
    saved = registry.save_state()
    try:
        yield registry
    finally:
        registry.restore_state(saved)
