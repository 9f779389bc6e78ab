"""Op families that other distributions publish under the ``inspector.op_families`` entry points.

NOTE [ Family plugins ]
A distribution publishes its families with an entry point per module (or zero-argument
``register`` function); the entry point's name is a label, the families are whatever loading
it registers::

    [project.entry-points."inspector.op_families"]
    my_kernels = "my_pkg.dispatch"             # importing it calls register_family(...)
    more = "my_pkg.extra:register"             # or a function that does

Entry points are read once, lazily: on the first ``families()`` or the first lookup of a family
that is not registered (never at ``import inspector.dispatch``). A plugin that raises anything
but ``KeyboardInterrupt`` while loading (``ImportError``, ``SystemExit``...) is recorded as failed
with its error and never breaks a lookup; ``plugins()`` lists what happened to each one. The
registry decides when to read them (``DispatchRegistry.discover``); finding and loading them is
shared with the data backends (NOTE [ Entry-point plugins ] in ``inspector._entry_points``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from types import ModuleType
from typing import Any

from inspector._entry_points import PluginRecord, distribution, find_entry_points, load_entry_point

ENTRY_POINT_GROUP = "inspector.op_families"
logger = logging.getLogger("inspector.dispatch")


@dataclass(frozen=True)
class FamilyPlugin(PluginRecord):
    """One entry point and what became of it: ``loaded`` (with the families it registered) or ``failed``."""

    families: tuple[str, ...] = field(default=(), kw_only=True)


def _run(ep: EntryPoint, target: Any) -> None:
    if inspect.isclass(target):
        raise TypeError(f"entry point {ep.value!r} is a class; publish a module or a register() function")
    if callable(target) and not isinstance(target, ModuleType):
        target()


def _load(ep: EntryPoint, registered: Callable[[], Collection[str]]) -> FamilyPlugin:
    dist = distribution(ep)
    before = set(registered())
    _, exc = load_entry_point(ep, lambda target: _run(ep, target))
    if exc is not None:
        logger.warning("op family plugin %r failed to load: %s: %s", ep.name, type(exc).__name__, exc)
        return FamilyPlugin(ep.name, ep.value, dist, "failed", detail=f"{type(exc).__name__}: {exc}")
    added = tuple(sorted(set(registered()) - before))
    return FamilyPlugin(ep.name, ep.value, dist, "loaded", families=added)


def load_family_plugins(registered: Callable[[], Collection[str]]) -> tuple[FamilyPlugin, ...]:
    """Load every ``inspector.op_families`` entry point; ``registered()`` names the families known
    now (what each plugin added is the difference)."""
    return tuple(_load(ep, registered) for ep in find_entry_points(ENTRY_POINT_GROUP))
