"""Every control of every panel explains itself with a tooltip."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

import inspector

if TYPE_CHECKING:
    import ipywidgets as widgets


def descendants(widget: widgets.Widget) -> Iterator[widgets.Widget]:
    yield widget
    for child in getattr(widget, "children", ()):
        yield from descendants(child)


def is_control(widget: widgets.Widget) -> bool:
    """What a user can act on: anything with a ``disabled`` trait (buttons, fields, menus, toggles)."""
    return widget.has_trait("disabled")


@pytest.fixture(scope="module")
def app() -> inspector.panels.Inspector:
    app = inspector.show()
    for title in app.tab.titles:
        app.open(title)
    return app


def test_every_control_of_every_panel_has_a_tooltip(app) -> None:  # type: ignore[no-untyped-def]
    missing = []
    for title, panel in app.panels.items():
        controls = [w for w in descendants(panel.widget) if is_control(w)]
        assert len(controls) >= 5, title
        missing += [f"{title}: {type(w).__name__} {getattr(w, 'description', '')!r}" for w in controls if not w.tooltip]
    assert missing == []


def test_every_row_toggle_button_has_its_own_tooltip(app) -> None:  # type: ignore[no-untyped-def]
    for toggle in app.panels["Dispatch"].toggles.values():
        assert len(toggle.tooltips) == len(toggle.options) and all(toggle.tooltips)
