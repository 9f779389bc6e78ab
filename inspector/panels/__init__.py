"""ipywidgets panels over the views; each is imported only when used."""

from __future__ import annotations

import importlib
from typing import Any

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
