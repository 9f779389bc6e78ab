"""What the inspector ships registers only under free names: a family or backend the user
registered always wins.

Every demo registration (and PyTorch's own ``torch_sdpa`` family) asks ``may_register_*`` first,
handing over the registry it is about (read through its public calls, so this module imports no
engine part); a name that is taken by someone else is skipped and remembered, so the app can say
which of its own it left out and why.
"""

from __future__ import annotations

from typing import Any

ORIGIN = "inspector.examples"
_skipped: dict[str, str] = {}


def may_register_family(registry: Any, name: str, origin: str = ORIGIN) -> bool:
    """Whether the family ``name`` that the inspector ships (a demo, or PyTorch's ``torch_sdpa``
    from ``origin``) may be (re-)registered on the dispatch ``registry``: the name is free or
    already the inspector's own."""
    family = registry.registered_family(name)
    if family is None or family.origin == origin:
        _skipped.pop(f"family {name}", None)
        return True
    _skipped[f"family {name}"] = f"kept your {name!r} family (registered by {family.origin or 'your code'})"
    return False


def may_register_backend(registry: Any, name: str) -> bool:
    """Whether the demo data backend ``name`` may be registered on ``registry``."""
    if not registry.is_registered(name):
        _skipped.pop(f"backend {name}", None)
        return True
    origin = next((b.origin for b in registry.snapshot().backends if b.name == name), "")
    if origin.startswith(ORIGIN):
        return True
    _skipped[f"backend {name}"] = f"kept your {name!r} data backend ({origin or 'registered by your code'})"
    return False


def skipped() -> tuple[str, ...]:
    """What the demos left out because the name was taken, one sentence each."""
    return tuple(_skipped.values())
