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
    code = (
        f"import json, sys; import {part}; "
        f"print(json.dumps([m for m in {UI_MODULES!r} if m in sys.modules]))"
    )
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
    broken = [f"{path.relative_to(PACKAGE)} imports {module}" for path in _modules("views")
              for module, _ in _imports(path) if _within(module, "inspector.panels") or _within(module, "ipywidgets")]
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
