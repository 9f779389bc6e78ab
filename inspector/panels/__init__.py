"""ipywidgets panels over the views; each is imported only when used.

They need the ``ui`` extra (ipywidgets, pandas, matplotlib): without it, importing this package
(or ``inspector.show``) raises :class:`~inspector._extras.MissingExtraError` naming the extra and
the pip command that installs it, instead of a bare ``No module named 'ipywidgets'``.
"""

from __future__ import annotations

import importlib
from typing import Any

from inspector._extras import require_extra

require_extra("ui", "inspector.panels")

__all__ = ["BackendsPanel", "DispatchPanel", "Inspector", "LoaderPanel", "RpcPanel", "show"]

_HOMES = {
    "BackendsPanel": "inspector.panels.backends",
    "DispatchPanel": "inspector.panels.dispatch",
    "Inspector": "inspector.panels.app",
    "LoaderPanel": "inspector.panels.loader",
    "RpcPanel": "inspector.panels.rpc",
    "show": "inspector.panels.app",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'inspector.panels' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
