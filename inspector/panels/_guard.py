"""One guard for every panel callback: exceptions become a readable message, never a dead widget."""

from __future__ import annotations

import functools
import html
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as widgets

from inspector._messages import explanation_of

logger = logging.getLogger("inspector.panels")

F = TypeVar("F", bound=Callable[..., Any])


def error_html(exc: BaseException) -> str:
    """Headline (type and first line), then the message's remaining ``key = value`` lines.

    An error built from a ``Message`` is shown from its pieces (NOTE [ Messages ]); any other from its text.
    """
    explained = explanation_of(exc)
    if explained is not None:
        headline, details = explained.headline, "\n".join(explained.details)
    else:
        text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        headline, _, details = text.partition("\n")
    parts = [f"<b>{html.escape(type(exc).__name__)}</b>: {html.escape(headline)}"]
    if details.strip():
        parts.append(f'<pre class="inspector-error-details">{html.escape(details.strip())}</pre>')
    return '<div class="inspector-error-box">' + "<br>".join(parts) + "</div>"


class ErrorLine:
    """The panel area where a failed callback explains itself (placed beside the control it is about)."""

    def __init__(self, name: str = "") -> None:
        self.widget = widgets.HTML(value="")
        self.widget.add_class("inspector-error")
        if name:
            self.widget.add_class(f"inspector-error-{name}")
        self.last: BaseException | None = None

    def show(self, exc: BaseException) -> None:
        self.last = exc
        self.widget.value = error_html(exc)

    def show_text(self, message: str) -> None:
        """Show a problem that arrived as text (a trace's error), not as an exception."""
        self.last = None
        self.widget.value = f'<div class="inspector-error-box">{html.escape(message)}</div>'

    def clear(self) -> None:
        self.last = None
        self.widget.value = ""


def guarded(error_line: ErrorLine) -> Callable[[F], F]:
    """Wrap a callback so an exception is logged and rendered into ``error_line``."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                logger.debug("panel callback %s failed", getattr(fn, "__qualname__", fn), exc_info=True)
                error_line.show(exc)
                return None
            error_line.clear()
            return result

        return wrapper  # type: ignore[return-value]

    return decorate


STALE = "inspector-stale"


class StaleMark:
    """Results that a failed edit invalidated: dimmed, under a note that says why and what to do.

    ``widget`` is a box holding the note and ``children``; ``mark`` dims them, ``clear`` restores them.
    """

    def __init__(self, *children: widgets.Widget) -> None:
        self.note = widgets.HTML(value="", layout=widgets.Layout(display="none"))
        self.note.add_class("inspector-stale-note")
        self.widget = widgets.VBox([self.note, *children])
        self.widget.add_class("inspector-results")

    @property
    def stale(self) -> bool:
        return STALE in self.widget._dom_classes

    def mark(self, why: str) -> None:
        self.note.value = f"<b>stale</b>: {html.escape(why)}"
        self.note.layout.display = None
        self.widget.add_class(STALE)

    def clear(self) -> None:
        self.note.value = ""
        self.note.layout.display = "none"
        self.widget.remove_class(STALE)
