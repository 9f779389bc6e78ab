"""An exercise asks for what its solution does: a name the exercise calls (``panel.context()``) is called in
the solution, not read as a property there, and a name it reads (``panel.plan``) is not called there.

Each exercise's inline code (`...`) is parsed as Python, and so is its solution; every attribute or name
both use must be used the same way, called or read. (``panel.context`` is a property: an exercise that
asks for ``panel.context()`` sends the learner into a ``TypeError``.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
INLINE_CODE = re.compile(r"`([^`\n]+)`")


def uses(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Dotted names a piece of code calls, and dotted names it reads without calling (``a.b``, ``b``)."""
    called: set[str] = set()
    read: set[str] = set()
    callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            (called if id(node) in callees else read).add(node.attr)
    return called, read


def exercise_code(text: str) -> list[ast.AST]:
    """The exercise's inline code that parses as Python (shell commands and prose in backticks do not)."""
    found = []
    for snippet in INLINE_CODE.findall(text):
        try:
            found.append(ast.parse(snippet.strip(), mode="eval"))
        except SyntaxError:
            continue
    return found


def exercises(path: Path) -> list[tuple[str, str]]:
    """(exercise text, solution source) of every ``**Exercise.**`` cell followed by its solution cell."""
    cells = nbformat.read(path, as_version=4).cells
    return [
        (cell.source, cells[i + 1].source)
        for i, cell in enumerate(cells[:-1])
        if cell.cell_type == "markdown"
        and cell.source.startswith("**Exercise.**")
        and cells[i + 1].cell_type == "code"
        and cells[i + 1].source.startswith("# Solution")
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_exercise_calls_what_its_solution_calls(path: Path) -> None:
    found = exercises(path)
    assert found, path.name
    mismatches = []
    for text, solution in found:
        solution_calls, solution_reads = uses(ast.parse(solution))
        for snippet in exercise_code(text):
            asked_calls, asked_reads = uses(snippet)
            for name in sorted(asked_calls & (solution_reads - solution_calls)):
                mismatches.append(f"the exercise calls {name}() but the solution reads .{name}: {text[:80]!r}")
            for name in sorted(asked_reads & (solution_calls - solution_reads)):
                mismatches.append(f"the exercise reads .{name} but the solution calls {name}(): {text[:80]!r}")
    assert mismatches == [], path.name


def test_the_check_catches_a_property_asked_for_as_a_call() -> None:
    called, _read = uses(exercise_code("take the panel's context (`panel.context()`)")[0])
    solution_calls, solution_reads = uses(ast.parse("trace('a', panel.context.evolve(dtype=1))"))
    assert "context" in called & solution_reads and "context" not in solution_calls
