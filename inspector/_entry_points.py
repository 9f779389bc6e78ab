"""Plugins that other distributions publish under an entry-point group: found, loaded and recorded once.

NOTE [ Entry-point plugins ]
Dispatch (``inspector.op_families``) and backends (``inspector.data_backends``) read their
plugins the same way. ``find_entry_points`` keeps the first entry point of each name (a
distribution seen twice on ``sys.path`` would otherwise load twice), in name order;
``load_entry_point`` loads one and hands what it resolved to to the part's ``use`` (register it,
or call it), returning ``use``'s result or the exception loading or using it raised: any
``BaseException`` but ``KeyboardInterrupt``, so a plugin whose import calls ``sys.exit()`` is a
failed plugin, never the end of a lookup. Each part records what became of every entry point
in a ``PluginRecord`` (its subclass adds what the part needs), and decides when to read its
group (lazily, once, never at import) and what a loaded target must be.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

R = TypeVar("R")

__all__ = ["PluginRecord", "distribution", "find_entry_points", "load_entry_point"]


@dataclass(frozen=True)
class PluginRecord:
    """One entry point and what became of it (``status`` is the part's word: loaded, failed...)."""

    name: str
    value: str
    distribution: str | None
    status: str
    detail: str = ""


def distribution(ep: EntryPoint) -> str | None:
    """``"name version"`` of the distribution that publishes ``ep``, if known."""
    dist = getattr(ep, "dist", None)
    return None if dist is None else f"{dist.name} {dist.version}"


def find_entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The group's entry points, the first one per name, in name order (NOTE [ Entry-point plugins ])."""
    seen: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        seen.setdefault(ep.name, ep)
    return tuple(seen[name] for name in sorted(seen))


def load_entry_point(ep: EntryPoint, use: Callable[[Any], R]) -> tuple[R | None, BaseException | None]:
    """``(use(target), None)``, or ``(None, error)`` for anything but ``KeyboardInterrupt`` that loading
    the entry point or using its target raised (NOTE [ Entry-point plugins ])."""
    try:
        return use(ep.load()), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit from a plugin's import is its failure, not ours
        return None, exc
