"""The shape every panel shares: a root widget, a status line, guarded callbacks, static HTML."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import ipywidgets as widgets

from inspector.panels._guard import ErrorLine, guarded

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S")  # the panel's state: its part's page state

# NOTE [ Labels are never cut ]
# ipywidgets gives description labels and buttons a fixed width and cuts what does not fit with
# an ellipsis ("Run and comp…"). In a panel, labels and buttons are at least as wide as their
# text; the widths panels set are the usual size, not a limit.
PANEL_CSS = """
<style>
.inspector-status { font-size: 0.9em; opacity: 0.85; }
.inspector-error-box { border-left: 3px solid #d62728; padding: 4px 8px; margin: 4px 0; }
.inspector-pre { font-size: 0.85em; line-height: 1.3; white-space: pre; overflow-x: auto; }
/* Output areas make their <pre> inherit the page font (Voila: sans-serif); a trace stays monospace. */
pre.inspector-pre, .jp-OutputArea-output pre.inspector-pre {
  font-family: var(--jp-code-font-family, ui-monospace, "DejaVu Sans Mono", monospace); }
.inspector-panel .widget-label, .inspector-panel .jupyter-button { min-width: max-content; }
.inspector-panel .widget-toggle-buttons .widget-toggle-button { min-width: max-content; }
.inspector-stale > :not(.inspector-stale-note) { opacity: 0.4; }
.inspector-stale-note { color: #d62728; font-size: 0.9em; }
.inspector-row-refusal { color: #d62728; font-size: 0.85em; margin-left: 6px; }
.inspector-dispatch-panel .inspector-decision-table caption { display: none; }
</style>
"""
PANEL_CLASS = "inspector-panel"


@contextmanager
def busy(*buttons: widgets.Button) -> Iterator[None]:
    """Disable ``buttons`` while the work they started runs in the callback, whatever its outcome."""
    for button in buttons:
        button.disabled = True
    try:
        yield
    finally:
        for button in buttons:
            button.disabled = False


class Panel(Generic[S]):
    """Base of every panel: subclasses build ``self.widget`` and implement ``state`` and ``static_html``."""

    title = "Panel"

    def __init__(self) -> None:
        self.errors = ErrorLine()  # failures no single control caused; the others show beside their control
        self.status = widgets.HTML(value="")
        self.status.add_class("inspector-status")
        self._guard = guarded(self.errors)
        self.widget: widgets.Widget = widgets.VBox([])

    def guard(self, fn: F) -> F:
        """Wrap a callback so a failure shows up in the panel instead of killing it."""
        return self._guard(fn)

    def guard_into(self, line: ErrorLine, fn: F) -> F:
        """Like ``guard``, but the failure shows in ``line``: the error line beside the control that acted."""
        return guarded(line)(fn)

    def set_status(self, text: str) -> None:
        self.status.value = html.escape(text)

    def state(self) -> S:
        """What the panel shows now, as its part's page state (``views/<part>.py``)."""
        raise NotImplementedError

    def static_html(self) -> str:
        """HTML that shows the panel's content without a kernel (tables, PNG figures)."""
        raise NotImplementedError

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/html"] = self.static_html()
        return bundle

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {html.unescape(self.status.value) or self.title}>"
