"""Views: pure functions from engine snapshots to pandas DataFrames and matplotlib Figures.

One module per engine part (``inspector.views.dispatch``, ``.backends``, ``.loader``, ``.rpc``),
each imported on first use; no widgets anywhere here, so a test can call every view with a
hand-made snapshot.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["backends", "dispatch", "loader", "rpc"]


def __getattr__(name: str) -> ModuleType:
    if name in __all__:
        return importlib.import_module(f"inspector.views.{name}")
    raise AttributeError(f"module 'inspector.views' has no attribute {name!r}; views live in {__all__}")
