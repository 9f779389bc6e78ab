"""parts.py names every part's pieces, and each exists: engine, views (state and page), panel, bench, notebook."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from inspector.parts import PARTS, names, part

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.mark.parametrize("entry", PARTS, ids=names())
def test_every_named_piece_exists(entry) -> None:  # type: ignore[no-untyped-def]
    importlib.import_module(entry.engine)
    views = importlib.import_module(entry.views)
    assert callable(views.page) and callable(views.current_state)
    panel = getattr(importlib.import_module(entry.panel_module), entry.panel_class)
    assert "state" in vars(panel), f"{entry.panel_class} must expose state()"
    module, _, function = entry.bench.partition(":")
    measure = getattr(importlib.import_module(module), function)
    assert "progress" in inspect.signature(measure).parameters
    assert (NOTEBOOKS / entry.notebook).is_file()


@pytest.mark.parametrize("entry", PARTS, ids=names())
def test_every_page_renders_from_the_current_state(entry) -> None:  # type: ignore[no-untyped-def]
    import inspector.examples  # noqa: F401  (something to show in every part)

    views = importlib.import_module(entry.views)
    page = views.page(views.current_state())
    html = page.to_html()
    assert html.startswith("<section><h2>") and page.sections


def test_unknown_part_lists_the_parts() -> None:
    with pytest.raises(KeyError, match="Parts: "):
        part("loaders")
