"""The optional extras of the distribution, and the one error for a feature whose extra is not installed.

The engine needs only NumPy, PyTorch and PyYAML. The panels, views and report need the ``ui``
extra (pandas, matplotlib, ipywidgets, jinja2); ``inspector lab`` needs the ``lab`` extra
(JupyterLab, which brings ``ui`` along).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from inspector.errors import InspectorError

DISTRIBUTION = "dispatch-inspector"

EXTRAS: dict[str, tuple[str, ...]] = {
    "ui": ("ipywidgets", "pandas", "matplotlib", "jinja2"),
    "lab": ("jupyterlab", "ipykernel"),
}


def install_command(extra: str) -> str:
    """The pip command that installs ``extra``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


class MissingExtraError(InspectorError, ImportError):
    """A feature needs an extra that is not installed; ``extra`` names it, ``missing`` the absent modules."""

    def __init__(self, feature: str, extra: str, missing: Sequence[str]) -> None:
        self.feature = feature
        self.extra = extra
        self.missing = tuple(missing)
        super().__init__(
            f"{feature} needs the [{extra}] extra, which is not installed (missing: {', '.join(self.missing)}). "
            f"Install it with: {install_command(extra)}"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.feature, self.extra, self.missing))


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (checked without importing them)."""
    missing = []
    for name in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def require_extra(extra: str, feature: str) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` and how to install it, if any of its modules is missing."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtraError(feature, extra, missing)
