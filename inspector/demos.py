"""Whether the embedded demos load: one policy, for the app and the command line alike.

The demos (``inspector.examples``: the ``attention`` and ``rotary`` families, the demo data
backends) give every tab something to show, but your own registrations come first. So:

* ``load_demos(True)`` registers them, each only under a free name (never over yours);
* ``load_demos(False)`` never loads them;
* ``load_demos(None)`` (the app's default) loads them only when you registered no family and no
  data backend of your own.

``inspector.show(demos=...)`` and every command that needs a demo (``inspector report``,
``inspector explain``, ``inspector bench dispatch``) ask this module; no panel loads demos by itself.
It reads the registries through their public calls only.
"""

from __future__ import annotations

__all__ = ["load_demos", "sample_configs", "user_registered_anything"]


def user_registered_anything() -> bool:
    """Whether your own op families or data backends are registered (the inspector's own aside)."""
    from inspector._free_names import ORIGIN
    from inspector.backends import default_registry as backend_registry
    from inspector.dispatch import default_registry as dispatch_registry
    from inspector.dispatch.torch_sdpa.family import ORIGIN as TORCH_SDPA

    builtin = (ORIGIN, TORCH_SDPA)
    if any(family.origin not in builtin for family in dispatch_registry().family_records()):
        return True
    return any(not backend.origin.startswith(ORIGIN) for backend in backend_registry().snapshot().backends)


def load_demos(demos: bool | None = None) -> tuple[str, ...]:
    """Apply the demo policy (see the module docstring); returns notes for a status line."""
    if demos is False or (demos is None and user_registered_anything()):
        return ("demos not loaded: showing your own families and backends (inspector.show(demos=True) adds them)",)
    from inspector.examples import register_all

    return tuple(f"demo skipped: {note}" for note in register_all())


def sample_configs() -> dict[str, dict]:
    """A config per demo data backend that builds as it stands (each points at sample files written for it)."""
    from inspector.examples.data_backends import example_configs

    return example_configs()
