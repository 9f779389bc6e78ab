from __future__ import annotations

import inspector
from inspector.panels.app import TABS, Inspector, TabSpec
from inspector.panels.dispatch import DispatchPanel


def test_show_returns_the_inspector_with_the_dispatch_tab_built() -> None:
    app = inspector.show()
    assert isinstance(app, Inspector)
    assert "Dispatch" in app.tab.titles
    assert isinstance(app.panels["Dispatch"], DispatchPanel)


def test_tabs_are_built_lazily_on_selection() -> None:
    app = Inspector(tabs=(TABS[0], TabSpec("Dispatch 2", "inspector.panels.dispatch", "DispatchPanel")))
    assert list(app.panels) == ["Dispatch"]
    app.tab.selected_index = 1
    assert list(app.panels) == ["Dispatch", "Dispatch 2"]
    assert app.status.value == "2 of 2 tabs opened"


def test_a_broken_tab_shows_its_error_instead_of_breaking_the_app() -> None:
    app = Inspector(tabs=(TABS[0], TabSpec("Broken", "inspector.panels.dispatch", "NoSuchPanel")))
    app.tab.selected_index = 1
    assert "AttributeError" in app.tab.children[1].value


def test_app_has_a_static_html_fallback() -> None:
    bundle = inspector.show()._repr_mimebundle_()
    assert "<h3>Dispatch</h3>" in bundle["text/html"]
