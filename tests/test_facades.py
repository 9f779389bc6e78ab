"""Every public package has one facade: a sorted ``__all__`` whose names all resolve, listing every
public name an eager facade defines, and errors under one root per part, each also a builtin."""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType

import pytest

from inspector.parts import PARTS

# The root, every engine part (from ``inspector.parts``) and the upper floors' packages.
FACADES = ["inspector", *(part.engine for part in PARTS), "inspector.examples", "inspector.views", "inspector.panels"]


@pytest.mark.parametrize("name", FACADES)
def test_facade_all_is_sorted_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__), f"{name}.__all__ is not in sorted() order"
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


@pytest.mark.parametrize("name", FACADES)
def test_an_eager_facade_lists_every_public_name_it_defines_once(name: str) -> None:
    module = importlib.import_module(name)
    assert len(module.__all__) == len(set(module.__all__))
    if hasattr(module, "__getattr__"):  # a lazy facade: its names resolve on first use (checked above)
        return
    public = {
        n
        for n, value in vars(module).items()
        if not n.startswith("_") and n != "annotations" and not isinstance(value, ModuleType)
    }
    assert sorted(public - set(module.__all__)) == []


@pytest.mark.parametrize("engine", [part.engine for part in PARTS])
def test_every_error_a_part_exports_is_under_one_root_under_inspector_error(engine: str) -> None:
    from inspector.errors import InspectorError

    module = importlib.import_module(engine)
    errors = [
        getattr(module, n)
        for n in module.__all__
        if inspect.isclass(getattr(module, n)) and issubclass(getattr(module, n), BaseException)
    ]
    roots = [error for error in errors if InspectorError in error.__bases__]
    assert len(roots) == 1, f"{engine} exports {len(roots)} roots: {roots}"
    assert [e.__name__ for e in errors if not issubclass(e, roots[0])] == []


@pytest.mark.parametrize("engine", [part.engine for part in PARTS])
def test_every_error_below_a_root_is_also_the_builtin_it_would_otherwise_be(engine: str) -> None:
    from inspector.errors import InspectorError

    module = importlib.import_module(engine)
    errors = [
        getattr(module, n)
        for n in module.__all__
        if inspect.isclass(getattr(module, n)) and issubclass(getattr(module, n), BaseException)
    ]
    below = [error for error in errors if InspectorError not in error.__bases__]

    def builtin(error: type) -> bool:
        return any(
            base.__module__ == "builtins" and base not in (Exception, BaseException, object) for base in error.__mro__
        )

    assert [error.__name__ for error in below if not builtin(error)] == []
