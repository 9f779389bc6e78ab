"""Views: pure functions from engine snapshots to pandas DataFrames and matplotlib Figures.

One module per engine part (named in ``inspector.parts``: ``inspector.views.dispatch``, ...),
each imported on first use; no widgets anywhere here, so a test can call every view with a
hand-made snapshot. They need the ``ui`` extra (pandas, matplotlib): without it, importing this
package raises :class:`~inspector._extras.MissingExtraError` naming the pip command to run.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from inspector._extras import require_extra
from inspector.parts import PARTS

require_extra("ui", "inspector.views")

__all__ = sorted(part.views.rpartition(".")[2] for part in PARTS)


def __getattr__(name: str) -> ModuleType:
    if name in __all__:
        return importlib.import_module(f"inspector.views.{name}")
    raise AttributeError(f"module 'inspector.views' has no attribute {name!r}; views live in {__all__}")
