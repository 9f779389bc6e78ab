"""The engine stays importable without Jupyter: no widgets, pandas or matplotlib in engine imports."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.parts import PARTS

ENGINE_PARTS = ["inspector", *(p.engine for p in PARTS)]
UI_MODULES = ["ipywidgets", "pandas", "matplotlib", "IPython"]


def _present(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("part", [p for p in ENGINE_PARTS if _present(p)])
def test_engine_part_imports_no_ui_library(part: str) -> None:
    code = f"import json, sys; import {part}; print(json.dumps([m for m in {UI_MODULES!r} if m in sys.modules]))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == []


def test_views_import_no_widgets() -> None:
    code = (
        "import json, sys, importlib, pkgutil, inspector.views as v; "
        "[importlib.import_module('inspector.views.' + m.name) for m in pkgutil.iter_modules(v.__path__)]; "
        "print(json.dumps('ipywidgets' in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) is False


# -- the import rules, read from the source (lazy imports inside functions included) ----------
PACKAGE = Path(__file__).resolve().parents[1] / "inspector"
ENGINE = {p.name: p.engine for p in PARTS}
UPPER_FLOORS = ("inspector.views", "inspector.panels", "inspector.report", "inspector.cli", "inspector.examples")
UI_LIBRARIES = ("ipywidgets", "pandas", "matplotlib", "IPython", "jinja2")
# A ``to_frame()`` method converts an engine record for pandas users: pandas there is the point.
PANDAS_ON_REQUEST = "to_frame"


def _imports(path: Path) -> list[tuple[str, str]]:
    """(imported module, enclosing function or '') for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Import):
                found.extend((alias.name, function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parents = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parents, base]).strip(".")
                found.append((base, function))
            visit(child, name)

    visit(tree, "")
    return found


def _modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("part", sorted(ENGINE))
def test_an_engine_part_imports_no_upper_floor_no_ui_library_and_no_other_part(part: str) -> None:
    others = [engine for name, engine in ENGINE.items() if name != part]
    broken = []
    for path in _modules(part):
        for module, function in _imports(path):
            if any(_within(module, floor) for floor in (*UPPER_FLOORS, *others)):
                broken.append(f"{path.relative_to(PACKAGE)} imports {module}")
            elif any(_within(module, lib) for lib in UI_LIBRARIES) and not (
                module == "pandas" and function == PANDAS_ON_REQUEST
            ):
                broken.append(f"{path.relative_to(PACKAGE)} imports {module} (in {function or 'the module'})")
    assert broken == []


def test_views_never_import_panels_or_widgets() -> None:
    broken = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in _modules("views")
        for module, _ in _imports(path)
        if _within(module, "inspector.panels") or _within(module, "ipywidgets")
    ]
    assert broken == []


def test_only_the_demo_policy_loads_the_demos() -> None:
    """Panels, the app and the command line ask ``inspector.demos``; nothing else imports the demos."""
    broken = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "examples" not in path.relative_to(PACKAGE).parts and path.name != "demos.py"
        for module, _ in _imports(path)
        if _within(module, "inspector.examples")
    ]
    assert broken == []


def test_parts_lists_every_engine_part_and_imports_nothing() -> None:
    engine_folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert set(ENGINE) == engine_folders - {"views", "panels", "cli", "examples"}
    assert [m for m, _ in _imports(PACKAGE / "parts.py") if m != "__future__" and m != "dataclasses"] == []


# -- shared modules and import circles ---------------------------------------------------------
# The root modules above the engine: they may import engine parts (the report reads every page,
# the demo policy every registry). Every other root module is shared: engine parts import it.
ROOT_UPPER_FLOORS = {"__init__", "__main__", "report", "demos"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _runtime_imports(path: Path) -> set[str]:
    """The inspector modules ``path`` imports when it runs (lazily too), not those under ``TYPE_CHECKING``.

    ``from package import name`` is an import of ``package.name`` when that is a module, else of ``package``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parents = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parents, base]).strip(".")
                modules = [f"{base}.{alias.name}" for alias in child.names if f"{base}.{alias.name}" in MODULES]
                found.update(modules)
                if len(modules) < len(child.names):
                    found.add(base)
            visit(child)

    visit(tree)
    return {module for module in found if module in MODULES and module != name}


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(frozenset(group))
    return found


def test_shared_modules_import_no_engine_part_and_no_upper_floor() -> None:
    shared = [path for path in PACKAGE.glob("*.py") if path.stem not in ROOT_UPPER_FLOORS]
    assert {p.stem for p in shared} >= {"errors", "_messages", "_entry_points", "_isolation", "_free_names"}
    forbidden = (*ENGINE.values(), *UPPER_FLOORS, "inspector.demos")
    broken = [
        f"{path.name} imports {module}"
        for path in shared
        for module, _ in _imports(path)
        if any(_within(module, floor) for floor in forbidden)
    ]
    assert broken == []


def test_no_two_modules_import_each_other_however_indirectly() -> None:
    """Each part reads bottom-up: no circle of imports (lazy ones included; type-only ones under
    ``TYPE_CHECKING`` are not imports at run time)."""
    graph = {name: _runtime_imports(path) for name, path in MODULES.items()}
    circles = [sorted(group) for group in _circles(graph)]
    assert circles == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [frozenset({"a", "b", "c"})]
