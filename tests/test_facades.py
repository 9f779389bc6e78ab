"""Every public package has one facade: a sorted ``__all__`` whose names all resolve."""

from __future__ import annotations

import importlib

import pytest

from inspector.parts import PARTS

# The root, every engine part (from ``inspector.parts``) and the upper floors' packages.
FACADES = ["inspector", *(part.engine for part in PARTS), "inspector.examples", "inspector.views", "inspector.panels"]


@pytest.mark.parametrize("name", FACADES)
def test_facade_all_is_sorted_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__), f"{name}.__all__ is not in sorted() order"
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


@pytest.mark.parametrize("engine", [part.engine for part in PARTS])
def test_every_error_a_part_exports_is_under_one_root_under_inspector_error(engine: str) -> None:
    import inspect

    from inspector.errors import InspectorError

    module = importlib.import_module(engine)
    errors = [getattr(module, n) for n in module.__all__
              if inspect.isclass(getattr(module, n)) and issubclass(getattr(module, n), BaseException)]
    roots = [error for error in errors if InspectorError in error.__bases__]
    assert len(roots) == 1, f"{engine} exports {len(roots)} roots: {roots}"
    assert [e.__name__ for e in errors if not issubclass(e, roots[0])] == []
