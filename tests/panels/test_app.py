from __future__ import annotations

import html

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
    assert app.current is app.panels["Dispatch 2"]


def test_a_broken_tab_shows_its_error_instead_of_breaking_the_app() -> None:
    app = Inspector(tabs=(TABS[0], TabSpec("Broken", "inspector.panels.dispatch", "NoSuchPanel")))
    app.tab.selected_index = 1
    assert "AttributeError" in app.tab.children[1].value


def test_app_has_a_static_html_fallback() -> None:
    bundle = inspector.show()._repr_mimebundle_()
    assert "<h3>Dispatch</h3>" in bundle["text/html"]


def test_opening_the_app_builds_only_the_first_tab_and_starts_nothing() -> None:
    import json
    import subprocess
    import sys

    code = (
        "import json, sys, inspector, psutil; app = inspector.show(); "
        "print(json.dumps({'modules': sorted(m for m in sys.modules if m.startswith(('inspector.loader', "
        "'inspector.rpc', 'inspector.panels.loader', 'inspector.panels.rpc', 'inspector.panels.backends'))), "
        "'children': len(psutil.Process().children()), 'built': list(app.panels)}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    state = json.loads(result.stdout.strip().splitlines()[-1])
    assert state == {"modules": [], "children": 0, "built": ["Dispatch"]}


def test_each_tab_shows_its_status_line_once() -> None:
    app = inspector.show()
    panel = app.panels["Dispatch"]
    assert panel.status.value == "attention: sdpa (origin=chain)"
    assert "origin=chain" not in app.status.value  # the app's line holds only its notes
    assert all(html.escape(note) in app.status.value for note in app.notes)
    panel.select("attention", "math")
    assert panel.status.value == "attention: math (origin=context)" and "origin=context" not in app.status.value
    app.tab.selected_index = app.tab.titles.index("RPC")
    assert "init_rpc" in app.panels["RPC"].status.value and "init_rpc" not in app.status.value


def test_every_tab_has_a_static_html_form_with_its_tables_and_figures() -> None:
    app = inspector.show()
    for title in app.tab.titles:
        app.open(title)
    torch = __import__("torch")  # two dtypes whose winners differ: a grid whose cells all agree is one line
    app.panels["Dispatch"].draw_what_if(dtype=[torch.float32, torch.float64], has_mask=[False, True])
    for title, panel in app.panels.items():
        bundle = panel._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle, title
        if title == "Loader":  # before its first run the loader tab says how to get results
            assert "No benchmark has run" in bundle["text/html"]
        else:
            assert "<table" in bundle["text/html"], title
    assert "data:image/png;base64," in app.panels["Dispatch"].static_html()  # the what-if grid
    assert "data:image/png;base64," in app.panels["RPC"].static_html()  # the device-map graph
    page = app._repr_mimebundle_()["text/html"]
    assert all(f"<h3>{title}</h3>" in page for title in app.tab.titles)
