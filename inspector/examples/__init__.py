"""The embedded default: real op families and demo data backends, so every panel has something to show.

Importing this package registers the ``attention`` and ``rotary`` op families and the
``synthetic``, ``npz``, ``storage`` and ``hdf5`` data backends (``hdf5`` as an import error
without h5py), each only under a free name: a family or backend you registered under one of
these names is never replaced, and ``skipped()`` says which demos were left out.
"""

from __future__ import annotations

from inspector._free_names import skipped
from inspector.examples import attention as _attention
from inspector.examples import data_backends
from inspector.examples import rotary as _rotary
from inspector.examples.attention import attention, attention_context
from inspector.examples.rotary import apply_rotary, rotary_angles, rotary_context

__all__ = [
    "apply_rotary",
    "attention",
    "attention_context",
    "data_backends",
    "register_all",
    "rotary_angles",
    "rotary_context",
    "skipped",
]


def register_all() -> tuple[str, ...]:
    """(Re-)register every embedded family and data backend under free names, e.g. after a test
    emptied a registry; returns what was skipped because the name was taken."""
    _attention.register()
    _rotary.register()
    data_backends.install()
    return skipped()


register_all()
