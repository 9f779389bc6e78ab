"""The engine stays importable without Jupyter: no widgets, pandas or matplotlib in engine imports."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

ENGINE_PARTS = ["inspector", "inspector.dispatch", "inspector.backends", "inspector.loader", "inspector.rpc"]
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
