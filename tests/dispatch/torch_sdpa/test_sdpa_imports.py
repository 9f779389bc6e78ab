"""The ``torch_sdpa`` modules read bottom-up: no two of them import each other, lazily or not."""

from __future__ import annotations

import ast
from pathlib import Path

import inspector.dispatch.torch_sdpa as package

PACKAGE = "inspector.dispatch.torch_sdpa"
ROOT = Path(package.__file__).parent


def _imports(path: Path) -> set[str]:
    """The package's modules that ``path`` imports anywhere (inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(PACKAGE + "."):
                found.add(node.module.removeprefix(PACKAGE + "."))
            elif node.module == PACKAGE:
                found.update(alias.name for alias in node.names if (ROOT / f"{alias.name}.py").exists())
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix(PACKAGE + ".") for a in node.names if a.name.startswith(PACKAGE + "."))
    return found


def test_no_import_circle_between_torch_sdpa_modules() -> None:
    graph = {p.stem: _imports(p) - {p.stem} for p in ROOT.glob("*.py") if p.stem != "__init__"}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in graph.get(start, ())
        )

    circles = sorted(f"{a} <-> {b}" for a in graph for b in graph[a] if reaches(b, a, {b}))
    assert circles == []
