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
