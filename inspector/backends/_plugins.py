"""Backends that other distributions declare under the ``inspector.data_backends`` entry points.

NOTE [ Plugin discovery ]
A distribution publishes a backend with an entry point whose name is the dataset type::

    [project.entry-points."inspector.data_backends"]
    parquet = "my_pkg.parquet_backend"          # a module (or object) with build(cfg, ctx)

Entry points are read once per registry, lazily, on the first lookup or snapshot (never at
``import inspector.backends``), so a broken plugin cannot break an import. Loading one that
raises is recorded like an optional backend whose dependency is missing: ``backend_for`` then
raises ``BackendImportError`` chained from the plugin's error, and the inspector shows it.
"Raises" means any ``BaseException`` but ``KeyboardInterrupt``: a plugin whose import calls
``sys.exit()`` is a failed plugin, not the end of every lookup in the process (the loading
itself is shared with dispatch: NOTE [ Entry-point plugins ] in ``inspector._entry_points``). An entry point
must resolve to a module or an object with ``build(cfg, ctx)``, or to a build function; one
that resolves to a class is refused here, with the fix, rather than failing at first use. A
name that is already registered keeps its registration; the plugin is reported as shadowed.
"""

from __future__ import annotations

import functools
import inspect
import logging
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any

from inspector._entry_points import PluginRecord, distribution, find_entry_points, load_entry_point
from inspector.backends._errors import InvalidBackendError, describe_error

if TYPE_CHECKING:
    from inspector.backends._registry import BackendRegistry

ENTRY_POINT_GROUP = "inspector.data_backends"

logger = logging.getLogger("inspector.backends")


@dataclass(frozen=True)
class PluginInfo(PluginRecord):
    """One entry point and what became of it: ``registered``, ``failed`` or ``shadowed``."""


def register_target(registry: BackendRegistry, ep: EntryPoint, target: Any, *, source: str) -> None:
    """Register what entry point ``ep`` resolved to, or raise :class:`InvalidBackendError` saying why not."""
    if inspect.isclass(target):
        raise InvalidBackendError(
            f"entry point {ep.name} = {ep.value!r} resolves to the class {target.__qualname__!r}; a plugin backend "
            f"is a module, an object with build(cfg, ctx) or a build function. Point the entry point at the module, "
            f"or at an instance (e.g. backend = {target.__qualname__}())."
        )
    if callable(getattr(target, "build", None)):
        registry.register_module(ep.name, target, origin=source)
    elif callable(target):
        registry.register(ep.name, target, origin=source)
    else:
        raise InvalidBackendError(
            f"entry point {ep.value!r} is neither a backend with build(cfg, ctx) nor a build callable"
        )


def load_plugins(registry: BackendRegistry, group: str = ENTRY_POINT_GROUP) -> tuple[PluginInfo, ...]:
    """Load every entry point of ``group`` into ``registry`` (see NOTE [ Plugin discovery ])."""
    records = []
    for ep in find_entry_points(group):
        dist = distribution(ep)
        source = f"plugin {ep.name} = {ep.value}" + (f" (distribution {dist})" if dist else "")
        if registry.origin_of(ep.name) == source:  # registered by an earlier, interrupted discovery
            records.append(PluginInfo(ep.name, ep.value, dist, "registered"))
            continue
        if registry.is_registered(ep.name):
            records.append(PluginInfo(ep.name, ep.value, dist, "shadowed", "name already registered"))
            logger.info("plugin backend %r ignored: the name is already registered", ep.name)
            continue
        _, exc = load_entry_point(ep, functools.partial(register_target, registry, ep, source=source))
        if exc is not None:  # recorded and shown, never raised (see the NOTE)
            registry.record_import_error(ep.name, exc, install=dist and f"fix or reinstall {dist}", source=source)
            records.append(PluginInfo(ep.name, ep.value, dist, "failed", describe_error(exc)))
            logger.warning("plugin backend %r failed to load: %s", ep.name, describe_error(exc))
            continue
        records.append(PluginInfo(ep.name, ep.value, dist, "registered"))
    return tuple(records)
