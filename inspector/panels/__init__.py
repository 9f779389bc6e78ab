"""ipywidgets panels over the views; each is imported only when used.

They need the ``ui`` extra (ipywidgets, pandas, matplotlib): without it, importing this package
(or ``inspector.show``) raises :class:`~inspector._extras.MissingExtraError` naming the extra and
the pip command that installs it, instead of a bare ``No module named 'ipywidgets'``.
"""

from __future__ import annotations

import importlib
from typing import Any

from inspector._extras import require_extra
from inspector.parts import PARTS

require_extra("ui", "inspector.panels")

# Each part's panel class, read from ``inspector.parts``; the app and ``show`` live in ``app``.
_HOMES = {
    **{part.panel_class: part.panel_module for part in PARTS},
    "Inspector": "inspector.panels.app",
    "show": "inspector.panels.app",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'inspector.panels' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
