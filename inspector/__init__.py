"""inspector: look inside the machinery that picks implementations and moves data.

The engine parts (``inspector.dispatch``, ``inspector.backends``, ``inspector.loader``,
``inspector.rpc``) are plain libraries for training code. The panels and views are served
lazily from here, so ``import inspector`` never pulls in ipywidgets, pandas or matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Inspector", "__version__", "show", "to_html"]

if TYPE_CHECKING:
    from inspector.panels.app import Inspector, show
    from inspector.report import to_html


def __getattr__(name: str) -> Any:
    if name in ("Inspector", "show"):
        from inspector.panels import app

        return getattr(app, name)
    if name == "to_html":
        from inspector.report import to_html

        return to_html
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("dispatch-inspector")
        except PackageNotFoundError:
            return "0+unknown"
    raise AttributeError(f"module 'inspector' has no attribute {name!r}")
