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
with its error and never breaks a lookup; ``plugins()`` lists what happened to each one.
"""

from __future__ import annotations

import inspect
import logging
import threading
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType

from inspector.dispatch import registry

ENTRY_POINT_GROUP = "inspector.op_families"
logger = logging.getLogger("inspector.dispatch")
_lock = threading.RLock()


@dataclass(frozen=True)
class FamilyPlugin:
    """One entry point and what became of it: ``loaded`` (with the families it registered) or ``failed``."""

    name: str
    value: str
    distribution: str | None
    status: str
    families: tuple[str, ...] = ()
    detail: str = ""


def _distribution(ep: EntryPoint) -> str | None:
    dist = getattr(ep, "dist", None)
    return None if dist is None else f"{dist.name} {dist.version}"


def _load(ep: EntryPoint) -> FamilyPlugin:
    dist = _distribution(ep)
    before = set(registry._FAMILIES)
    try:
        target = ep.load()
        if inspect.isclass(target):
            raise TypeError(f"entry point {ep.value!r} is a class; publish a module or a register() function")
        if callable(target) and not isinstance(target, ModuleType):
            target()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit from a plugin's import is its failure, not ours
        logger.warning("op family plugin %r failed to load: %s: %s", ep.name, type(exc).__name__, exc)
        return FamilyPlugin(ep.name, ep.value, dist, "failed", detail=f"{type(exc).__name__}: {exc}")
    added = tuple(sorted(set(registry._FAMILIES) - before))
    return FamilyPlugin(ep.name, ep.value, dist, "loaded", added)


def discover() -> bool:
    """Load the entry points once; ``True`` if this call loaded them (so a lookup may retry)."""
    if registry.PLUGINS[0] is not None:
        return False
    with _lock:
        if registry.PLUGINS[0] is not None:
            return False
        registry.PLUGINS[0] = ()  # loading a plugin may look families up: do not recurse
        found: dict[str, EntryPoint] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            found.setdefault(ep.name, ep)
        registry.PLUGINS[0] = tuple(_load(found[name]) for name in sorted(found))
        return True


def plugins() -> tuple[FamilyPlugin, ...]:
    """What each ``inspector.op_families`` entry point did (discovering them now if needed)."""
    discover()
    return tuple(registry.PLUGINS[0] or ())
