"""The embedded default: real op families (and demo data) so every panel has something to show.

Importing this package registers the ``attention`` and ``rotary`` families.
"""

from __future__ import annotations

from inspector.examples import attention as _attention
from inspector.examples import rotary as _rotary
from inspector.examples.attention import attention, attention_context
from inspector.examples.rotary import apply_rotary, rotary_angles, rotary_context

__all__ = ["apply_rotary", "attention", "attention_context", "register_all", "rotary_angles", "rotary_context"]


def register_all() -> None:
    """(Re-)register every embedded family, e.g. after a test emptied the registry."""
    _attention.register()
    _rotary.register()


register_all()
